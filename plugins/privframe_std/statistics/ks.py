"""The Kolmogorov-Smirnov distance of the data to a public reference CDF (``docs/algorithms.md``, section 4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._population import population_law
from privframe_std.statistics.mean import NOISE_MECHANISMS

__all__ = ["KolmogorovSmirnov", "ks_distance"]

Cdf = Callable[[pp.Array], pp.Array]


def _reference(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        raise ConfigError(
            "the ks statistic needs a public reference CDF (a frozen scipy distribution or a callable)",
            path=attribute.name,
        )
    if not callable(getattr(value, "cdf", value)):
        raise ConfigError("expected a frozen scipy distribution (with .cdf) or a CDF callable", path=attribute.name)


def ks_distance(cdf: Cdf, reference: Cdf, low: float, high: float, *, grid: int = 20001) -> float:
    """``sup_x |cdf(x) - reference(x)|`` over ``[low, high]``: a dense grid, then local refinement.

    Parameters
    ----------
    cdf, reference : callable
        Vectorised CDFs.
    low, high : float
        A range outside of which both CDFs are (numerically) equal, e.g. both 0 or both 1.
    grid : int
        Grid points of the first pass; every local maximum of the grid is refined with a bounded
        scalar search between its neighbours.

    Returns
    -------
    float
    """
    x = np.linspace(low, high, grid)
    gap = np.abs(cdf(x) - reference(x))
    best = float(gap.max())
    interior = np.flatnonzero((gap[1:-1] >= gap[:-2]) & (gap[1:-1] >= gap[2:])) + 1
    # Refine the largest local maxima only; there are few for smooth CDFs.
    from scipy import optimize  # only experiments need the population value

    for i in interior[np.argsort(gap[interior])[::-1][:8]]:
        res = optimize.minimize_scalar(
            lambda t: -float(np.abs(cdf(np.array([t])) - reference(np.array([t])))[0]),
            bounds=(float(x[i - 1]), float(x[i + 1])),
            method="bounded",
            options={"xatol": 1e-12},
        )
        best = max(best, -float(res.fun))
    return best


@attrs.frozen
class KolmogorovSmirnov:
    """``sup_x |F_k(x) - F_0(x)|`` for the empirical CDF F_k of k scalars and a public, continuous F_0.

    Needs no bounds: replacing one record moves F_k by at most 1/k everywhere, so the replace-one
    sensitivity is ``1 / k`` whatever the data. The limit law is not normal when the supremum has several
    maximisers; the rate is still ``sqrt(k)``.

    The statistic works on ``u_i = F_0(x_i)`` (computed once in ``prepare``): with ``u`` sorted,
    ``D = max_i max(i/k - u_(i), u_(i) - (i-1)/k)``, vectorised over resamples.

    Parameters
    ----------
    reference : frozen scipy distribution or callable
        The public reference CDF F_0 (``scipy.stats.norm(0, 1.5)``, or any vectorised callable). Required.
    """

    name: ClassVar[str] = "ks"
    traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(
        requires_bounds=False, centred=False, bootstrap_consistent=False, default_mechanisms=NOISE_MECHANISMS
    )
    """No bounds (a distance between CDFs moves by at most 1/k); a biased, non-centred limit law (a ball about
    the estimate covered 0.81 at nominal 0.90) and an inconsistent n-out-of-n bootstrap (coverage 0.36-0.48)."""
    reference: Any = attrs.field(default=None, validator=_reference)

    def _cdf(self) -> Callable[[pp.Array], Any]:
        cdf: Callable[[pp.Array], Any] = getattr(self.reference, "cdf", self.reference)
        return cdf

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """No bounds and one-dimensional data."""
        if bounds is not None:
            raise ConfigError("the ks statistic needs no bounds (its sensitivity is 1/k)", path="bounds")
        if len(shape) != 1:
            raise DataError("the ks statistic needs one-dimensional data", path="x")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """The reference CDF at every record, ``u_i = F_0(x_i)``."""
        self.check_shape(x.shape, bounds)
        u = np.asarray(self._cdf()(x), dtype=np.float64)
        if u.shape != x.shape:
            raise ConfigError("must return one CDF value per record", path="reference")
        # A CDF value outside [0, 1] (or NaN) is the reference's error, but refusing it would depend on the
        # data: it is mapped into [0, 1] instead (NaN to 0), which keeps the sensitivity 1/k.
        clipped: pp.Array = np.clip(np.nan_to_num(u, nan=0.0), 0.0, 1.0)
        return clipped

    def value_range(self, bounds: Any) -> tuple[float, float]:
        """A distance between CDFs lies in [0, 1]."""
        return (0.0, 1.0)

    def evaluate(self, x: pp.Array) -> pp.Array:
        """D on the full (prepared) data, shape ``(1,)``."""
        value: pp.Array = self.evaluate_batch(x, np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :])[0]
        return value

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """D on B resamples, ``(B, 1)``: one sort per row."""
        u = np.take(x, index)
        u.sort(axis=1)
        k = index.shape[1]
        steps = np.arange(1, k + 1, dtype=np.float64) / k
        above = np.max(steps - u, axis=1)
        below = np.max(u - (steps - 1.0 / k), axis=1)
        distance: pp.Array = np.maximum(above, below)[:, np.newaxis]
        return distance

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Replace-one sensitivity ``1 / k``, plus ``2^-50`` for the rounding of ``i / k - F_0`` (each within
        2^-53 of its value in [0, 1], on both neighbours)."""
        return 1.0 / k + 2.0**-50

    def population_value(self, population: Any) -> float:
        """``sup_x |F(x) - F_0(x)|`` for the population CDF F, by a dense grid and local refinement.

        The search runs over the population's central range (its 1e-12 and 1 - 1e-12 quantiles) widened by
        twice its span on each side.
        """
        law = population_law(population, "cdf", self.name)
        population_law(population, "ppf", self.name)
        low, high = (float(v) for v in law.ppf([1e-12, 1 - 1e-12]))
        span = high - low
        cdf = self._cdf()
        return ks_distance(law.cdf, lambda x: np.asarray(cdf(x), dtype=np.float64), low - 2 * span, high + 2 * span)
