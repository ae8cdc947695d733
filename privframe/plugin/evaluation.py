"""Evaluating a statistic: on the full data, on every resample, with its smooth sensitivity.

The run context calls these instead of poking at optional statistic capabilities itself, so a minimal
third-party statistic (``name``, ``evaluate_batch``, ``sensitivity``) works everywhere. Every call into the
plugin is guarded: an unexpected exception becomes a ``PluginError`` without its message, which may quote
data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from privframe._typing import Array, IndexMatrix
from privframe.bounds import Bounds, L2Ball
from privframe.errors import ConfigError, DataError, PluginError, PrivframeError
from privframe.plugin.protocols import DirectStatistic, PreparingStatistic, RatedStatistic, SmoothStatistic, Statistic
from privframe.resampling.blocks import Resamples

__all__ = [
    "evaluate_full",
    "evaluate_resamples",
    "evaluate_resamples_smooth",
    "finite",
    "global_sensitivity",
    "guarded",
    "log_smooth_sensitivity",
    "order_statistic_index",
    "prepare_data",
    "rate",
    "requires_bounds",
]


@contextmanager
def guarded(part: str, name: str, what: str) -> Iterator[None]:
    """Re-raise a plugin's unexpected exception as ``PluginError`` without its message.

    A third-party statistic may fail with a message that quotes data values (``ValueError: bad value
    0.123``); privframe's errors never carry data, so only the exception type is reported. Errors that are
    already ``PrivframeError`` pass through, and so does ``MemoryError``. To debug the plugin, call it
    directly on non-sensitive data.
    """
    try:
        yield
    except (PrivframeError, MemoryError):
        raise
    except Exception as exc:
        raise PluginError(
            f"'{name}'.{what} raised {type(exc).__name__}; its message is withheld because it may contain data values",
            path=part,
        ) from None


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

    Clipping is documented behaviour (``docs/algorithms.md``: values outside public bounds are clipped before any
    statistic is computed); how many values were clipped is data-dependent and is never reported.
    """
    if bounds is None and requires_bounds(statistic):
        raise ConfigError(f"statistic '{statistic.name}' needs public bounds", path="bounds")
    if isinstance(statistic, PreparingStatistic):
        with guarded("statistic", statistic.name, "prepare"):
            return statistic.prepare(x, bounds)
    if bounds is None:
        return x
    return bounds.clip(x)


def evaluate_full(statistic: Statistic, x: Array) -> Array:
    """theta(D) as a ``(d,)`` vector."""
    if isinstance(statistic, DirectStatistic):
        with guarded("statistic", statistic.name, "evaluate"):
            value = np.asarray(statistic.evaluate(x), dtype=np.float64).reshape(-1)
    else:
        index = np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :]
        with guarded("statistic", statistic.name, "evaluate_batch"):
            value = np.asarray(statistic.evaluate_batch(x, index), dtype=np.float64).reshape(-1)
    return finite(value)


_DOUBLE_MAX = float(np.finfo(np.float64).max)


def finite(values: Array) -> Array:
    """Statistic values made finite: NaN becomes 0 and +-inf the largest double of its sign.

    A statistic must be finite on every dataset inside the bounds. One that is not (a third-party plugin's
    bug, an overflow) would otherwise fail on some data and release on their neighbours, and the failure
    itself would be a release; the replacement is data-independent, so it adds no channel. The standard
    statistics never need it.
    """
    if np.all(np.isfinite(values)):
        return values
    return np.nan_to_num(values, nan=0.0, posinf=_DOUBLE_MAX, neginf=-_DOUBLE_MAX)


def _bytes_per_row(x: Array, m: int) -> int:
    """Rough per-resample memory: the index row, the gathered values, and a temporary of the same size."""
    width = int(np.prod(x.shape[1:], dtype=np.int64)) if x.ndim > 1 else 1
    return 8 * m * (1 + 2 * width)


def _row_slices(resamples: Resamples, x: Array, index: IndexMatrix) -> list[IndexMatrix]:
    """The block itself, or row slices of it when one block's gathered values would exceed the memory budget
    (long rows of wide data); ``workers`` blocks are in flight together."""
    per_slice = max(1, resamples.memory_budget // (_bytes_per_row(x, resamples.m) * max(1, resamples.workers)))
    if index.shape[0] <= per_slice:
        return [index]
    return [index[i : i + per_slice] for i in range(0, index.shape[0], per_slice)]


def _checked(statistic: Statistic, values: object, rows: int, dimension: int) -> Array:
    out = np.asarray(values, dtype=np.float64)
    if out.shape != (rows, dimension):
        raise DataError(
            f"'{statistic.name}' returned shape {out.shape} on a resample, expected {(rows, dimension)}",
            path="statistic",
        )
    return out


def evaluate_resamples(statistic: Statistic, x: Array, resamples: Resamples, dimension: int) -> Array:
    """theta on every resample, ``(B, dimension)``, block by block within the memory budget (threads if asked).

    Statistics are computed row by row, so the result does not depend on how rows are grouped.
    """

    def rows(index: IndexMatrix) -> Array:
        with guarded("statistic", statistic.name, "evaluate_batch"):
            values = statistic.evaluate_batch(x, index)
        return _checked(statistic, values, index.shape[0], dimension)

    def chunk(block: IndexMatrix) -> Array:
        parts = [rows(index) for index in _row_slices(resamples, x, block)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    return finite(np.concatenate(resamples.map_blocks(chunk), axis=0))


def evaluate_resamples_smooth(
    statistic: Statistic,
    x: Array,
    resamples: Resamples,
    dimension: int,
    beta: float,
    bounds: Bounds | L2Ball | None,
) -> tuple[Array, Array]:
    """theta and ``ln SS_beta`` on every resample: ``(B, dimension)`` and ``(B,)``.

    Non-finite values are made finite as in :func:`finite`; a NaN ln SS becomes +inf (no bound), which a
    smooth-bound mechanism turns into an uninformative release.
    """
    smooth = _as_smooth(statistic)

    def rows(index: IndexMatrix) -> tuple[Array, Array]:
        with guarded("statistic", statistic.name, "evaluate_log_smooth_batch"):
            values, log_smooth = smooth.evaluate_log_smooth_batch(x, index, beta, bounds)
        return _checked(statistic, values, index.shape[0], dimension), np.asarray(log_smooth, dtype=np.float64)

    parts = [
        part
        for block in resamples.map_blocks(lambda b: [rows(i) for i in _row_slices(resamples, x, b)])
        for part in block
    ]
    values = np.concatenate([p[0] for p in parts], axis=0)
    log_smooth = np.concatenate([p[1] for p in parts], axis=0)
    if log_smooth.shape != (resamples.B,):
        raise DataError(f"'{statistic.name}' returned smooth sensitivities of the wrong shape", path="statistic")
    return finite(values), np.where(np.isnan(log_smooth), math.inf, log_smooth)


def log_smooth_sensitivity(statistic: Statistic, x: Array, beta: float, bounds: Bounds | L2Ball | None) -> float:
    """``ln SS_beta`` at the prepared full data (NaN becomes +inf: no bound, an uninformative release)."""
    smooth = _as_smooth(statistic)
    with guarded("statistic", statistic.name, "log_smooth_sensitivity"):
        value = float(smooth.log_smooth_sensitivity(x, beta, bounds))
    return math.inf if math.isnan(value) else value


def _as_smooth(statistic: Statistic) -> SmoothStatistic:
    if not isinstance(statistic, SmoothStatistic):
        raise ConfigError(
            f"'{statistic.name}' has no smooth sensitivity (methods that scale noise to a smooth bound cannot use it)",
            path="statistic",
        )
    return statistic


def order_statistic_index(confidence: float, count: int) -> int:
    """Zero-based index of the ``ceil(confidence * count)``-th smallest value (numpy ``inverted_cdf``).

    The product is rounded to 9 decimals first so that 0.9 * 1000 is 900, not 900.0000000000001.
    """
    k = math.ceil(round(confidence * count, 9))
    return min(max(k, 1), count) - 1


def global_sensitivity(
    statistic: Statistic, k: int, bounds: Bounds | L2Ball | None, *, needed_by: str, path: str = "method"
) -> float:
    """The statistic's L2 global sensitivity on k records, or a ``ConfigError`` when it has none.

    ``needed_by`` names what needs it (``"cr-gs"``, ``"mechanism 'gaussian'"``) for the message.
    """
    with guarded("statistic", statistic.name, "sensitivity"):
        value = statistic.sensitivity(k, bounds)
    if value is None or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{needed_by} needs a finite global sensitivity and statistic '{statistic.name}' has none", path=path
        )
    return float(value)
