"""Calling a plugin safely: the guard around every call, finite values, prepared data, sensitivities.

The run context (:mod:`privframe.plugin.context`) calls the statistic itself; these are the helpers it and the
private estimators share. Every call into a plugin is guarded: an unexpected exception becomes a
``PluginError`` without its message, which may quote data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import numpy as np

from privframe._typing import Array, IndexMatrix
from privframe.bounds import Bounds, L2Ball
from privframe.errors import ConfigError, PluginError, PrivframeError
from privframe.plugin.protocols import PreparingStatistic, ShapedStatistic, Statistic
from privframe.plugin.traits import traits_of
from privframe.resampling.blocks import Resamples

__all__ = [
    "Coordinates",
    "Preparation",
    "check_data_shape",
    "coordinates",
    "finite",
    "check_sensitivities",
    "global_sensitivity",
    "guarded",
    "order_statistic_index",
    "prepare_data",
    "row_slices",
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


@attrs.frozen
class Coordinates:
    """Where a statistic is computed: on the data shifted by a public ``offset``, within ``bounds``.

    ``offset`` is the public lower bound for a translation-equivariant statistic on scalar bounds (and the
    method allows it), else 0; ``bounds`` are the public bounds in those coordinates (``(0, high - low)``).
    Released values are mapped back by adding ``offset`` (post-processing).
    """

    offset: float
    bounds: Bounds | L2Ball | None


def coordinates(statistic: Statistic, bounds: Bounds | L2Ball | None, *, shift: bool) -> Coordinates:
    """The coordinates ``statistic`` is computed in under ``bounds`` (see :class:`Coordinates`)."""
    if shift and isinstance(bounds, Bounds) and traits_of(statistic).equivariant and bounds.low != 0.0:
        # fl(high - low) > 0 for low < high (Sterbenz or no underflow to 0): valid shifted bounds.
        return Coordinates(bounds.low, Bounds(0.0, bounds.high - bounds.low))
    return Coordinates(0.0, bounds)


@attrs.frozen
class Preparation:
    """How raw records become the data a statistic is computed on (picklable: workers of a cluster use it)."""

    statistic: Statistic
    coordinates: Coordinates

    def __call__(self, x: Array) -> Array:
        """The prepared records (shifted, clipped, and whatever the statistic's ``prepare`` does)."""
        return prepare_data(self.statistic, x, self.coordinates.bounds, self.coordinates.offset)


def prepare_data(statistic: Statistic, x: Array, bounds: Bounds | L2Ball | None, offset: float = 0.0) -> Array:
    """Data the statistic is computed on: shifted by ``offset`` (public), then its own ``prepare`` if defined,
    else clipped to ``bounds`` (the bounds in the shifted coordinates).

    Clipping is documented behaviour (``docs/algorithms.md``: values outside public bounds are clipped before any
    statistic is computed); how many values were clipped is data-dependent and is never reported. The shift
    ``fl(x - offset)`` is monotone, so clipping after it equals clipping before it.
    """
    if bounds is None and traits_of(statistic).requires_bounds:
        raise ConfigError(f"statistic '{statistic.name}' needs public bounds", path="bounds")
    if offset:
        x = x - offset
    if isinstance(statistic, PreparingStatistic):
        with guarded("statistic", statistic.name, "prepare"):
            return statistic.prepare(x, bounds)
    if bounds is None:
        return x
    return bounds.clip(x)


def check_data_shape(statistic: Statistic, shape: tuple[int, ...], bounds: Bounds | L2Ball | None) -> None:
    """Refuse data of a shape the statistic cannot take, from the shape and the bounds alone (both public).

    What :func:`prepare_data` would refuse for the shape: the statistic's own ``check_shape``
    (:class:`~privframe.plugin.ShapedStatistic`), or, for a statistic that clips to its bounds by default, the
    bounds' shape. A statistic with its own ``prepare`` and no ``check_shape`` is checked when it prepares.
    """
    if bounds is None and traits_of(statistic).requires_bounds:
        raise ConfigError(f"statistic '{statistic.name}' needs public bounds", path="bounds")
    if isinstance(statistic, ShapedStatistic):
        with guarded("statistic", statistic.name, "check_shape"):
            statistic.check_shape(shape, bounds)
    elif bounds is not None and not isinstance(statistic, PreparingStatistic):
        bounds.check_shape(shape)


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


def row_slices(resamples: Resamples, x: Array, index: IndexMatrix) -> list[IndexMatrix]:
    """The block itself, or row slices of it when one block's gathered values would exceed the memory budget
    (long rows of wide data); ``workers`` blocks are in flight together."""
    per_slice = max(1, resamples.memory_budget // (_bytes_per_row(x, resamples.m) * max(1, resamples.workers)))
    if index.shape[0] <= per_slice:
        return [index]
    return [index[i : i + per_slice] for i in range(0, index.shape[0], per_slice)]


def order_statistic_index(confidence: float, count: int) -> int:
    """Zero-based index of the ``ceil(confidence * count)``-th smallest value (numpy ``inverted_cdf``).

    The product is rounded to 9 decimals first so that 0.9 * 1000 is 900, not 900.0000000000001.
    """
    k = math.ceil(round(confidence * count, 9))
    return min(max(k, 1), count) - 1


def check_sensitivities(
    statistic: Statistic, bounds: Bounds | L2Ball | None, sizes: tuple[int, ...], *, needed_by: str, shift: bool
) -> None:
    """Refuse, from public inputs only, a statistic whose global sensitivity on any of ``sizes`` records is not
    finite in the coordinates a run computes it in (``shift``: the method's ``needs.shift``), as
    :func:`global_sensitivity` would when the run asks for it (a method's ``check_design`` calls this)."""
    shifted = coordinates(statistic, bounds, shift=shift).bounds
    for k in sizes:
        global_sensitivity(statistic, k, shifted, needed_by=needed_by)


def global_sensitivity(
    statistic: Statistic, k: int, bounds: Bounds | L2Ball | None, *, needed_by: str, path: str = "method"
) -> float:
    """The statistic's L2 global sensitivity on k records, or a ``ConfigError`` when it has none.

    ``needed_by`` names what needs it (``"cr-gs"``, ``"mechanism 'gaussian'"``) for the message.
    """
    with guarded("statistic", statistic.name, "sensitivity"):
        value = statistic.sensitivity(k, bounds)
    if value is None:
        raise ConfigError(
            f"{needed_by} needs a finite global sensitivity and statistic '{statistic.name}' has none", path=path
        )
    if not math.isfinite(value):  # bounds so wide that the sensitivity overflows (or a plugin's NaN)
        raise ConfigError(
            f"{needed_by} needs a finite global sensitivity; at these bounds that of statistic '{statistic.name}' "
            f"on {k} records is not a finite double: rescale the data and the bounds",
            path="bounds",
        )
    if value < 0:
        raise PluginError(f"'{statistic.name}'.sensitivity returned a negative value", path="statistic")
    return float(value)
