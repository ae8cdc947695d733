"""The exponential mechanism for quantiles on public bounds (inverse-sensitivity form, ``docs/algorithms.md`` 4).

For k records clipped to ``[low, high]`` and sorted, ``x_(0) = low <= x_(1) <= ... <= x_(k) <= x_(k+1) = high``,
the output y is drawn with density proportional to ``exp(eps u(y) / 2)`` on ``[low, high]``, where
``u(y) = -|#{i : x_i < y} - q k|`` (the rank utility). It is constant on each piece
``I_j = [x_(j), x_(j+1)]`` (j = 0..k), so sampling picks a piece with probability proportional to
``|I_j| exp(-eps |j - q k| / 2)`` and then a uniform point in it. Replacing one record moves the count below
every y by at most 1, so ``u`` has sensitivity 1 and the output density changes by at most ``e^{eps/2}``
pointwise and the normaliser by at most ``e^{eps/2}``: eps-DP (pure). Vectorised over the T rows of an
index matrix.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import BudgetError, ConfigError, DataError

__all__ = ["ExponentialMechanism", "quantile_log_density", "quantile_log_weights", "weighted_quantile_log_weights"]


def quantile_log_weights(
    sorted_rows: pf.Array, q: float, epsilon: float, low: float, high: float
) -> tuple[pf.Array, pf.Array]:
    """Piece edges and unnormalised log-probabilities of the pieces, per row.

    Parameters
    ----------
    sorted_rows : ndarray, shape (T, k)
        Each row sorted ascending (values outside ``[low, high]`` are clipped).
    q : float
        Quantile level; the utility of piece j is ``-|j - q k|``.
    epsilon : float
        The privacy parameter.
    low, high : float
        Public bounds.

    Returns
    -------
    edges : ndarray, shape (T, k + 2)
        ``low, x_(1), ..., x_(k), high``.
    log_weights : ndarray, shape (T, k + 1)
        ``log |I_j| - eps |j - q k| / 2`` (``-inf`` for empty pieces).
    """
    rows, k = sorted_rows.shape
    edges = np.empty((rows, k + 2), dtype=np.float64)
    edges[:, 0] = low
    edges[:, -1] = high
    np.clip(sorted_rows, low, high, out=edges[:, 1:-1])
    lengths = np.diff(edges, axis=1)
    utility = -np.abs(np.arange(k + 1, dtype=np.float64) - q * k)
    with np.errstate(divide="ignore"):
        log_weights = np.log(lengths) + (epsilon / 2.0) * utility
    return edges, log_weights


def weighted_quantile_log_weights(
    values: pf.Array, cumulative: pf.Array, q: float, epsilon: float, low: float, high: float
) -> tuple[pf.Array, pf.Array]:
    """The pieces of :func:`quantile_log_weights` on weighted resamples of one block of records.

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


def quantile_log_density(
    sorted_rows: pf.Array, q: float, epsilon: float, low: float, high: float, y: pf.Array
) -> pf.Array:
    """Exact log density of the mechanism's output at points ``y``, per row: ``(T, len(y))``.

    On piece j the density is ``exp(-eps |j - q k| / 2) / sum_i |I_i| exp(-eps |i - q k| / 2)``; a point is
    in piece j when j records lie strictly below it (points equal to a record have measure zero). For audits.
    """
    _, log_weights = quantile_log_weights(sorted_rows, q, epsilon, low, high)
    k = sorted_rows.shape[1]
    top = np.max(log_weights, axis=1, keepdims=True)
    log_norm = top[:, 0] + np.log(np.sum(np.exp(log_weights - top), axis=1))
    clipped = np.clip(sorted_rows, low, high)
    below = np.stack([np.searchsorted(row, y, side="left") for row in clipped])  # records strictly below
    utility = -np.abs(below - q * k)
    density: pf.Array = (epsilon / 2.0) * utility - log_norm[:, np.newaxis]
    return density


def _quantile_level(statistic: pf.Statistic) -> float:
    if not isinstance(statistic, pf.QuantileStatistic):
        raise ConfigError(
            f"'exponential' releases quantiles (median, quantile); statistic '{statistic.name}' is not one",
            path="mechanism",
        )
    q = float(statistic.q)
    if not 0 < q < 1:
        raise ConfigError("must be a number in (0, 1)", path="q")
    return q


@attrs.frozen
class ExponentialMechanism:
    """Exponential-mechanism quantile on public bounds: pure eps-DP, one release per index row.

    A :class:`privframe.SelectionMechanism`: it selects the output from the data, so it serves methods that
    call it directly (``privsub``), and the statistic must be a quantile (``median``, ``quantile``) with
    public ``bounds=(low, high)``. Under ``PureDP(eps)`` or ``ApproxDP(eps, delta)`` it runs at eps (no delta
    is spent); a GDP budget is refused here (the private estimator converts it soundly).
    """

    name: ClassVar[str] = "exponential"

    def plan_selection(self, statistic: pf.Statistic, budget: pf.Budget, *, label: str) -> pf.PrivacyEvent:
        """The event: ``PureDP(eps)``, utility sensitivity 1, no additive noise."""
        q = _quantile_level(statistic)
        if isinstance(budget, pf.GDP):
            raise BudgetError(
                "the exponential mechanism is calibrated in epsilon; give pf.PureDP or pf.ApproxDP", path="budget"
            )
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=pf.PureDP(budget.epsilon),
            sensitivity=1.0,
            note="rank utility -|#{x_i < y} - q k| (sensitivity 1), density prop. to exp(eps u / 2) on the bounds",
            details={"q": q, "epsilon": budget.epsilon},
        )

    def select_batch(
        self,
        statistic: pf.Statistic,
        x: pf.Array,
        index: pf.IndexMatrix,
        bounds: Any,
        event: pf.PrivacyEvent,
        rng: np.random.Generator,
    ) -> pf.Array:
        """One private quantile per row of ``index``: ``(T, 1)``."""
        q = _quantile_level(statistic)
        if not isinstance(bounds, pf.Bounds):
            raise ConfigError("the exponential mechanism needs public scalar bounds (low, high)", path="bounds")
        if not isinstance(event.budget, pf.PureDP) or event.mechanism != self.name:
            raise BudgetError("expected an event planned by the exponential mechanism", path="event")
        if x.ndim != 1:
            raise DataError("the exponential mechanism needs one-dimensional data", path="x")
        rows = np.take(x, index)
        rows.sort(axis=1)
        edges, log_weights = quantile_log_weights(rows, q, event.budget.epsilon, bounds.low, bounds.high)
        # Gumbel-max picks piece j with probability proportional to exp(log_weights[j]) (never an empty piece).
        piece = np.argmax(log_weights + rng.gumbel(size=log_weights.shape), axis=1)
        take = np.arange(rows.shape[0])
        start = edges[take, piece]
        width = edges[take, piece + 1] - start
        values: pf.Array = (start + width * rng.random(rows.shape[0]))[:, np.newaxis]
        return values

    def select_weighted(
        self,
        statistic: pf.Statistic,
        values: pf.Array,
        weights: pf.Array,
        bounds: Any,
        event: pf.PrivacyEvent,
        rng: np.random.Generator,
    ) -> pf.Array:
        """One private quantile per weighted resample of one block: ``(R,)``.

        ``values`` are the block's records sorted ascending and ``weights[r, i]`` the count of record i in
        resample r. The piece is drawn by inversion of its cumulative weight, then a uniform point in it.
        """
        q = _quantile_level(statistic)
        if not isinstance(bounds, pf.Bounds):
            raise ConfigError("the exponential mechanism needs public scalar bounds (low, high)", path="bounds")
        if not isinstance(event.budget, pf.PureDP) or event.mechanism != self.name:
            raise BudgetError("expected an event planned by the exponential mechanism", path="event")
        cumulative = np.cumsum(weights, axis=1)  # C_i = records <= v_i
        edges, log_weight = weighted_quantile_log_weights(
            values, cumulative, q, event.budget.epsilon, bounds.low, bounds.high
        )
        lengths = np.diff(edges)
        top = np.max(log_weight, axis=1, keepdims=True)
        mass = np.cumsum(np.exp(log_weight - top), axis=1)
        pick = rng.random(weights.shape[0]) * mass[:, -1]
        piece = np.minimum(np.count_nonzero(mass <= pick[:, np.newaxis], axis=1), lengths.size - 1)
        result: pf.Array = edges[piece] + lengths[piece] * rng.random(weights.shape[0])
        return result
