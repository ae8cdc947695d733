"""BLBQuant's little bootstraps: roots ``tau_n (theta(block_j) - theta_tilde(resample_{j,r}))`` (algorithms.md 5).

Each block j holds b records. Its R little-bootstrap resamples have n records drawn with replacement from
the block, represented by multinomial weights ``W_{j,r} ~ Multinomial(n; 1/b, ..., 1/b)`` (never as n
records), and the private estimator runs on each weighted resample. The cost is of order ``R b`` per
block, ``R n`` in all:

- mean with an additive mechanism: ``theta(resample) = (W @ x_block) / n``, plus the mechanism's noise at
  the sensitivity of a size-n mean (the noise of the private estimator is simulated, not released);
- quantile (median) with the exponential mechanism: pieces between consecutive sorted block values, rank
  counts from the cumulative weights, one piece drawn per replicate by inverse CDF, then a uniform point;
- quantile with an additive mechanism: the weighted order statistic of rank ``rank(n)`` plus noise.

Randomness: every block has its own generator (weights, estimator noise), so a block's roots depend on its
own records only. With ``shared=True`` all blocks use the same weight matrix (drawn once from a separate
stream, independent of the data); each block's replicates are still i.i.d. with the exact law, but the
Monte Carlo errors of different blocks are correlated. Work is done in chunks of replicates so memory
stays bounded.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import attrs
import numpy as np
import numpy.typing as npt

import privframe as pf
from privframe.errors import ConfigError
from privframe_std.samplers.bootstrap import multinomial_counts

__all__ = ["LittleBootstraps", "block_roots", "weighted_quantile_log_weights"]

FloatArray = npt.NDArray[np.float64]

_CHUNK_CELLS = 2**22
"""Weight-matrix cells (8 bytes each) processed at once."""


@attrs.frozen
class LittleBootstraps:
    """What the little bootstraps need to know about the private estimator.

    ``kind`` is ``"mean"``, ``"quantile-selection"`` (exponential mechanism) or ``"quantile-additive"``;
    ``mechanism`` and ``event`` give the estimator's noise (the event of one call on n records); ``q`` and
    ``rank`` describe a quantile; ``low``/``high`` are the public data bounds.
    """

    kind: str
    n: int
    R: int
    tau_n: float
    mechanism: object
    event: pf.PrivacyEvent
    low: float
    high: float
    q: float = 0.5
    rank: int = 1


def _row_chunks(rows: int, width: int) -> Iterator[tuple[int, int]]:
    step = max(1, _CHUNK_CELLS // max(1, width))
    for start in range(0, rows, step):
        yield start, min(rows, start + step)


def _additive_noise(spec: LittleBootstraps, shape: tuple[int, ...], rng: np.random.Generator) -> FloatArray:
    mechanism = spec.mechanism
    assert isinstance(mechanism, pf.Mechanism)
    noise: FloatArray = np.asarray(mechanism.apply(np.zeros(shape), spec.event, rng), dtype=np.float64)
    return noise


def weighted_quantile_log_weights(
    values: FloatArray, cumulative: FloatArray, q: float, epsilon: float, low: float, high: float
) -> tuple[FloatArray, FloatArray]:
    """The exponential mechanism's pieces on weighted resamples of one block (cf. ``quantile_log_weights``).

    ``values`` are the block's b sorted values; ``cumulative[r, i]`` is the number of records of resample r
    at or below ``values[i]`` (its total is the resample size k). Piece i is ``[edge_i, edge_{i+1}]`` with
    edges ``low, values..., high``; ``cumulative[r, i - 1]`` records lie below it (0 for piece 0), so its
    log-weight is ``log(length_i) - eps |below - q k| / 2``. A value absent from a resample only splits a
    piece into two of equal utility, so this is the mechanism on the resample's multiset. Returns the
    edges ``(b + 2,)`` and log-weights ``(R, b + 1)``.
    """
    edges = np.concatenate([[low], np.clip(values, low, high), [high]])
    lengths = np.diff(edges)
    total = cumulative[:, -1:]
    below = np.concatenate([np.zeros((cumulative.shape[0], 1)), cumulative], axis=1)
    with np.errstate(divide="ignore"):
        log_weight = np.log(lengths)[np.newaxis, :] - (epsilon / 2.0) * np.abs(below - q * total)
    return edges, log_weight


def _quantile_estimates(
    spec: LittleBootstraps, values: FloatArray, weights: FloatArray, rng: np.random.Generator
) -> FloatArray:
    """Private quantile of each weighted resample; ``values`` sorted ascending, ``weights`` in that order."""
    cumulative = np.cumsum(weights, axis=1)  # C_i = records <= v_i
    if spec.kind == "quantile-additive":
        position = np.count_nonzero(cumulative < spec.rank, axis=1)
        raw: FloatArray = values[np.minimum(position, values.size - 1)]
        noisy: FloatArray = raw + _additive_noise(spec, raw.shape, rng)
        return noisy
    epsilon = spec.event.budget.epsilon if isinstance(spec.event.budget, pf.PureDP) else math.nan
    edges, log_weight = weighted_quantile_log_weights(values, cumulative, spec.q, epsilon, spec.low, spec.high)
    lengths = np.diff(edges)
    top = np.max(log_weight, axis=1, keepdims=True)
    mass = np.cumsum(np.exp(log_weight - top), axis=1)
    pick = rng.random(weights.shape[0]) * mass[:, -1]
    piece = np.minimum(np.count_nonzero(mass <= pick[:, np.newaxis], axis=1), lengths.size - 1)
    result: FloatArray = edges[piece] + lengths[piece] * rng.random(weights.shape[0])
    return result


def block_roots(
    spec: LittleBootstraps,
    blocks: FloatArray,
    block_values: FloatArray,
    block_rngs: list[np.random.Generator],
    shared_rng: np.random.Generator | None,
) -> FloatArray:
    """Roots ``(s, R)``: row j holds ``tau_n (theta(block_j) - theta_tilde)`` over block j's R resamples.

    ``blocks`` is the ``(s, b)`` matrix of the blocks' record values and ``block_values`` the statistic on
    each block. ``shared_rng`` set: one weight matrix for all blocks (see the module docstring).
    """
    s, b = blocks.shape
    if spec.kind not in ("mean", "quantile-selection", "quantile-additive"):
        raise ConfigError("statistic: blbquant supports the mean and quantiles (median)")
    roots = np.empty((s, spec.R), dtype=np.float64)
    order = np.argsort(blocks, axis=1, kind="stable")
    sorted_blocks = np.take_along_axis(blocks, order, axis=1)
    centred = blocks - block_values[:, np.newaxis]
    for start, stop in _row_chunks(spec.R, b):
        rows = stop - start
        shared = None if shared_rng is None else multinomial_counts(shared_rng, rows, b, spec.n)
        if spec.kind == "mean" and shared is not None:
            # theta_j - W x_j / n = -W (x_j - theta_j) / n, all blocks in one matrix product.
            sums = shared @ centred.T  # (rows, s)
            for j in range(s):
                noise = _additive_noise(spec, (rows,), block_rngs[j])
                roots[j, start:stop] = spec.tau_n * (-sums[:, j] / spec.n - noise)
            continue
        for j in range(s):
            weights = shared if shared is not None else multinomial_counts(block_rngs[j], rows, b, spec.n)
            if spec.kind == "mean":
                noise = _additive_noise(spec, (rows,), block_rngs[j])
                roots[j, start:stop] = spec.tau_n * (-(weights @ centred[j]) / spec.n - noise)
            else:
                estimates = _quantile_estimates(spec, sorted_blocks[j], weights[:, order[j]], block_rngs[j])
                roots[j, start:stop] = spec.tau_n * (block_values[j] - estimates)
    return roots
