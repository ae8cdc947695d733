"""Order statistics of bounded scalars: ``quantile`` (rank ceil(q k)) and ``median`` (the lower median).

Both carry the Nissim-Raskhodnikova-Smith smooth sensitivity (``docs/algorithms.md``, section 3.2),
vectorised over the B resamples. The global sensitivity is the width of the bounds, so CR-GS works but is
rarely useful: use CR-SS.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._population import population_law

__all__ = ["Median", "Quantile", "order_smooth_sensitivity"]


def _scalar_bounds(bounds: Any, name: str) -> pf.Bounds:
    if not isinstance(bounds, pf.Bounds):
        raise ConfigError(f"statistic '{name}' needs scalar bounds (low, high)", path="bounds")
    return bounds


def order_smooth_sensitivity(sorted_rows: pf.Array, rank: int, beta: float, low: float, high: float) -> pf.Array:
    """Smooth sensitivity of the ``rank``-th order statistic (1-based) of each sorted row.

    ``SS_beta = max_j e^{-j beta} A^(j)`` with ``A^(j) = max_{0 <= t <= j+1} (x_(r+t) - x_(r+t-j-1))``, the
    rows padded with ``low`` below index 1 and ``high`` above index k. The search over j stops once
    ``e^{-j beta} (high - low)`` cannot beat the smallest running maximum, which is exact because
    ``A^(j) <= high - low`` for every j. Cost O(J^2) per row for the stopping distance J, vectorised over rows.

    Parameters
    ----------
    sorted_rows : ndarray, shape (B, k)
        Each row sorted ascending, values within ``[low, high]``.
    rank : int
        1-based rank r of the order statistic, ``1 <= r <= k``.
    beta : float
        Smoothness parameter, > 0.
    low, high : float
        Public bounds used as padding.

    Returns
    -------
    ndarray, shape (B,)
    """
    rows, k = sorted_rows.shape
    width = high - low
    # padded[:, i] is x_(i) for i in 0..k+1 (x_(0) = low, x_(k+1) = high); indices beyond clamp to the pads.
    padded = np.empty((rows, k + 2), dtype=np.float64)
    padded[:, 0] = low
    padded[:, -1] = high
    padded[:, 1:-1] = sorted_rows
    best = np.zeros(rows, dtype=np.float64)
    j = 0
    while True:
        if math.exp(-j * beta) * width <= best.min() or j > k + 1:
            return best
        # A run of distances j..j+run-1 at once (fewer Python steps); a window index past j + 1 repeats the
        # last window of its row, which leaves the maximum unchanged.
        run = min(_J_RUN, k + 2 - j)
        js = np.arange(j, j + run)
        t = np.minimum(np.arange(j + run + 1)[np.newaxis, :], (js + 1)[:, np.newaxis])
        upper = np.clip(rank + t, 0, k + 1)
        lower = np.clip(upper - (js + 1)[:, np.newaxis], 0, k + 1)
        a_j = np.max(padded[:, upper] - padded[:, lower], axis=2)  # (rows, run)
        decay = np.array([math.exp(-i * beta) for i in range(j, j + run)])
        np.maximum(best, np.max(decay * a_j, axis=1), out=best)
        j += run


_J_RUN = 8
"""Distances j evaluated per vectorised step of the smooth-sensitivity search."""


@attrs.frozen
class Quantile:
    """The ``q``-quantile as the order statistic of rank ``r = max(1, ceil(q k))`` of k bounded scalars.

    Data are clipped to the public ``bounds=(low, high)``. Global sensitivity ``high - low``; smooth
    sensitivity per ``docs/algorithms.md``, section 3.2 (works unchanged on a with-replacement multiset).
    Rate ``sqrt(k)``.

    Parameters
    ----------
    q : float, default 0.5
        Quantile level in (0, 1).
    """

    name: ClassVar[str] = "quantile"
    q: float = attrs.field(default=0.5, validator=pf.validators.probability)

    def rank(self, k: int) -> int:
        """The 1-based rank of the order statistic on k records."""
        return min(k, max(1, math.ceil(round(self.q * k, 9))))

    def prepare(self, x: pf.Array, bounds: Any) -> pf.Array:
        """Clip one-dimensional data to the bounds."""
        checked = _scalar_bounds(bounds, self.name)
        if x.ndim != 1:
            raise DataError(f"statistic '{self.name}' needs one-dimensional data", path="x")
        return checked.clip(x)

    def evaluate(self, x: pf.Array) -> pf.Array:
        """The order statistic of the full data, shape ``(1,)``."""
        r = self.rank(x.shape[0])
        return np.partition(x, r - 1)[r - 1 : r].astype(np.float64)

    def evaluate_batch(self, x: pf.Array, index: pf.IndexMatrix) -> pf.Array:
        """Order statistics of B resamples, shape ``(B, 1)``."""
        r = self.rank(index.shape[1])
        gathered = np.take(x, index)
        gathered.partition(r - 1, axis=1)
        return gathered[:, r - 1 : r]

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Global L2 sensitivity under replace-one: the width of the bounds."""
        return _scalar_bounds(bounds, self.name).width

    def default_mechanism(self, budget: pf.Budget) -> str:
        """The private estimator's default: the exponential mechanism (rank utility, any budget unit)."""
        return "exponential"

    def evaluate_weighted(self, values: pf.Array, weights: pf.Array) -> pf.Array:
        """The order statistic of rank ``rank(k)`` of each weighted resample of one sorted block, ``(R,)``."""
        cumulative = np.cumsum(weights, axis=1)  # C_i = records <= v_i
        sizes, inverse = np.unique(np.rint(cumulative[:, -1]).astype(np.int64), return_inverse=True)
        rank = np.array([self.rank(int(k)) for k in sizes])[inverse]
        position = np.count_nonzero(cumulative < rank[:, np.newaxis], axis=1)
        result: pf.Array = values[np.minimum(position, values.size - 1)]
        return result

    def population_value(self, population: Any) -> float:
        """The population q-quantile (``population.ppf(q)``; the lower median for a continuous law)."""
        return float(population_law(population, "ppf", self.name).ppf(self.q))

    def smooth_sensitivity(self, x: pf.Array, beta: float, bounds: Any) -> float:
        """``SS_beta`` at the (clipped) full data."""
        b = _scalar_bounds(bounds, self.name)
        rows = np.sort(x)[np.newaxis, :]
        return float(order_smooth_sensitivity(rows, self.rank(x.shape[0]), beta, b.low, b.high)[0])

    def evaluate_smooth_batch(
        self, x: pf.Array, index: pf.IndexMatrix, beta: float, bounds: Any
    ) -> tuple[pf.Array, pf.Array]:
        """Values ``(B, 1)`` and smooth sensitivities ``(B,)`` of B resamples from one sort per row."""
        b = _scalar_bounds(bounds, self.name)
        r = self.rank(index.shape[1])
        rows = np.take(x, index)
        rows.sort(axis=1)
        return rows[:, r - 1 : r].copy(), order_smooth_sensitivity(rows, r, beta, b.low, b.high)


@attrs.frozen
class Median(Quantile):
    """The lower median: the order statistic of rank ``ceil(k / 2)`` of k bounded scalars.

    The lower median (not the average of the two middle values) is what the smooth-sensitivity bound of
    ``docs/algorithms.md``, section 3.2, covers. Data are clipped to the public ``bounds=(low, high)``.
    """

    name: ClassVar[str] = "median"
    q: float = attrs.field(default=0.5, init=False)
