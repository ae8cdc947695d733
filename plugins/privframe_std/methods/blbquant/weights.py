"""The little bootstraps' weights: exact ``Multinomial(total; 1/k, ..., 1/k)`` count vectors at a cost of order k.

Method (exact, not an approximation): draw i.i.d. Poisson(lam) counts with ``lam k = total - sqrt(total)``
(one standard deviation below the total). Given their sum ``T = t``, the counts are ``Multinomial(t;
uniform)``, so for ``t <= total`` adding ``total - t`` further uniform draws gives ``Multinomial(total;
uniform)`` whatever t is. A row with ``T > total`` (about 16%) is redrawn until ``T <= total``: the accepted
row is still ``Multinomial(t; uniform)`` given its sum, so the law is unchanged. Aiming one standard
deviation below the total, not three, cuts the uniform fill (the costly part: about ``1.3 sqrt(total)``
draws a row instead of ``3 sqrt(total)``) more than the redraws cost.

Poisson variates come from the inversion table of :mod:`privframe_std.samplers.bootstrap` (16-bit uniforms,
rare refinement). Rows are produced in chunks of about 2^20 cells, so the scratch memory stays small.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError
from privframe_std.samplers.bootstrap import _poisson_block as poisson_counts  # the one Poisson table

__all__ = ["multinomial_weights"]

_SLACK_SD = 1.0
"""The Poisson stage aims this many standard deviations below the total."""

_CHUNK_CELLS = 2**20


def multinomial_weights(rng: np.random.Generator, rows: int, k: int, total: int) -> npt.NDArray[np.float64]:
    """``(rows, k)`` float64 counts, each row an independent ``Multinomial(total; 1/k, ..., 1/k)`` vector.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    rows, k, total : int
        Number of count vectors, categories, and draws per vector.

    Returns
    -------
    ndarray, shape (rows, k)
        The counts, as float64 (they weight values directly).
    """
    if rows < 0 or k < 1 or total < 0:
        raise ConfigError("need rows >= 0, k >= 1 and total >= 0", path="rows")
    out = np.empty((rows, k), dtype=np.float64)
    step = max(1, _CHUNK_CELLS // k)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        out[start:stop] = _chunk(rng, stop - start, k, total)
    return out


def _chunk(rng: np.random.Generator, rows: int, k: int, total: int) -> npt.NDArray[np.float64]:
    lam = (total - _SLACK_SD * math.sqrt(total)) / k
    if lam < 1.0:
        counts = np.zeros((rows, k), dtype=np.float64)
        filled = np.zeros(rows, dtype=np.int64)
    else:
        counts = poisson_counts(rng, rows, k, lam)
        filled = counts.sum(axis=1).astype(np.int64)
        over = np.flatnonzero(filled > total)
        while over.size:  # redraw over-full rows (rejection: the accepted law given T is unchanged)
            counts[over] = poisson_counts(rng, over.size, k, lam)
            filled[over] = counts[over].sum(axis=1).astype(np.int64)
            over = over[filled[over] > total]
    _fill(rng, counts, total - filled)
    return counts


def _fill(rng: np.random.Generator, counts: npt.NDArray[np.float64], missing: npt.NDArray[np.int64]) -> None:
    """Add ``missing[r]`` uniform draws over the k cells of row r, in place."""
    extra = int(missing.sum())
    if not extra:
        return
    rows, k = counts.shape
    index_type = np.int32 if rows * k < 2**31 else np.int64
    cells = np.repeat(np.arange(0, rows * k, k, dtype=index_type), missing)
    cells += rng.integers(0, k, size=extra, dtype=index_type)
    counts += np.bincount(cells, minlength=rows * k).reshape(rows, k)
