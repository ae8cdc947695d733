"""Statistic helpers and the resampling engine shared by every method.

Methods call these instead of poking at optional statistic capabilities themselves, so a minimal
third-party statistic (``name``, ``evaluate_batch``, ``sensitivity``) works everywhere.
"""

from __future__ import annotations

import math

import numpy as np

from privframe.errors import ConfigError, DataError
from privframe.protocols import (
    DirectStatistic,
    PreparingStatistic,
    RatedStatistic,
    Resamples,
    Sampler,
    Statistic,
)
from privframe.types import Array, Bounds, L2Ball

__all__ = [
    "draw_resamples",
    "evaluate_full",
    "evaluate_resamples",
    "order_statistic_index",
    "prepare_data",
    "rate",
    "requires_bounds",
]


def rate(statistic: Statistic, k: int) -> float:
    """tau_k: the statistic's own ``rate`` if it has one, else ``sqrt(k)``."""
    if isinstance(statistic, RatedStatistic):
        return float(statistic.rate(k))
    return math.sqrt(k)


def requires_bounds(statistic: Statistic) -> bool:
    """Whether the statistic's sensitivity depends on public bounds (default True)."""
    return bool(getattr(statistic, "requires_bounds", True))


def prepare_data(statistic: Statistic, x: Array, bounds: Bounds | L2Ball | None) -> Array:
    """Data the statistic is computed on: its own ``prepare`` if defined, else clipped to the bounds.

    Clipping is documented behaviour (algorithms.md: values outside public bounds are clipped before any
    statistic is computed); how many values were clipped is data-dependent and is never reported.
    """
    if bounds is None and requires_bounds(statistic):
        raise ConfigError(f"bounds: statistic '{statistic.name}' needs public bounds")
    if isinstance(statistic, PreparingStatistic):
        return statistic.prepare(x, bounds)
    if bounds is None:
        return x
    return bounds.clip(x)


def evaluate_full(statistic: Statistic, x: Array) -> Array:
    """theta(D) as a ``(d,)`` vector."""
    if isinstance(statistic, DirectStatistic):
        value = np.asarray(statistic.evaluate(x), dtype=np.float64).reshape(-1)
    else:
        index = np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :]
        value = np.asarray(statistic.evaluate_batch(x, index), dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(value)):
        raise DataError(f"statistic: '{statistic.name}' returned a non-finite value")
    return value


def draw_resamples(sampler: Sampler, n: int, rng: np.random.Generator) -> Resamples:
    """``sampler.draw(n, rng)``, with option errors (``"m: ..."``) re-raised under the path ``sampler.m``."""
    try:
        return sampler.draw(n, rng)
    except ConfigError as exc:
        message = str(exc)
        head = message.split(":", 1)[0]
        if head.isidentifier():
            raise ConfigError(f"sampler.{message}") from exc
        raise


def _bytes_per_row(x: Array, m: int) -> int:
    """Rough per-resample memory: the index row, the gathered values, and a temporary of the same size."""
    width = int(np.prod(x.shape[1:], dtype=np.int64)) if x.ndim > 1 else 1
    return 8 * m * (1 + 2 * width)


def evaluate_resamples(statistic: Statistic, x: Array, resamples: Resamples, dimension: int) -> Array:
    """theta on every resample, ``(B, dimension)``, computed chunk by chunk under the memory budget."""
    out = np.empty((resamples.B, dimension), dtype=np.float64)
    row = 0
    for index in resamples.chunks(_bytes_per_row(x, resamples.m)):
        values = np.asarray(statistic.evaluate_batch(x, index), dtype=np.float64)
        if values.shape != (index.shape[0], dimension):
            raise DataError(
                f"statistic: '{statistic.name}'.evaluate_batch returned shape {values.shape}, "
                f"expected {(index.shape[0], dimension)}"
            )
        out[row : row + index.shape[0]] = values
        row += index.shape[0]
    if not np.all(np.isfinite(out)):
        raise DataError(f"statistic: '{statistic.name}' returned a non-finite value on a resample")
    return out


def order_statistic_index(confidence: float, count: int) -> int:
    """Zero-based index of the ``ceil(confidence * count)``-th smallest value (numpy ``inverted_cdf``).

    The product is rounded to 9 decimals first so that 0.9 * 1000 is 900, not 900.0000000000001.
    """
    k = math.ceil(round(confidence * count, 9))
    return min(max(k, 1), count) - 1
