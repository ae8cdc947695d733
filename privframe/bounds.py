"""Public bounds: the interval or L2 ball the data are clipped to, given by the user, never computed from data."""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import attrs
import numpy as np

from privframe._typing import Array
from privframe.errors import ConfigError, DataError

__all__ = ["Bounds", "BoundsLike", "L2Ball", "as_bounds", "euclidean_norm"]


def _finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ConfigError("must be finite (bounds are public inputs)", path=f"bounds.{attribute.name}")


def _to_float(value: Any) -> Any:
    # float() would also take "0.5", True and numpy datetimes: a bound must be a real number, as written.
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"expected real numbers, got {type(value).__name__}", path="bounds")
    return float(value)


@attrs.frozen
class Bounds:
    """Public bounds ``[low, high]`` for scalar data; values outside are clipped to them.

    Bounds are public inputs chosen without looking at the data; they are never computed from it.
    """

    low: float = attrs.field(converter=_to_float, validator=_finite)
    high: float = attrs.field(converter=_to_float, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.low < self.high:
            raise ConfigError("need low < high", path="bounds")
        if not math.isfinite(self.high - self.low):
            raise ConfigError("the width high - low must be a finite double", path="bounds")

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Refuse data of any shape but ``(n,)`` with ``DataError`` (public: the shape only)."""
        if len(shape) != 1:
            raise DataError("scalar bounds need one-dimensional data (use pf.L2Ball for vectors)", path="x")

    def clip(self, x: Array) -> Array:
        """Clip one-dimensional data to ``[low, high]``."""
        self.check_shape(x.shape)
        return np.clip(x, self.low, self.high)


@attrs.frozen
class L2Ball:
    """Public bound for vector data: rows have Euclidean norm at most ``radius`` (longer rows are scaled onto it)."""

    radius: float = attrs.field(converter=_to_float, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.radius > 0:
            raise ConfigError("must be > 0", path="bounds.radius")

    def check_shape(self, shape: tuple[int, ...]) -> None:
        """Refuse data of any shape but ``(n, d)`` with ``DataError`` (public: the shape only)."""
        if len(shape) != 2:
            raise DataError("an L2Ball bound needs two-dimensional data (n, d)", path="x")

    def clip(self, x: Array) -> Array:
        """Project each row of two-dimensional data onto the ball."""
        self.check_shape(x.shape)
        with np.errstate(over="ignore"):
            norms = np.linalg.norm(x, axis=1, keepdims=True)
        # rows inside the ball keep scale 1 (no division: a zero row used to overflow radius / tiny)
        scale = np.divide(self.radius, norms, out=np.ones_like(norms), where=norms > self.radius)
        projected: Array = x * scale  # a row whose norm overflows gets scale 0 here, and is redone below
        huge = ~np.isfinite(norms[:, 0])
        if np.any(huge):
            # Finite entries whose squares overflow: the direction from the row divided by its largest entry
            # (every such row is far outside the ball). Never multiplying by that entry again keeps every
            # intermediate finite, so the same rows raise no floating-point warning.
            rows = x[huge] / np.max(np.abs(x[huge]), axis=1, keepdims=True)
            projected[huge] = rows * (self.radius / np.linalg.norm(rows, axis=1, keepdims=True))
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
    raise ConfigError("expected (low, high), pf.Bounds(low, high) or pf.L2Ball(radius)", path="bounds")


def euclidean_norm(vector: Array) -> float:
    """The Euclidean norm of a finite vector, without overflow: scaled by its largest entry first, since
    entries near 1e200 square to infinity in a plain ``np.linalg.norm``."""
    v = np.asarray(vector, dtype=np.float64).reshape(-1)
    largest = float(np.max(np.abs(v))) if v.size else 0.0
    if largest == 0.0 or not math.isfinite(largest):
        return largest
    return largest * float(np.linalg.norm(v / largest))
