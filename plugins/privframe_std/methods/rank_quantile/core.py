"""Rank-based private confidence interval for any quantile: the statistical and privacy core.

The method (``docs/methods/rank-quantile.md``) releases two points of the public grid
``e_j = low + j (high - low) / G``, j = 0..G, chosen by exponential mechanisms whose utility is the number of
records that would have to change for the point to be a target order statistic. The target ranks come from
Binomial(n, q), with the selection's own worst-case error law folded into the calibration, so that

    P(lo <= theta_q <= hi) >= 1 - alpha

in finite samples for every distribution on ``[low, high]`` (atoms included) and every q in (0, 1).

Everything here is a pure function. The only data-dependent input is :func:`histogram`, exact integer
counts in 2G + 1 bins (each grid point, and each open cell between two grid points), so the method
decomposes over blocks of records: per-block histograms add up to the whole one, and :func:`select`
depends on nothing else. :func:`plan` uses public inputs only (n, q, confidence, budget, G).

Rounding to the grid: the lower end is selected on the data rounded *down* to the grid and the upper end
on the data rounded *up*. Rounding down can only lower the population quantile and rounding up only
raise it, so covering the rounded quantiles covers the original one and no widening is needed
(:func:`histogram` keeps a value on a grid point apart from the open cells around it for that reason).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import ConfigError, DataError
from privframe.privacy.selection import exact_choice
from privframe_std._binomial import binom_cdf, binom_pmf, binom_sf
from privframe_std.mechanisms.exponential import grid_points
from privframe_std.methods.rank_quantile.budget import GDP_ACCOUNTING, selection_epsilon

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "MAX_GRID_SIZE",
    "TILT_CAP_RATES",
    "TILT_CAP_SDS",
    "TILT_MARGIN",
    "TILT_SHARES",
    "VARIANTS",
    "EndPlan",
    "RankPlan",
    "calibrated_depth",
    "end_distances",
    "grid_edges",
    "histogram",
    "interval",
    "miss_bound",
    "order_statistic_ranks",
    "plan",
    "private_interval",
    "select",
    "selection_pmf",
    "suggested_grid_size",
    "tilt_factor",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MAX_GRID_SIZE = 2**24
"""The largest number of grid cells G (the joint selection counts up to (G + 1)^2 pairs in an int64)."""

VARIANTS = ("auto", "independent", "joint")
"""``"independent"``: one selection per end; ``"joint"``: one selection of the pair; ``"auto"``: the plan
takes whichever gives the narrower rank span (a choice from public inputs only)."""

TILT_SHARES = (0.5, 0.25, 0.125)
"""With the tilt on, the base measure of an end falls by ``exp(-rate)`` at most ``share * depth`` times across
the grid (``depth`` the untilted target rank from that end), for the largest share that passes the drift
guard of :func:`_single_end`."""

TILT_MARGIN = 3.0
"""The drift guard: the grid points beyond the data may weigh at most ``e^-3`` (5%) of the target."""

TILT_CAP_RATES = 16.0
"""The gap guard's allowance in units of the selection's own noise, ``1 / rate`` (see :data:`TILT_CAP_SDS`)."""

TILT_CAP_SDS = 4.0
"""The gap guard: the tilt falls at most ``TILT_CAP_RATES / rate + TILT_CAP_SDS sqrt(n p (1 - p))`` times
across the grid. On data with atoms the distance is flat across an empty gap between two atoms, so a tilt
of T steps across the grid carries an end over a gap that spans a share g of the grid whenever the atom's
excess over the target rank is below ``T g``: the cap keeps that excess within the selection's own noise
(a few ``1 / rate``) plus a few binomial sds, where the non-private interval reaches the next atom too.
The saving of the tilt grows only as ``ln(rate T) / rate`` ranks, so the cap costs a few percent of the
width on continuous data and takes most of it off on integer data with tight bounds (the method page)."""

_SAFETY = 1.0 - 1e-9
"""Each end's bound is held to ``alpha * _SAFETY``: the binomial sums are accurate to far better than 1e-9."""

_CHUNK = 2**20
"""Records binned per pass in :func:`histogram` (bounds the temporary memory, not the result)."""


# ---------------------------------------------------------------------------------------------------------
# Public grid and histogram


def _check_bounds(low: float, high: float) -> tuple[float, float]:
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ConfigError("the bounds must be finite with low < high", path="bounds")
    return low, high


def _check_grid_size(grid_size: int) -> int:
    if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)):
        raise ConfigError("must be an integer", path="grid_size")
    if not 1 <= grid_size <= MAX_GRID_SIZE:
        raise ConfigError(f"must be between 1 and {MAX_GRID_SIZE}", path="grid_size")
    return int(grid_size)


def grid_edges(low: float, high: float, grid_size: int) -> FloatArray:
    """The public grid ``e_j = low + j (high - low) / G``, j = 0..G, with ``e_0 = low`` and ``e_G = high`` exactly.

    The points are non-decreasing (two may coincide when the step is below the float resolution; every
    argument below works with grid indices, so that is harmless).
    """
    low, high = _check_bounds(low, high)
    size = _check_grid_size(grid_size)
    edges = grid_points(low, high, size)
    edges[-1] = high
    return edges


def histogram(x: npt.ArrayLike, low: float, high: float, grid_size: int) -> IntArray:
    """Exact counts of the records in the 2G + 1 bins of the grid: the only data-dependent input of the method.

    Records are clipped to ``[low, high]``. Bin ``2 j`` holds the records equal to the grid point ``e_j``
    (j = 0..G) and bin ``2 j - 1`` those strictly between ``e_{j-1}`` and ``e_j`` (j = 1..G); a record at a
    bound therefore falls in bin 0 or 2G. A value on a grid point rounds to itself both down and up, and a
    value inside a cell rounds down to its left point and up to its right point; keeping the two apart is
    what lets the lower end use the data rounded down and the upper end the data rounded up, so that the
    rounded quantiles bracket the original one (module docstring) without widening the interval.

    Parameters
    ----------
    x : array_like
        The records (any shape; flattened). Every value must be finite.
    low, high : float
        Public bounds.
    grid_size : int
        The number G of grid cells.

    Returns
    -------
    ndarray of int64, shape (2 G + 1,)
        The counts; they sum to the number of records, and the counts of blocks of records add up to the
        counts of their union.
    """
    edges = grid_edges(low, high, grid_size)
    size = edges.size - 1
    values = np.asarray(x, dtype=np.float64).ravel()
    if not np.all(np.isfinite(values)):
        raise DataError("the data must be finite (no NaN or infinite values)", path="x")
    counts = np.zeros(2 * size + 1, dtype=np.int64)
    for start in range(0, values.size, _CHUNK):
        chunk = np.clip(values[start : start + _CHUNK], edges[0], edges[-1])
        above = np.searchsorted(edges, chunk, side="left")  # first grid point >= the value
        on_point = edges[above] == chunk
        counts += np.bincount(2 * above - 1 + on_point, minlength=counts.size).astype(np.int64)
    return counts


def _check_counts(counts: npt.ArrayLike, plan: RankPlan) -> IntArray:
    array = np.asarray(counts)
    if array.ndim != 1 or array.size != 2 * plan.grid_size + 1:
        raise ConfigError("expected the histogram of the plan's grid: 2 * grid_size + 1 counts", path="counts")
    if not np.issubdtype(array.dtype, np.integer):
        raise ConfigError("the counts must be integers", path="counts")
    checked = array.astype(np.int64)
    if np.any(checked < 0) or int(checked.sum()) != plan.n:
        raise ConfigError("the counts must be non-negative and sum to the plan's n", path="counts")
    return checked


# ---------------------------------------------------------------------------------------------------------
# Calibration: the selection's worst-case error law folded into the binomial


def miss_bound(depth: int, n: int, p: float, rate: float, log_factor: float) -> float:
    """The calibrated bound on the probability that one end lands on the wrong side of the quantile.

    ``E[phi(B - depth)]`` with ``B ~ Binomial(n, p)``, ``phi(d) = 1`` for ``d < 0`` and
    ``phi(d) = F e^{-rate (d + 1)} / (1 + F e^{-rate (d + 1)})`` for ``d >= 0``, ``F = exp(log_factor)``.
    For the lower end, ``depth`` is its target rank from below and p = q; for the upper end, its rank from
    above and p = 1 - q (rounded down). ``phi(K - depth)`` bounds the wrong-side probability of the
    selection on every dataset with K records at or below the quantile, and is attained by the two-point
    data (``docs/methods/rank-quantile.md``, calibration). The tail beyond the summed terms is bounded above.

    Returns 0 for ``depth <= 0`` (the end is the bound itself) and 1 for ``depth > n``.
    """
    if depth <= 0:
        return 0.0
    if depth > n:
        return 1.0
    span = min(n - depth, math.ceil((max(log_factor, 0.0) + 60.0) / rate))
    offsets = np.arange(span + 1, dtype=np.float64)
    pmf = binom_pmf(depth + offsets, n, p)
    phi = special.expit(log_factor - rate * (offsets + 1.0))
    tail = float(special.expit(log_factor - rate * (span + 2.0))) * binom_sf(depth + span, n, p)
    return binom_cdf(depth - 1, n, p) + math.fsum(pmf * phi) + tail


def calibrated_depth(n: int, p: float, rate: float, log_factor: float, alpha: float) -> int:
    """The largest depth in 1..n with ``miss_bound(depth, ...) <= alpha`` (with a 1e-9 relative margin); 0 if none.

    ``miss_bound`` increases with the depth (``phi`` is non-increasing), so a bisection finds it.
    """
    target = alpha * _SAFETY
    low, high = 0, n
    while low < high:
        middle = (low + high + 1) // 2
        if miss_bound(middle, n, p, rate, log_factor) <= target:
            low = middle
        else:
            high = middle - 1
    return low


def tilt_factor(grid_size: int, block: int, rate: float) -> float:
    """``F = sum_{j=1}^{G} exp(-rate floor(j / w))``: the bad-output factor of an end with tilt block w.

    With base measure ``mu_j = exp(-rate floor(j / w))`` on the grid points (falling away from the end's
    bound), the weight of the points past any t relative to the weight at t is at most this sum (the
    worst t is 0). ``block = 0`` means no tilt: ``F = G``. Rounded up by a relative 1e-12.
    """
    if block == 0:
        return float(grid_size)
    full, rest = divmod(grid_size + 1, block)  # j = 0..G in blocks of w; block k holds j = kw..kw + w - 1
    steps = np.arange(full, dtype=np.float64)
    total = math.fsum(block * np.exp(-rate * steps)) + rest * math.exp(-rate * full) - 1.0  # minus j = 0
    return total * (1.0 + 1e-12)


@attrs.frozen
class EndPlan:
    """The calibration of one end.

    Attributes
    ----------
    depth : int
        The target rank counted from this end (lower: ``X_(depth)``; upper: the depth-th largest, i.e.
        ``X_(n - depth + 1)``); 0 when the end is the bound itself (no selection, no data used).
    rate : float
        The rate of the exponential mechanism that selects this end (its epsilon over 2).
    log_factor : float
        ``ln F``, the bad-output factor of the error law (``ln G``, the tilted :func:`tilt_factor`, or
        ``ln (G (G + 1))`` for the joint selection).
    tilt_block : int
        w: the base measure on the grid falls by ``exp(-rate)`` every w points away from this end's bound
        (0: uniform).
    alpha : float
        This end's allowance.
    miss : float
        The calibrated bound on the probability that this end is on the wrong side (<= alpha).
    """

    depth: int
    rate: float
    log_factor: float
    tilt_block: int
    alpha: float
    miss: float

    @property
    def trivial(self) -> bool:
        """True when the end is the public bound (no selection)."""
        return self.depth == 0


@attrs.frozen
class RankPlan:
    """The public plan of one release: target ranks, per-selection epsilons, allowances (:func:`plan`).

    Attributes
    ----------
    n, q, confidence, grid_size :
        The public inputs.
    variant : str
        ``"independent"`` (one selection per end), ``"joint"`` (one selection of the pair),
        ``"one-sided"`` (one end is the bound, the other one selection with the whole budget) or ``"none"``
        (both ends are the bounds: no valid interval narrower than the bounds exists at this n and budget).
    lower, upper : EndPlan
        The two ends.
    selection_epsilons : tuple of float
        The pure epsilon of each selection that runs (two, one or none); each is also eps-bounded-range.
    route : str
        How the budget gave the epsilons (:func:`~privframe_std.methods.rank_quantile.budget.selection_epsilon`).
    budget : pp.Budget
        The budget of the release.
    """

    n: int
    q: float
    confidence: float
    grid_size: int
    variant: str
    lower: EndPlan
    upper: EndPlan
    selection_epsilons: tuple[float, ...]
    route: str
    budget: pp.Budget

    @property
    def lower_rank(self) -> int:
        """The lower end's target order statistic ``X_(r)`` (0: the lower bound)."""
        return self.lower.depth

    @property
    def upper_rank(self) -> int:
        """The upper end's target order statistic ``X_(r)`` (n + 1: the upper bound)."""
        return self.n - self.upper.depth + 1

    @property
    def trivial(self) -> bool:
        """True when the release is the whole bounds (flag: no informative interval at this n and budget)."""
        return self.lower.trivial and self.upper.trivial


def _complement(value: float) -> float:
    """``1 - value`` rounded down (so a binomial at it is stochastically below the exact one)."""
    result = 1.0 - value
    if Fraction(result) > 1 - Fraction(value):
        result = math.nextafter(result, 0.0)
    return result


def _end(n: int, p: float, rate: float, log_factor: float, alpha: float, tilt_block: int = 0) -> EndPlan:
    depth = calibrated_depth(n, p, rate, log_factor, alpha)
    miss = miss_bound(depth, n, p, rate, log_factor)
    return EndPlan(depth=depth, rate=rate, log_factor=log_factor, tilt_block=tilt_block, alpha=alpha, miss=miss)


def _single_end(n: int, p: float, epsilon: float, grid_size: int, alpha: float, tilt: bool) -> EndPlan:
    """One end selected by its own exponential mechanism at epsilon, with the tilt when it helps.

    The tilt takes ``steps = share * r0`` steps of ``exp(-rate)`` across the grid (r0 the untilted depth,
    share in :data:`TILT_SHARES`, the largest that passes), at most the gap guard's cap
    (:data:`TILT_CAP_SDS`): a grid point beyond the data on the end's own
    side has distance about the depth r and base measure up to ``exp(rate * steps)`` above the target's,
    so all of them together weigh at most ``(1 + F) exp(-rate (r - steps))`` relative to the target. The
    tilt is kept only if that is below ``e^-TILT_MARGIN`` and the depth grows: otherwise it would trade
    rank slack for a drift towards the bound (at small n).
    """
    rate = epsilon / 2.0
    uniform = _end(n, p, rate, math.log(grid_size), alpha)
    if not tilt:
        return uniform
    cap = int(TILT_CAP_RATES / rate + TILT_CAP_SDS * math.sqrt(n * p * (1.0 - p)))
    tried = 0
    for share in TILT_SHARES:
        steps = min(int(share * uniform.depth), cap)
        if steps < 1:
            break
        if steps == tried:  # the cap binds at every share from here: the same plan again
            continue
        tried = steps
        block = -(-(grid_size + 1) // steps)  # ceil: at most `steps` tilt steps across j = 0..G
        factor = tilt_factor(grid_size, block, rate)
        tilted = _end(n, p, rate, math.log(factor), alpha, block)
        drift_safe = rate * (tilted.depth - steps) >= math.log1p(factor) + TILT_MARGIN
        if drift_safe and tilted.depth > uniform.depth:
            return tilted
    return uniform


def _trivial_end(alpha: float) -> EndPlan:
    return EndPlan(depth=0, rate=0.0, log_factor=0.0, tilt_block=0, alpha=alpha, miss=0.0)


@functools.lru_cache(maxsize=256)
def plan(
    n: int,
    q: float,
    confidence: float,
    budget: pp.Budget,
    grid_size: int,
    *,
    variant: str = "auto",
    tilt: bool = True,
    gdp_accounting: str = "bounded-range",
) -> RankPlan:
    """The public plan of a rank-quantile interval: every choice from public inputs only.

    Parameters
    ----------
    n : int
        The number of records (public under replace-one).
    q : float
        The quantile level, in (0, 1).
    confidence : float
        ``1 - alpha``, in (0, 1).
    budget : pp.PureDP, pp.ApproxDP or pp.GDP
        The budget of the release.
    grid_size : int
        G, the number of grid cells between the bounds.
    variant : {"auto", "independent", "joint"}
        Which two-sided construction to consider (``"auto"``: both, keeping the smaller rank span).
    tilt : bool
        Tilt each independent selection's base measure away from its bound (a public prior that shrinks
        the error law's worst case from G bad points to about ``w / rate``; see the method page).
    gdp_accounting : {"bounded-range", "pure"}
        How a GDP budget is met (:mod:`~privframe_std.methods.rank_quantile.budget`).

    Returns
    -------
    RankPlan
        Target ranks, per-selection epsilons and the calibrated miss bounds. When the binomial ranks fall
        outside 1..n at this budget the plan is one-sided or ``"none"`` (the bounds themselves, flagged
        by ``RankPlan.trivial``) rather than an error: the decision depends on public inputs only.

    Notes
    -----
    The allowance alpha is split equally between the ends (an equal-tailed interval). Each end's target
    rank is the largest whose :func:`miss_bound` is at most its allowance, so the coverage is at least
    ``1 - alpha`` for every distribution on the bounds (union bound over the two ends).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError("must be a positive integer", path="n")
    q, confidence = float(q), float(confidence)
    if not 0.0 < q < 1.0:
        raise ConfigError("must be a number in (0, 1)", path="q")
    if not 0.0 < confidence < 1.0:
        raise ConfigError("must be a number in (0, 1)", path="confidence")
    size = _check_grid_size(grid_size)
    if variant not in VARIANTS:
        raise ConfigError(f"must be one of {', '.join(VARIANTS)}", path="variant")
    if gdp_accounting not in GDP_ACCOUNTING:
        raise ConfigError(f"must be one of {', '.join(GDP_ACCOUNTING)}", path="gdp_accounting")
    n = int(n)
    alpha = _complement(confidence)
    p_low, p_high = q, _complement(q)
    two = selection_epsilon(budget, 2, gdp_accounting)
    one = selection_epsilon(budget, 1, gdp_accounting)

    def make(variant: str, lower: EndPlan, upper: EndPlan, epsilons: tuple[float, ...], route: str) -> RankPlan:
        return RankPlan(n=n, q=q, confidence=confidence, grid_size=size, variant=variant, lower=lower,
                        upper=upper, selection_epsilons=epsilons, route=route, budget=budget)  # fmt: skip

    candidates: list[RankPlan] = []
    if variant in ("auto", "independent"):
        lower = _single_end(n, p_low, two.epsilon, size, alpha / 2, tilt)
        upper = _single_end(n, p_high, two.epsilon, size, alpha / 2, tilt)
        if not (lower.trivial or upper.trivial):
            candidates.append(make("independent", lower, upper, (two.epsilon, two.epsilon), two.route))
    if variant in ("auto", "joint"):
        rate, log_pairs = one.epsilon / 2.0, math.log(size) + math.log(size + 1)
        lower = _end(n, p_low, rate, log_pairs, alpha / 2)
        upper = _end(n, p_high, rate, log_pairs, alpha / 2)
        if not (lower.trivial or upper.trivial):
            candidates.append(make("joint", lower, upper, (one.epsilon,), one.route))
    if candidates:
        return min(candidates, key=lambda c: c.upper_rank - c.lower_rank)  # the first on a tie
    # No two-sided interval fits: one end is the bound and the other gets the whole budget and alpha.
    lower = _single_end(n, p_low, one.epsilon, size, alpha, tilt)
    upper = _single_end(n, p_high, one.epsilon, size, alpha, tilt)
    if lower.trivial and upper.trivial:
        return make("none", _trivial_end(alpha / 2), _trivial_end(alpha / 2), (), "none")
    if upper.depth >= lower.depth:
        return make("one-sided", _trivial_end(0.0), upper, (one.epsilon,), one.route)
    return make("one-sided", lower, _trivial_end(0.0), (one.epsilon,), one.route)


def suggested_grid_size(n: int, budget: pp.Budget, gdp_accounting: str = "bounded-range") -> int:
    """A grid size from public inputs: ``2^k``, k = round(log2(4 n eps_i)) clipped to 10..16.

    The grid trades one cell of resolution against ``ln G / rate`` ranks of slack per end. Measured
    (``scripts/rank_quantile_study.py``, bounds 10 and 50 spreads wide): at n = 500 and eps = 1 the
    widths at 2^10 - 2^12 are about 25% below those at 2^16; at n = 10000 the best is 2^14 - 2^16. eps_i is
    the per-selection epsilon of two selections (:func:`~privframe_std.methods.rank_quantile.budget.selection_epsilon`).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError("must be a positive integer", path="n")
    epsilon = selection_epsilon(budget, 2, gdp_accounting).epsilon
    exponent = round(math.log2(4.0 * int(n) * epsilon))
    return int(2 ** min(max(exponent, 10), 16))


@functools.lru_cache(maxsize=256)
def order_statistic_ranks(n: int, q: float, confidence: float) -> tuple[int, int]:
    """The non-private exact binomial ranks ``(l, u)``: ``[X_(l), X_(u)]`` covers ``theta_q`` w.p. >= confidence.

    ``l`` is the largest rank with ``P(B < l) <= alpha / 2`` and ``u`` the smallest with
    ``P(B >= u) <= alpha / 2``, ``B ~ Binomial(n, q)``; 0 and n + 1 stand for the bounds.
    """
    alpha = _complement(float(confidence))
    lower = calibrated_depth(n, q, 1.0, -math.inf, alpha / 2)  # phi = 1 below the depth, 0 above
    upper = calibrated_depth(n, _complement(q), 1.0, -math.inf, alpha / 2)
    return lower, n - upper + 1


# ---------------------------------------------------------------------------------------------------------
# The selections


def end_distances(counts: IntArray, plan: RankPlan, side: str, *, tilted: bool = True) -> IntArray:
    """The integer distance of every grid point for one end: its negative utility (plus the tilt).

    For the lower end, on the data rounded down: with ``C<(j)`` and ``C<=(j)`` the numbers of rounded
    records below and at-or-below ``e_j`` and r the target rank, ``d(j) = max(C<(j) - r + 1, r - C<=(j), 0)``:
    the number of records that must change for ``e_j`` to be ``X_(r)`` (0 exactly at ``X_(r)``). For the
    upper end, the same on the data rounded up with ``r = n - depth + 1``. Replacing one record moves each
    count by at most 1, so d has sensitivity 1, ties included. With ``tilted`` and a tilt block w, the
    base measure enters as ``+ floor(j / w)`` (lower) or ``+ floor((G - j) / w)`` (upper).
    """
    end = plan.lower if side == "lower" else plan.upper
    cumulative = np.cumsum(counts, dtype=np.int64)  # cumulative[b]: records in bins 0..b
    size = plan.grid_size
    if side == "lower":  # rounded down: e_j holds bins 2j and 2j + 1
        at_or_below = np.append(cumulative[1::2], plan.n)
        rank = end.depth
    else:  # rounded up: e_j holds bins 2j - 1 and 2j
        at_or_below = cumulative[0::2]
        rank = plan.n - end.depth + 1
    below = np.concatenate(([0], at_or_below[:-1]))
    distance: IntArray = np.maximum(np.maximum(below - rank + 1, rank - at_or_below), 0)
    if tilted and end.tilt_block:
        points = np.arange(size + 1, dtype=np.int64)
        distance = distance + (points if side == "lower" else size - points) // end.tilt_block
    return distance


def _classes(distance: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct distances (increasing) and how many grid points have each: ``np.unique``, in O(G) when
    the distances span a range of at most a few times the grid (the usual case; a sort otherwise)."""
    smallest = int(distance.min())
    span = int(distance.max()) - smallest + 1
    if span > 4 * distance.size:
        values, sizes = np.unique(distance, return_counts=True)
        return values.astype(np.int64), sizes.astype(np.int64)
    tally = np.bincount(distance - smallest, minlength=span)
    present = np.flatnonzero(tally)
    return (present + smallest).astype(np.int64), tally[present].astype(np.int64)


def _draw_end(rng: np.random.Generator, distance: IntArray, rate: float) -> int:
    """A grid index with probability proportional to ``exp(-rate distance)``: the class, then a point in it."""
    values, sizes = _classes(distance)
    chosen = exact_choice(rng, sizes, values, rate)
    members = np.flatnonzero(distance == values[chosen])
    return int(members[rng.integers(0, members.size)])


def _sublevel(distance: IntArray, levels: IntArray) -> tuple[IntArray, IntArray]:
    """For each level m, the interval ``[first, last]`` of grid indices with ``distance <= m``.

    The distance is quasi-convex (the maximum of a non-decreasing and a non-increasing sequence and 0), so
    each sublevel set is an interval around a minimiser.
    """
    centre = int(np.argmin(distance))
    left, right = distance[: centre + 1], distance[centre:]
    first = np.searchsorted(-left, -levels, side="left").astype(np.int64)  # points of `left` above m
    last = (centre + np.searchsorted(right, levels, side="right") - 1).astype(np.int64)
    return first, last


def _difference_element(new: tuple[int, int], old: tuple[int, int], t: int) -> int:
    """The t-th element (increasing) of the interval ``new`` minus its sub-interval ``old`` (old may be empty)."""
    if old[0] > old[1]:
        return new[0] + t
    left = old[0] - new[0]
    return new[0] + t if t < left else old[1] + 1 + (t - left)


def _draw_joint(rng: np.random.Generator, lower: IntArray, upper: IntArray, rate: float) -> tuple[int, int]:
    """A pair (i, j) with probability proportional to ``exp(-rate max(lower[i], upper[j]))``, exactly.

    The pairs with ``max <= m`` are the product of the two sublevel intervals, so the number of pairs at
    each level m is a difference of products; the level is drawn by :func:`exact_choice` and the pair
    uniformly among those of that level (two product pieces, exact integer arithmetic).
    """
    levels = np.union1d(lower, upper).astype(np.int64)
    first_l, last_l = _sublevel(lower, levels)
    first_u, last_u = _sublevel(upper, levels)
    size_l, size_u = last_l - first_l + 1, last_u - first_u + 1
    pairs = np.diff(size_l * size_u, prepend=0)
    k = exact_choice(rng, pairs, levels, rate)
    new_l, new_u = (int(first_l[k]), int(last_l[k])), (int(first_u[k]), int(last_u[k]))
    old_l, old_u = (1, 0), (1, 0)  # empty below the first level
    if k > 0:
        old_l, old_u = (int(first_l[k - 1]), int(last_l[k - 1])), (int(first_u[k - 1]), int(last_u[k - 1]))
    width_u, width_l_old = int(size_u[k]), (old_l[1] - old_l[0] + 1)
    fresh_l = int(size_l[k]) - width_l_old
    fresh_u = width_u - (old_u[1] - old_u[0] + 1)
    t = int(rng.integers(0, fresh_l * width_u + width_l_old * fresh_u, dtype=np.int64))
    if t < fresh_l * width_u:  # the lower index is new at this level, the upper anything up to it
        return _difference_element(new_l, old_l, t // width_u), new_u[0] + t % width_u
    t -= fresh_l * width_u  # the lower index was already in, the upper is new
    return old_l[0] + t // fresh_u, _difference_element(new_u, old_u, t % fresh_u)


def _generator(rng: np.random.Generator | None) -> np.random.Generator:
    if rng is None:
        return np.random.default_rng()  # fresh OS entropy
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("expected None (OS entropy) or a numpy Generator", path="rng")
    return rng


def select(counts: npt.ArrayLike, plan: RankPlan, rng: np.random.Generator | None = None) -> tuple[int, int]:
    """The private selection: grid indices ``(lower, upper)`` of the two ends, drawn exactly.

    Parameters
    ----------
    counts : array_like of int, shape (2 G + 1,)
        :func:`histogram` of the data (or the sum of the histograms of its blocks).
    plan : RankPlan
        The public plan; ``counts`` must sum to ``plan.n``.
    rng : numpy.random.Generator, optional
        The randomness; None draws fresh OS entropy (the only right choice for a real release).

    Returns
    -------
    (int, int)
        Grid indices in 0..G. A trivial end is 0 (lower) or G (upper). The joint selection may return them
        in either order; :func:`interval` sorts them.

    Notes
    -----
    Each independent selection draws grid point j with probability proportional to
    ``exp(-rate d(j))`` (:func:`end_distances`), an exponential mechanism with a sensitivity-1 utility at
    ``epsilon = 2 rate``; the joint selection draws the pair with probability proportional to
    ``exp(-rate max(d_lower(i), d_upper(j)))``, also sensitivity 1. Both are exact (:func:`exact_choice`
    for the distance class, a uniform integer within it).
    """
    generator = _generator(rng)
    checked = _check_counts(counts, plan)
    if plan.variant == "joint":
        lower = end_distances(checked, plan, "lower", tilted=False)
        upper = end_distances(checked, plan, "upper", tilted=False)
        return _draw_joint(generator, lower, upper, plan.lower.rate)
    low_index = (
        0 if plan.lower.trivial else _draw_end(generator, end_distances(checked, plan, "lower"), plan.lower.rate)
    )
    high_index = (
        plan.grid_size
        if plan.upper.trivial
        else _draw_end(generator, end_distances(checked, plan, "upper"), plan.upper.rate)
    )
    return low_index, high_index


def interval(indices: tuple[int, int], plan: RankPlan, low: float, high: float) -> tuple[float, float]:
    """Post-processing: the grid points of the two indices, in order.

    The lower index was selected on the data rounded down and the upper on the data rounded up, so the
    grid points themselves are the interval (no widening; see :func:`histogram`). Sorting can only help:
    the sorted interval misses theta only if the lower point is above it or the upper point below it.
    """
    first, second = sorted(int(i) for i in indices)
    if first < 0 or second > plan.grid_size:
        raise ConfigError("grid indices must lie in 0..grid_size", path="indices")
    edges = grid_edges(low, high, plan.grid_size)
    return float(edges[first]), float(edges[second])


def private_interval(
    x: npt.ArrayLike, low: float, high: float, plan: RankPlan, rng: np.random.Generator | None = None
) -> tuple[float, float]:
    """:func:`histogram`, :func:`select` and :func:`interval` in one call (for studies and examples)."""
    counts = histogram(x, low, high, plan.grid_size)
    return interval(select(counts, plan, rng), plan, low, high)


# ---------------------------------------------------------------------------------------------------------
# Exact output law (audits and tests)


def _end_pmf(distance: IntArray, rate: float) -> FloatArray:
    log_weight = -rate * distance.astype(np.float64)
    pmf: FloatArray = np.exp(log_weight - special.logsumexp(log_weight))
    return pmf


def selection_pmf(counts: npt.ArrayLike, plan: RankPlan) -> FloatArray:
    """The exact law of :func:`select` (before sorting), ``(G + 1, G + 1)``: ``P(lower = i, upper = j)``.

    Computed in floating point from the same distances; meant for small grids (audits and tests).
    """
    checked = _check_counts(counts, plan)
    size = plan.grid_size + 1
    if plan.variant == "joint":
        lower = end_distances(checked, plan, "lower", tilted=False)
        upper = end_distances(checked, plan, "upper", tilted=False)
        log_weight = -plan.lower.rate * np.maximum.outer(lower, upper).astype(np.float64)
        joint: FloatArray = np.exp(log_weight - special.logsumexp(log_weight))
        return joint
    low_pmf = np.zeros(size)
    high_pmf = np.zeros(size)
    if plan.lower.trivial:
        low_pmf[0] = 1.0
    else:
        low_pmf = _end_pmf(end_distances(checked, plan, "lower"), plan.lower.rate)
    if plan.upper.trivial:
        high_pmf[-1] = 1.0
    else:
        high_pmf = _end_pmf(end_distances(checked, plan, "upper"), plan.upper.rate)
    product: FloatArray = np.multiply.outer(low_pmf, high_pmf)
    return product
