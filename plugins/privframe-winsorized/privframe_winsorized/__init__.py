"""privframe-winsorized: an example third-party privframe plugin adding the ``winsorized-mean`` statistic.

This package is the template a plugin author copies. All a plugin needs is

1. a statistic class with ``name``, ``evaluate_batch`` and ``sensitivity`` (here an attrs frozen class
   whose fields are its options),
2. a ``@pp.hookimpl`` registration hook that adds it to the registry it is handed, and
3. an entry point in the ``privframe`` group naming this module (see ``pyproject.toml``).

Example
-------
>>> import numpy as np, privframe as pf
>>> x = np.random.default_rng(0).beta(2, 5, size=2000)
>>> res = pf.confidence_interval(x, "winsorized-mean", method="cr-gs", budget=pf.GDP(1.0),
...                              bounds=(0, 1), trim=0.2, rng=1)
>>> res.low < res.high
True
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp

__all__ = ["WinsorizedMean", "privframe_register_statistics"]

__version__ = "0.1.0"


def _check_trim(_: object, attribute: attrs.Attribute[float], value: object) -> None:
    """attrs validator: a finite number with ``0 <= trim < 0.5`` (the message starts with the option name)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value < 0.5
    ):
        raise pp.ConfigError("must be a number with 0 <= trim < 0.5", path=attribute.name)


def winsor_count(trim: float, k: int) -> int:
    """``g = floor(trim * k)``: how many values are winsorised at each end of a sample of size ``k``.

    ``trim * k`` is rounded to 9 decimals first (so ``0.1 * 30`` is 3, whatever the float error), as in
    ``privframe.plugin.order_statistic_index``, and ``g`` is capped at ``(k - 1) // 2`` so that at least one
    value is never replaced (``2 g < k``; automatic for ``trim < 0.5`` up to rounding). ``evaluate_batch``
    and ``sensitivity`` both use this function, so the declared sensitivity always matches the computation.
    """
    return min(math.floor(round(trim * k, 9)), (k - 1) // 2)


def _require_scalar_bounds(bounds: Any) -> pp.Bounds:
    if not isinstance(bounds, pp.Bounds):
        raise pp.ConfigError("the winsorized mean needs scalar bounds (low, high)", path="bounds")
    return bounds


@attrs.frozen
class WinsorizedMean:
    """Winsorised mean of bounded scalar data.

    On a sample of size k, with ``g = floor(trim * k)``: sort the values, replace the g smallest by the
    (g+1)-th smallest and the g largest by the (k-g)-th smallest, and average. ``trim = 0`` is the mean;
    when ``2 g + 1 = k`` it is the median. Data are clipped to the public bounds ``(a, b)`` first. Rate
    ``tau_k = sqrt(k)``.

    Parameters
    ----------
    trim : float, default 0.1
        Share winsorised at each end, ``0 <= trim < 0.5``.
    """

    name: ClassVar[str] = "winsorized-mean"
    trim: float = attrs.field(default=0.1, validator=_check_trim)

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """Scalar bounds and one-dimensional data (public: a session refuses a wrong shape before charging)."""
        _require_scalar_bounds(bounds).check_shape(shape)

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Clip one-dimensional data to the public bounds."""
        return _require_scalar_bounds(bounds).clip(x)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """Winsorised means of B resamples at once, shape ``(B, 1)`` (no Python loop over rows).

        Clipping every value of a row to the row's (g+1)-th and (k-g)-th smallest values is exactly the
        replacement above (ties are replaced by equal values); ``np.partition`` finds both order statistics
        of all rows in linear time.
        """
        gathered = x[index]
        k = index.shape[1]
        g = winsor_count(self.trim, k)
        kth = sorted({g, k - g - 1})
        part = np.partition(gathered, kth, axis=1)
        clipped = np.clip(gathered, part[:, g : g + 1], part[:, k - g - 1 : k - g])
        result: pp.Array = clipped.mean(axis=1, keepdims=True)
        return result

    def value_range(self, bounds: Any) -> tuple[float, float]:
        """A winsorised mean of clipped data lies within the bounds (methods clip intervals to this range)."""
        return (bounds.low, bounds.high)

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Replace-one L2 global sensitivity on k records in ``[a, b]``: ``c (b - a) / k``.

        Here ``c = g + 1`` when ``k >= 2 g + 2`` and ``c = k`` when ``k = 2 g + 1`` (the statistic is then the
        median). The bound is attained, so no smaller value is valid.

        Derivation. Write the statistic as ``W(x) = (1/k) sum_i w_i x_(i)`` over the order statistics
        ``x_(1) <= ... <= x_(k)``. If ``g + 1 < k - g`` the weights are ``w_(g+1) = w_(k-g) = g + 1``, ``1`` for
        ``g + 1 < i < k - g`` and ``0`` outside ``[g+1, k-g]``; if ``g + 1 = k - g`` the single weight
        ``w_(g+1) = k``. In both cases the weights are >= 0 and at most ``c``.

        Let D' replace one record u of D by v; by symmetry take ``v >= u``, and let ``y_(i)`` be the order
        statistics of D'. (i) Raising one value lowers no order statistic, so ``y_(i) >= x_(i)``.
        (ii) Interlacing: dropping u leaves k - 1 values whose i-th smallest ``z_(i)`` is at most ``x_(i+1)``,
        and adding v cannot raise the i-th smallest, so ``y_(i) <= z_(i) <= x_(i+1)`` for ``i < k``; also
        ``y_(k) <= b =: x_(k+1)``. Hence ``0 <= y_(i) - x_(i) <= d_i := x_(i+1) - x_(i)`` and

            0 <= W(D') - W(D) <= (c / k) * sum_{i=g+1}^{k-g} d_i = (c / k) * (x_(k-g+1) - x_(g+1)) <= c (b - a) / k.

        Attained: D = (k - g copies of a, g copies of b); replacing one a by b moves ``x_(k-g)`` from a to b
        (weight c) and leaves the other weighted order statistics fixed. For ``g = 0`` this is the mean's
        ``(b - a) / k``. The statistic is scalar, so the L2 and absolute sensitivities coincide.
        """
        width = _require_scalar_bounds(bounds).width
        g = winsor_count(self.trim, k)
        c = g + 1 if k >= 2 * g + 2 else k
        return c * width / k


@pp.hookimpl
def privframe_register_statistics(registry: pp.StatisticRegistry) -> None:
    """Register ``winsorized-mean``."""
    registry.add(WinsorizedMean)
