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

import decimal
import math
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError, DataError

__all__ = [
    "ExponentialMechanism",
    "exact_piece",
    "grid_points",
    "quantile_log_density",
    "quantile_log_weights",
    "weighted_quantile_log_weights",
]


def quantile_log_weights(
    sorted_rows: pp.Array, q: float, epsilon: float, low: float, high: float
) -> tuple[pp.Array, pp.Array]:
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
    values: pp.Array, cumulative: pp.Array, q: float, epsilon: float, low: float, high: float
) -> tuple[pp.Array, pp.Array]:
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
    rows, size = cumulative.shape
    log_weight = np.empty((rows, size + 1), dtype=np.float64)  # in place from here on: R x b cells, one buffer
    log_weight[:, 0] = 0.0  # records below piece 0
    log_weight[:, 1:] = cumulative
    np.subtract(log_weight, q * cumulative[:, -1:], out=log_weight)
    np.abs(log_weight, out=log_weight)
    np.multiply(log_weight, epsilon / 2.0, out=log_weight)
    with np.errstate(divide="ignore"):
        np.subtract(np.log(lengths)[np.newaxis, :], log_weight, out=log_weight)
    return edges, log_weight


_EXP_ZERO = -746.0
"""Below about -745.13, ``exp`` rounds to exactly 0.0 in double precision."""


def _exp_in_place(values: pp.Array) -> pp.Array:
    """``np.exp(values)`` in place, bit for bit, faster when most values underflow.

    Far-away pieces have log-weights hundreds below the largest, where libm's exp takes its slow underflow
    path (about 3x the cost); ``exp(-inf)`` is the same 0.0 and fast, so those values become -inf first.
    """
    np.copyto(values, -np.inf, where=values < _EXP_ZERO)
    np.exp(values, out=values)
    return values


def quantile_log_density(
    sorted_rows: pp.Array, q: float, epsilon: float, low: float, high: float, y: pp.Array
) -> pp.Array:
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
    density: pp.Array = (epsilon / 2.0) * utility - log_norm[:, np.newaxis]
    return density


def grid_points(low: float, high: float, size: int) -> pp.Array:
    """The public grid ``low + i (high - low) / size``, i = 0..size (non-decreasing, within the bounds)."""
    step = (high - low) / size
    points: pp.Array = np.clip(low + np.arange(size + 1, dtype=np.float64) * step, low, high)
    return points


_UNIFORM_BITS = 53


def _float_error(pieces: int) -> float:
    """A bound on the error of each float cumulative fraction of :func:`exact_piece`.

    Only pieces whose log-weight is within 745 of the largest carry a weight that does not underflow; their
    exponent ``ln c - eps d / 2 - top`` is correct to about 800 ulp of 1 (ln of a count below 2^64 and
    a distance below 1500 / eps, each to a few ulp; libm's exp and log to 1 ulp), so each weight is
    correct to a relative 2^-40, and a cumulative sum of P positive terms adds P ulp. The bound used is
    ``2^-36 + (P + 8) 2^-48``, generous on every term.
    """
    return 2.0**-36 + (pieces + 8) * 2.0**-48


def exact_piece(
    rng: np.random.Generator, counts: npt.NDArray[np.int64], q: float, epsilon: float
) -> npt.NDArray[np.int64]:
    """Per row, piece j drawn with probability proportional to ``counts[j] exp(-eps |j - q k| / 2)``, exactly.

    ``counts`` is ``(T, k + 1)``: the number of grid points in each piece. A uniform is drawn as 53 bits; its
    piece is read off the float cumulative weights when it is farther from every piece boundary than their
    error bound, which is nearly always. Otherwise the row is settled by :func:`_refine`: the weights in
    correctly rounded decimal arithmetic (``decimal.Decimal.exp``) at growing precision, and 64 more bits of
    the same uniform per round. Every piece with a grid point keeps a positive probability.
    """
    rows, pieces = counts.shape
    k = pieces - 1
    # |j - q k| with q k split exactly into an integer and a fraction, so each distance is correct to
    # 2^-52 relative plus 2^-53 absolute (q k itself may need more than 53 bits).
    exact_rank = Fraction(q) * k
    whole = math.floor(exact_rank)
    distance = np.abs((np.arange(pieces, dtype=np.float64) - whole) - float(exact_rank - whole))
    with np.errstate(divide="ignore"):
        log_weight = np.log(counts.astype(np.float64)) - (epsilon / 2.0) * distance
    top = np.max(log_weight, axis=1, keepdims=True)
    cumulative = np.cumsum(_exp_in_place(log_weight - top), axis=1)
    fraction = cumulative / cumulative[:, -1:]
    bits = rng.integers(0, 2**_UNIFORM_BITS, size=rows, dtype=np.int64)
    u = bits.astype(np.float64) / 2.0**_UNIFORM_BITS
    piece: npt.NDArray[np.int64] = np.minimum(np.sum(fraction <= u[:, np.newaxis], axis=1), k).astype(np.int64)
    # Settled when [u, u + 2^-53) lies inside the piece's interval with a margin larger than the float error.
    error = _float_error(pieces)
    take = np.arange(rows)
    below = np.where(piece > 0, fraction[take, np.maximum(piece - 1, 0)], 0.0)
    above = fraction[take, piece]
    settled = (below + error <= u) & (u + 2.0**-_UNIFORM_BITS <= above - error) & (counts[take, piece] > 0)
    for row in np.flatnonzero(~settled):
        piece[row] = _refine(rng, counts[row], q, epsilon, int(bits[row]))
    return piece


def _refine(rng: np.random.Generator, counts: npt.NDArray[np.int64], q: float, epsilon: float, bits: int) -> int:
    """The piece of the uniform whose first 53 bits are ``bits``, by interval arithmetic in decimal."""
    k = counts.size - 1
    rate = decimal.Decimal(epsilon) / 2  # exact: a double is a dyadic rational
    target = decimal.Decimal(q) * k
    known = _UNIFORM_BITS
    precision = 60
    while True:
        with decimal.localcontext() as context:
            context.prec = precision
            weights = [
                int(c) * (-(rate * abs(j - target))).exp() if c else decimal.Decimal(0) for j, c in enumerate(counts)
            ]
            total = sum(weights, decimal.Decimal(0))
            # Each weight and partial sum is correct to a relative 10^(1 - prec) per operation.
            slack = decimal.Decimal(10) ** (5 - precision) * (k + 2)
            low = decimal.Decimal(bits) / (decimal.Decimal(2) ** known)
            high = (decimal.Decimal(bits) + 1) / (decimal.Decimal(2) ** known)
            running = decimal.Decimal(0)
            for j, weight in enumerate(weights):
                start = running / total
                running += weight
                end = running / total
                if weight and start + slack <= low and high <= end - slack:
                    return j
        bits = (bits << 64) | int(rng.integers(0, 2**63, dtype=np.int64)) << 1 | int(rng.integers(0, 2, dtype=np.int64))
        known += 64
        precision *= 2


def _quantile_level(statistic: pp.Statistic) -> float:
    q = pp.traits_of(statistic).quantile
    if q is None:
        raise ConfigError(
            f"'exponential' releases quantiles (median, quantile); statistic '{statistic.name}' is not one",
            path="mechanism",
        )
    return float(q)


@attrs.frozen
class ExponentialMechanism:
    """Exponential-mechanism quantile on a public grid of the bounds: pure eps-DP, one release per index row.

    A :class:`privframe.SelectionMechanism`: it selects the output from the data, so it serves methods that
    call it directly (``privsub``), and the statistic must be a quantile (``median``, ``quantile``) with
    public ``bounds=(low, high)``. Under ``PureDP(eps)`` or ``ApproxDP(eps, delta)`` it runs at eps (no delta
    is spent); a GDP budget is refused here (the private estimator converts it soundly).

    The output is a point of the public grid ``low + i (high - low) / grid_size``, i = 0..grid_size, drawn
    with probability proportional to ``exp(-eps |#{x_j < y} - q k| / 2)``: the exponential mechanism over a
    finite set, with utility sensitivity 1, so eps-DP exactly. The draw is exact: the grid point's piece
    (the records below it) is chosen by comparing a uniform with the cumulative weights in floating point,
    with a proven error bound, and in the rare case the comparison is closer than the bound, with
    correctly rounded decimal arithmetic at growing precision and more uniform bits
    (:func:`exact_piece`). The grid index within the piece is a uniform integer. Every grid point can be
    released from any dataset, so no output reveals the data through its low bits.

    Parameters
    ----------
    grid_size : int, default 2**16
        Number of grid intervals between the bounds; the release is a multiple of ``(high - low) / grid_size``
        away from ``low``.
    exact : bool, default True
        False draws the piece by the Gumbel trick and a uniform point in it in floating point: faster, for
        simulations only (the event says so); its low bits can reveal the data.
    """

    name: ClassVar[str] = "exponential"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pp.PureDP: pp.PureDP, pp.ApproxDP: pp.PureDP}
    )
    grid_size: int = attrs.field(
        default=2**16, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(2)
    )
    exact: bool = attrs.field(default=True, validator=pp.validators.boolean)

    def plan_selection(self, statistic: pp.Statistic, budget: pp.Budget, *, label: str) -> pp.PrivacyEvent:
        """The event: ``PureDP(eps)``, utility sensitivity 1, no additive noise."""
        q = _quantile_level(statistic)
        if isinstance(budget, pp.GDP):
            raise BudgetError(
                "the exponential mechanism is calibrated in epsilon; give pf.PureDP or pf.ApproxDP", path="budget"
            )
        details = {"q": q, "epsilon": budget.epsilon, "grid_size": float(self.grid_size)}
        plan: pp.FloatNoise | None = None
        if self.exact:
            note = (
                "rank utility -|#{x_i < y} - q k| (sensitivity 1), probability prop. to exp(eps u / 2) on a "
                f"public grid of {self.grid_size} steps; exact sampling"
            )
        else:
            note = (
                "float sampling on the continuous bounds: for simulations only, not safe against floating-point attacks"
            )
            plan = pp.FloatNoise("exponential")
        return pp.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=pp.PureDP(budget.epsilon),
            sensitivity=1.0,
            note=note,
            details=details,
            noise=plan,
        )

    def select_batch(
        self,
        statistic: pp.Statistic,
        x: pp.Array,
        index: pp.IndexMatrix,
        bounds: Any,
        event: pp.PrivacyEvent,
        rng: np.random.Generator,
    ) -> pp.Array:
        """One private quantile per row of ``index``: ``(T, 1)``."""
        q = _quantile_level(statistic)
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError("the exponential mechanism needs public scalar bounds (low, high)", path="bounds")
        if not isinstance(event.budget, pp.PureDP) or event.mechanism != self.name:
            raise BudgetError("expected an event planned by the exponential mechanism", path="event")
        if x.ndim != 1:
            raise DataError("the exponential mechanism needs one-dimensional data", path="x")
        rows = np.take(x, index)
        rows.sort(axis=1)
        epsilon = event.budget.epsilon
        if event.simulated:
            return self._float_select(rows, q, epsilon, bounds, rng)
        grid = grid_points(bounds.low, bounds.high, self.grid_size)
        count, k = rows.shape
        # starts[:, j] = number of grid points <= x_(j) (x_(0) = -inf): piece j (j records below) is
        # grid[starts[j] : starts[j + 1]].
        starts = np.zeros((count, k + 2), dtype=np.int64)
        starts[:, 1:-1] = np.searchsorted(grid, rows, side="right")
        starts[:, -1] = grid.size
        counts = np.diff(starts, axis=1)
        piece = exact_piece(rng, counts, q, epsilon)
        take = np.arange(count)
        within = rng.integers(0, counts[take, piece], dtype=np.int64)
        values: pp.Array = grid[starts[take, piece] + within][:, np.newaxis]
        return values

    def _float_select(
        self, rows: pp.Array, q: float, epsilon: float, bounds: pp.Bounds, rng: np.random.Generator
    ) -> pp.Array:
        edges, log_weights = quantile_log_weights(rows, q, epsilon, bounds.low, bounds.high)
        # Gumbel-max picks piece j with probability proportional to exp(log_weights[j]) (never an empty piece).
        piece = np.argmax(log_weights + rng.gumbel(size=log_weights.shape), axis=1)
        take = np.arange(rows.shape[0])
        start = edges[take, piece]
        width = edges[take, piece + 1] - start
        values: pp.Array = (start + width * rng.random(rows.shape[0]))[:, np.newaxis]
        return values

    def select_weighted(
        self,
        statistic: pp.Statistic,
        values: pp.Array,
        weights: pp.Array,
        bounds: Any,
        event: pp.PrivacyEvent,
        rng: np.random.Generator,
    ) -> pp.Array:
        """One private quantile per weighted resample of one block: ``(R,)``.

        ``values`` are the block's records sorted ascending and ``weights[r, i]`` the count of record i in
        resample r. The piece is drawn by inversion of its cumulative weight, then a uniform point in it.
        """
        q = _quantile_level(statistic)
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError("the exponential mechanism needs public scalar bounds (low, high)", path="bounds")
        if not isinstance(event.budget, pp.PureDP) or event.mechanism != self.name:
            raise BudgetError("expected an event planned by the exponential mechanism", path="event")
        from privframe_std.mechanisms import _jit

        edges = np.concatenate([[bounds.low], np.clip(values, bounds.low, bounds.high), [bounds.high]])
        with np.errstate(divide="ignore"):
            log_lengths = np.log(np.diff(edges))
        rows = weights.shape[0]
        pick, within = rng.random(rows), rng.random(rows)
        result: pp.Array = np.empty(rows)
        counts = np.ascontiguousarray(weights, dtype=np.float64)
        _jit.weighted_quantile_select(
            edges, log_lengths, counts, counts.sum(axis=1), q, event.budget.epsilon / 2.0, pick, within, result
        )
        return result
