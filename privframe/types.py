"""Array aliases and the small value objects parts exchange: public bounds, a sampler's design, a smooth release."""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import attrs
import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError, DataError, PluginError

__all__ = [
    "Array",
    "Bounds",
    "BoundsLike",
    "Design",
    "IndexMatrix",
    "L2Ball",
    "SmoothRelease",
    "SmoothReleaseBatch",
    "as_bounds",
]

Array: TypeAlias = npt.NDArray[np.float64]
"""A float64 array (data, statistic values)."""

IndexMatrix: TypeAlias = npt.NDArray[np.intp]
"""A ``(B, m)`` integer matrix: row i holds the indices of resample i."""


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

    def clip(self, x: Array) -> Array:
        """Clip one-dimensional data to ``[low, high]``."""
        if x.ndim != 1:
            raise DataError("scalar bounds need one-dimensional data (use pf.L2Ball for vectors)", path="x")
        return np.clip(x, self.low, self.high)


@attrs.frozen
class L2Ball:
    """Public bound for vector data: rows have Euclidean norm at most ``radius`` (longer rows are scaled onto it)."""

    radius: float = attrs.field(converter=_to_float, validator=_finite)

    def __attrs_post_init__(self) -> None:
        if not self.radius > 0:
            raise ConfigError("must be > 0", path="bounds.radius")

    def clip(self, x: Array) -> Array:
        """Project each row of two-dimensional data onto the ball."""
        if x.ndim != 2:
            raise DataError("an L2Ball bound needs two-dimensional data (n, d)", path="x")
        with np.errstate(over="ignore"):
            norms = np.linalg.norm(x, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)):  # rows of finite huge entries: the norm of the row scaled down
            peak = np.max(np.abs(x), axis=1, keepdims=True)
            unit = np.where(peak > 0, peak, 1.0)
            norms = peak * np.linalg.norm(x / unit, axis=1, keepdims=True)
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
    raise ConfigError("expected (low, high), pf.Bounds(low, high) or pf.L2Ball(radius)", path="bounds")


def _positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PluginError("a sampler's design needs positive integer sizes", path=f"design.{attribute.name}")


@attrs.frozen
class Design:
    """What a sampler draws, fixed from public quantities before any index exists.

    Attributes
    ----------
    n, m, B : int
        Population size, resample size, number of resamples.
    kappa : int
        The largest number of times one record can appear in one resample (1 without replacement). It is a
        privacy claim: CR-GS multiplies the radius sensitivity by it.
    replace : bool
        Whether rows are drawn with replacement.
    rho : float or None
        Bound on the probability that the draw is rejected (``wr``); None for samplers that never reject.
    block_rows : int or None
        Rows per independently seeded block; None for the engine's rule (:func:`privframe.resampling.block_rows`).
        A sampler whose rows are not independent (one permutation cut into blocks) sets it to B, so all rows
        are one block.
    """

    n: int = attrs.field(validator=_positive_int)
    m: int = attrs.field(validator=_positive_int)
    B: int = attrs.field(validator=_positive_int)
    kappa: int = attrs.field(validator=_positive_int)
    replace: bool
    rho: float | None = None
    block_rows: int | None = None


@attrs.frozen
class SmoothRelease:
    """What a smooth-bound (propose-test-release) mechanism released.

    Parameters
    ----------
    value : ndarray
        The noisy value.
    bound : float
        The bound the noise was scaled to: the privately proposed ``b`` (variant "bound"), the public
        proposal ``b_0`` (variant "classic", test passed) or the global sensitivity (fallback). All of these
        are released quantities, never the non-private smooth bound itself.
    noise_scale : float
        Standard deviation of the release noise.
    passed : bool
        False when the test failed and the fallback was used.
    """

    value: Array
    bound: float
    noise_scale: float
    passed: bool = True


@attrs.frozen(eq=False)
class SmoothReleaseBatch:
    """``N`` independent releases of a smooth-bound mechanism (row i is one :class:`SmoothRelease`).

    Parameters
    ----------
    value : ndarray
        ``(N, d)`` noisy values; NaN in a row that was not released.
    bound : ndarray
        ``(N,)`` bounds the noise was scaled to (NaN where not released).
    noise_scale : ndarray
        ``(N,)`` standard deviations of the release noise.
    passed : ndarray
        ``(N,)`` test outcomes (False where the test failed, released through a fallback or not at all).
    released : ndarray
        ``(N,)`` False where the test failed and nothing was released (``PTRFailed`` for a single release).
    """

    value: Array
    bound: Array
    noise_scale: Array
    passed: npt.NDArray[np.bool_]
    released: npt.NDArray[np.bool_]
