"""BLBQuant's private interval search: block coverages of nested sets and AboveThreshold.

See ``docs/algorithms.md``, section 5.

Each block j gives a histogram of its little-bootstrap roots on a public grid. For a nested family of
candidate sets ``A_1 < A_2 < ...`` the block coverage ``c_j(A_k)`` is the histogram mass inside ``A_k``.
The search draws the threshold noise ``Z_g ~ Lap(2/eps)`` **once** and, for each k, ``Z_l ~ Lap(4/eps)``,
and stops at the first k with ``med_k = c_(floor(s/2 + Z_g + Z_l)) > 1 - alpha`` (sorted coverages; 0 below
index 1, 1 above s).

Why this is eps-DP: with ``M_k = #{j : c_j(A_k) <= 1 - alpha}``, ``med_k > 1 - alpha`` holds exactly when
``M_k + 1 - Z_l <= s/2 + Z_g`` (:func:`block_count` and the tests check the equivalence). ``M_k`` counts
blocks and one record lies in at most one block, so every query has sensitivity 1, and the search is the
AboveThreshold algorithm (Dwork and Roth, Algorithm 1) with threshold noise Lap(2/eps) and query noise
Lap(4/eps): eps-DP however many candidate sets are scanned.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError

__all__ = [
    "ExactLaplace",
    "LaplaceSource",
    "above_threshold",
    "block_count",
    "block_histograms",
    "nested_coverages",
]

FloatArray = npt.NDArray[np.float64]


class LaplaceSource(Protocol):
    """Where the search draws its noise (a ``numpy.random.Generator``, or a counting stub in tests)."""

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: int | None = None) -> object:
        """Laplace draws."""


class ExactLaplace:
    """Laplace noise for the search drawn exactly: ``g * DiscreteLaplace(t)`` on the power-of-two grid
    ``g = pp.noise.grid_for(scale)``, with ``t = ceil(scale / g)`` so that the scale is at least the one asked.

    The counts the search compares are integers, hence multiples of g, so the sparse-vector argument holds
    for the discrete law as for the continuous one (a shift by c changes the probability of any outcome by
    at most ``exp(c / (t g))``), and the noise is sampled in integer arithmetic from the Generator.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: int | None = None) -> object:
        """``size`` draws (one float when ``size`` is None) of exact discrete Laplace noise of at least ``scale``."""
        grid = pp.noise.grid_for(scale)
        t = math.ceil(scale / grid)
        draws = pp.noise.discrete_laplace(self._rng, t, 1 if size is None else size).astype(np.float64) * grid + loc
        return float(draws[0]) if size is None else draws


def block_histograms(roots: FloatArray, low: float, width: float, bins: int) -> FloatArray:
    """Per block, the fraction of its roots in each bin ``[low + i width, low + (i + 1) width)``.

    ``roots`` is ``(s, R)``; roots outside the grid fall in no bin. Returns ``(s, bins)``.
    """
    from privframe_std.methods.blbquant import _jit

    result: FloatArray = np.zeros((roots.shape[0], bins), dtype=np.float64)
    _jit.root_histograms(np.ascontiguousarray(roots, dtype=np.float64), float(low), float(width), result)
    return result


def nested_coverages(histograms: FloatArray, sets: str) -> FloatArray:
    """``c_j(A_k)`` for every candidate set k (rows) and block j (columns): ``(K, s)``.

    ``sets="symmetric"``: ``A_k`` is the central ``2k`` bins (k = 1..bins/2), widening one bin per side.
    ``sets="upper"``: ``A_k`` is everything below the upper edge of bin ``bins/2 + k - 1`` (one-sided, the
    upper end point of an equal-tailed interval); ``sets="lower"``: everything above the lower edge of bin
    ``bins/2 - k`` (k = 1..bins/2).
    """
    s, bins = histograms.shape
    if bins % 2:
        raise ConfigError("the grid needs an even number of bins", path="bins")
    kinds = {"symmetric": 0, "upper": 1, "lower": 2}
    if sets not in kinds:
        raise ConfigError("must be 'symmetric', 'upper' or 'lower'", path="sets")
    from privframe_std.methods.blbquant import _jit

    result: FloatArray = np.empty((bins // 2, s), dtype=np.float64)
    scratch = np.empty(bins + 1, dtype=np.float64)
    _jit.coverages_of(np.ascontiguousarray(histograms, dtype=np.float64), kinds[sets], scratch, result)
    return result


def block_count(coverages: FloatArray, threshold: float) -> npt.NDArray[np.int64]:
    """``M_k = #{j : c_j(A_k) <= threshold}``: the count query the search compares (sensitivity 1)."""
    counts: npt.NDArray[np.int64] = np.count_nonzero(coverages <= threshold, axis=1).astype(np.int64)
    return counts


def above_threshold(coverages: FloatArray, threshold: float, epsilon: float, noise: LaplaceSource) -> int | None:
    """Index k (0-based) of the first candidate set whose noisy median block coverage exceeds ``threshold``.

    Draws ``Lap(2 / epsilon)`` once for the threshold and ``Lap(4 / epsilon)`` for every candidate (all
    drawn up front; only those up to the stopping point influence the output). Returns None when no set
    passes (the caller then reports the whole grid).
    """
    candidates, s = coverages.shape
    z_g = float(np.asarray(noise.laplace(0.0, 2.0 / epsilon)))
    z_l = np.asarray(noise.laplace(0.0, 4.0 / epsilon, size=candidates), dtype=np.float64).reshape(candidates)
    position = np.floor(np.clip(s / 2 + z_g + z_l, -1.0, s + 1.0)).astype(np.int64)
    # The noisy median c_(position) (0 below index 1, 1 above s) exceeds the threshold exactly when fewer
    # than ``position`` blocks have coverage at or below it: a count, no sort.
    passing = np.flatnonzero(block_count(coverages, threshold) < position)
    return int(passing[0]) if passing.size else None
