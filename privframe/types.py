"""Array aliases and the public-bounds value objects."""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import attrs
import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError, DataError

__all__ = ["Array", "Bounds", "BoundsLike", "IndexMatrix", "L2Ball", "as_bounds"]

Array: TypeAlias = npt.NDArray[np.float64]
"""A float64 array (data, statistic values)."""

IndexMatrix: TypeAlias = npt.NDArray[np.intp]
"""A ``(B, m)`` integer matrix: row i holds the indices of resample i."""


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ConfigError(f"bounds.{attribute.name}: must be finite (bounds are public inputs)")


def _to_float(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError("bounds: expected numbers") from None


@attrs.frozen
class Bounds:
    """Public bounds ``[low, high]`` for scalar data; values outside are clipped to them.

    Bounds are public inputs chosen without looking at the data; they are never computed from it.
    """

    low: float = attrs.field(converter=_to_float, validator=_finite)
    high: float = attrs.field(converter=_to_float, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("bounds: need low < high")

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def clip(self, x: Array) -> Array:
        """Clip one-dimensional data to ``[low, high]``."""
        if x.ndim != 1:
            raise DataError("x: scalar bounds need one-dimensional data (use pf.L2Ball for vectors)")
        return np.clip(x, self.low, self.high)


@attrs.frozen
class L2Ball:
    """Public bound for vector data: rows have Euclidean norm at most ``radius`` (longer rows are scaled onto it)."""

    radius: float = attrs.field(converter=_to_float, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.radius > 0:
            raise ConfigError("bounds.radius: must be > 0")

    def clip(self, x: Array) -> Array:
        """Project each row of two-dimensional data onto the ball."""
        if x.ndim != 2:
            raise DataError("x: an L2Ball bound needs two-dimensional data (n, d)")
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        # rows inside the ball keep scale 1 (no division: a zero row used to overflow radius / tiny)
        scale = np.divide(self.radius, norms, out=np.ones_like(norms), where=norms > self.radius)
        projected: Array = x * scale
        return projected


BoundsLike: TypeAlias = "Bounds | L2Ball"


def as_bounds(bounds: object) -> Bounds | L2Ball | None:
    """Normalise the ``bounds`` argument: ``None``, a ``(low, high)`` pair, ``Bounds``, ``L2Ball``, or a
    positive number R meaning ``L2Ball(R)`` (a norm bound, e.g. for the features of ``logistic-slope``)."""
    if bounds is None or isinstance(bounds, (Bounds, L2Ball)):
        return bounds
    if isinstance(bounds, (int, float, np.floating, np.integer)) and not isinstance(bounds, bool):
        return L2Ball(float(bounds))
    if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        return Bounds(bounds[0], bounds[1])
    if isinstance(bounds, dict):
        if set(bounds) == {"low", "high"}:
            return Bounds(bounds["low"], bounds["high"])
        if set(bounds) == {"radius"}:
            return L2Ball(bounds["radius"])
    raise ConfigError("bounds: expected (low, high), pf.Bounds(low, high) or pf.L2Ball(radius)")
