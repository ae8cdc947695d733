"""Suggested bounds: public bounds estimated from a charged share of the budget (``docs/concepts.md``).

Bounds are public inputs. When domain knowledge gives none, :func:`suggest_bounds` spends a budget the
analyst chooses, records it in a ledger, and returns bounds that enclose the central quantiles of the data
with a stated probability, for every dataset.

**The grid.** A public log-scale grid of the search range ``(low, high)``: the signed numbers
``m 10^e`` with the mantissas of :data:`MANTISSAS` (the rounded R10 preferred numbers, ratio at most 1.28),
over :data:`DECADES` decades below the largest magnitude of the range, zero when the range holds it, and
the two ends of the range. Records outside the range are clipped to it.

**The selections.** Each end is one exponential mechanism over the grid points whose distance is the
number of records that would have to change for the point to be a target order statistic (sensitivity 1
in rank under the replacement of one record; ties and atoms included). The lower end is selected on the
data rounded down to the grid and the upper end on the data rounded up, so that a selected point at
distance 0 encloses its order statistic (the rounding is outward; no float of the data is ever released,
only a grid point).

**The margin.** An exponential mechanism with rate r over P points lands at distance at least t + 1 with
probability at most ``(P - 1) exp(-r (t + 1))``, since some point has distance 0. Each end's target rank is
moved outward by the smallest such t that bounds this by its share of ``1 - confidence``; then, for every
dataset of n records (clipped to the range),

    P(at most floor(q_low n) records below the lower bound and at most floor((1 - q_high) n) above the upper)
    >= confidence.

When the margin is larger than the tail (``floor(q n) < t``), that end cannot be located at this n and
budget: it is the end of the search range and the other end gets the whole budget; when neither can be,
the call is refused before the data are read (and costs nothing), saying how many records would do.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import numpy.typing as npt

from privframe._rng import RngLike, as_seed_sequence, spawn_generators
from privframe.bounds import Bounds
from privframe.data.arrays import as_data
from privframe.errors import BudgetError, ConfigError, DataError
from privframe.plugin.registry import registry
from privframe.plugin.spending import PrivacySpender
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.privacy.selection import exponential_index

__all__ = [
    "DECADES",
    "DEFAULT_QUANTILES",
    "DEFAULT_SEARCH",
    "MANTISSAS",
    "SuggestedBounds",
    "SuggestionPlan",
    "plan_suggestion",
    "search_grid",
    "selection_pmf",
    "suggest_bounds",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

MANTISSAS = ("1", "1.25", "1.6", "2", "2.5", "3.2", "4", "5", "6.3", "8")
"""The grid's mantissas in each decade: the R10 preferred numbers, rounded (neighbours differ by <= 28%)."""

DECADES = 15
"""Decades of magnitudes below the search range's largest one (for the default range: 1e-6 to 1e9)."""

DEFAULT_SEARCH = (-1e9, 1e9)
"""The default search range: with :data:`DECADES`, the grid is 0 and +-1e-6 .. +-1e9 (303 points)."""

DEFAULT_QUANTILES = (0.01, 0.99)
"""The default tails: the bounds enclose the central 98% of the records."""

_ROUNDING = 1e-9
"""``floor(q n)`` is computed as ``floor(q n + 1e-9)``, so that 0.29 * 100 counts 29 records."""


def _real(value: object, path: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"expected a real number, got {type(value).__name__}", path=path)
    return float(value)


def _pair(value: object, path: str) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ConfigError("expected a pair (low, high)", path=path)
    return _real(value[0], f"{path}.low"), _real(value[1], f"{path}.high")


def _check_search(search: object) -> tuple[float, float]:
    low, high = _pair(search, "search")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ConfigError("the search range must be finite (it is public, and clips the data)", path="search")
    if not low < high:
        raise ConfigError("need low < high", path="search")
    return low, high


def _check_quantiles(quantiles: object) -> tuple[float, float]:
    low, high = _pair(quantiles, "quantiles")
    if not 0.0 < low < high < 1.0:
        raise ConfigError("need 0 < low < high < 1 (the tails the bounds leave out)", path="quantiles")
    return low, high


def _check_confidence(confidence: object) -> float:
    value = _real(confidence, "confidence")
    if not 0.0 < value < 1.0:
        raise ConfigError("must be a number in (0, 1)", path="confidence")
    return value


def _check_budget(budget: object) -> Budget:
    if budget is None:
        raise BudgetError("suggest_bounds is private and needs a budget (the share you decide to spend)", path="budget")
    if not isinstance(budget, (GDP, ApproxDP, PureDP)):
        raise BudgetError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")
    return budget


def search_grid(search: tuple[float, float] = DEFAULT_SEARCH) -> FloatArray:
    """The public grid of a search range: increasing, with both ends of the range (module docstring).

    Parameters
    ----------
    search : (float, float), default (-1e9, 1e9)
        The public search range ``(low, high)``, finite with ``low < high``.

    Returns
    -------
    ndarray of float64
        The grid points, from ``low`` to ``high``; each a double written in decimal (``2.5e3``), never
        computed from data.

    Examples
    --------
    >>> import privframe.suggest as ps
    >>> grid = ps.search_grid((0, 100))
    >>> grid[-11:].tolist()
    [10.0, 12.5, 16.0, 20.0, 25.0, 32.0, 40.0, 50.0, 63.0, 80.0, 100.0]
    >>> grid.size, float(grid[1])
    (152, 1e-13)
    """
    low, high = _check_search(search)
    largest = max(abs(low), abs(high))
    top = math.floor(math.log10(largest)) + 1 if largest > 0 else 0
    magnitudes = [float(f"{m}e{e}") for e in range(top - DECADES - 1, top + 1) for m in MANTISSAS]
    points = {low, high}
    for magnitude in magnitudes:
        points.update(v for v in (magnitude, -magnitude) if low < v < high)
    if low < 0.0 < high:
        points.add(0.0)
    return np.array(sorted(points), dtype=np.float64)


def _tail(q: float, n: int) -> int:
    """``floor(q n)``: the most records a bound may leave out on its side (below n, as q < 1)."""
    return min(math.floor(q * n + _ROUNDING), n - 1)


def _margin(points: int, epsilon: float, miss: float) -> int:
    """The smallest t >= 0 with ``(points - 1) exp(-(epsilon / 2) (t + 1)) <= miss``."""
    rate = epsilon / 2.0
    t = max(0, math.ceil(math.log(max(points - 1, 1) / miss) / rate) - 1)
    while t > 0 and (points - 1) * math.exp(-rate * t) <= miss:  # the float estimate may be one too high
        t -= 1
    while (points - 1) * math.exp(-rate * (t + 1)) > miss:
        t += 1
    return t


def _selection_epsilon(budget: Budget, selections: int) -> float:
    """The pure epsilon of each of ``selections`` exponential mechanisms that ``budget`` allows.

    ``PureDP(eps)`` and ``ApproxDP(eps, delta)``: ``eps / selections`` (basic composition; the delta is not
    needed). ``GDP(mu)``: each selection is ``pure_dp_gdp_mu(eps_i)``-GDP (every eps-DP mechanism is), and
    the ``selections`` of them compose to at most mu.
    """
    if isinstance(budget, GDP):
        mu_i = budget.mu / math.sqrt(selections)
        while accounting.gdp_compose([mu_i] * selections) > budget.mu:
            mu_i = math.nextafter(mu_i, 0.0)
        return accounting.gdp_pure_epsilon(mu_i)
    return budget.epsilon / selections


@attrs.frozen
class SuggestionPlan:
    """What :func:`suggest_bounds` will do at n, from public inputs only (nothing here depends on the data).

    Parameters
    ----------
    n : int
        The number of records (public).
    grid : ndarray of float64
        The public grid (:func:`search_grid`).
    quantiles, confidence
        As given.
    lower_rank, upper_rank : int or None
        The target order statistic (rank from below, 1..n) of each end; None for an end that is the end of
        the search range (it cannot be located at this n and budget).
    epsilon : float
        The pure epsilon of each selection that runs.
    margins : (int, int)
        How far each target was moved outward (ranks); 0 for an end that does not run.
    """

    n: int
    grid: FloatArray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal), hash=False, repr=False)
    quantiles: tuple[float, float]
    confidence: float
    lower_rank: int | None
    upper_rank: int | None
    epsilon: float
    margins: tuple[int, int]

    @property
    def search(self) -> tuple[float, float]:
        """The search range: the grid's first and last points."""
        return float(self.grid[0]), float(self.grid[-1])

    @property
    def selections(self) -> int:
        """How many exponential mechanisms run (1 or 2)."""
        return int(self.lower_rank is not None) + int(self.upper_rank is not None)

    @property
    def overshoot(self) -> tuple[float, float]:
        """For each end, a bound on the probability that it lands beyond every record (1.0: no bound).

        A grid point beyond all the records has distance equal to the target's depth from its side (the
        rank r from below for the lower end, ``n - r + 1`` for the upper), and some point has distance 0, so
        the end lands there with probability at most ``(P - 1) exp(-(eps / 2) depth)``. Otherwise it lies
        within the records' range rounded outward to the grid. A bound near 1 means the end is likely to be
        far out (the bounds are safe but wide): spend more, or narrow the search range. An end that is the
        search range's own has 1.0.
        """
        rate, others = self.epsilon / 2.0, self.grid.size - 1

        def bound(depth: int | None) -> float:
            return 1.0 if depth is None else min(1.0, others * math.exp(-rate * depth))

        upper_depth = None if self.upper_rank is None else self.n - self.upper_rank + 1
        return bound(self.lower_rank), bound(upper_depth)


def _ends(n: int, points: int, quantiles: tuple[float, float], epsilon: float, miss: float) -> tuple[int, int, int]:
    """The lower target rank, the upper one and the margin at this epsilon and miss share (maybe trivial)."""
    t = _margin(points, epsilon, miss)
    lower = _tail(quantiles[0], n) + 1 - t  # < 1: trivial
    upper = n - _tail(1.0 - quantiles[1], n) + t  # > n: trivial
    return lower, upper, t


def plan_suggestion(
    n: int,
    budget: Budget,
    *,
    search: tuple[float, float] = DEFAULT_SEARCH,
    quantiles: tuple[float, float] = DEFAULT_QUANTILES,
    confidence: float = 0.95,
) -> SuggestionPlan:
    """The public plan of :func:`suggest_bounds` at n; refuses, before any data are read, a budget too small.

    Two selections share the budget and ``1 - confidence`` equally. When one end's margin exceeds its
    tail, that end is the end of the search range (enclosing every clipped record) and the other end is
    replanned with the whole budget and the whole miss; when neither can be located, ``ConfigError``.

    Parameters
    ----------
    n : int
        The number of records.
    budget, search, quantiles, confidence
        As for :func:`suggest_bounds`.

    Returns
    -------
    SuggestionPlan

    Raises
    ------
    ConfigError
        At ``budget`` when neither tail can be located (the message names the n that would do); at
        ``search``, ``quantiles``, ``confidence`` or ``n`` for an invalid value.
    BudgetError
        At ``budget`` for no budget or not a budget.
    """
    budget = _check_budget(budget)
    grid = search_grid(_check_search(search))
    quantiles = _check_quantiles(quantiles)
    confidence = _check_confidence(confidence)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError("must be a positive integer", path="n")
    n, points, miss = int(n), grid.size, 1.0 - confidence

    def make(lower: int | None, upper: int | None, epsilon: float, margins: tuple[int, int]) -> SuggestionPlan:
        return SuggestionPlan(n, grid, quantiles, confidence, lower, upper, epsilon, margins)

    two = _selection_epsilon(budget, 2)
    lower, upper, t = _ends(n, points, quantiles, two, miss / 2.0)
    if lower >= 1 and upper <= n:
        return make(lower, upper, two, (t, t))
    one = _selection_epsilon(budget, 1)
    lower, upper, t = _ends(n, points, quantiles, one, miss)
    lower_room, upper_room = lower - 1, n - upper  # how far inside the tail each target is
    if lower_room >= 0 and lower_room >= upper_room:
        return make(lower, None, one, (t, 0))
    if upper_room >= 0:
        return make(None, upper, one, (0, t))
    wider = max(quantiles[0], 1.0 - quantiles[1])  # the wider tail is located first
    needed = max(1, math.floor(t / wider) - 1)
    while _tail(wider, needed) < t:
        needed += 1
    raise ConfigError(
        f"at n = {n} and {budget} neither tail can be located, so both bounds would be the search range's own: "
        f"even with the whole budget an end needs floor(q n) >= {t} records beyond it (about n >= {needed} "
        "here); give a larger budget, more records, less extreme quantiles, a lower confidence or a narrower "
        "search range from what you know. Nothing was spent",
        path="budget",
    )


def _distances(data: FloatArray, grid: FloatArray, rank: int, side: str) -> IntArray:
    """Each grid point's distance from being the ``rank``-th order statistic of the rounded, clipped data.

    ``data`` is sorted. Lower end (data rounded down): a point e_j has ``below = #{x < e_j}`` records
    rounded below it and ``at = #{x < e_{j+1}}`` rounded at or below it; upper end (rounded up):
    ``at = #{x <= e_j}`` and ``below = #{x <= e_{j-1}}``. Clipping to the grid is implied (a record below
    the first point rounds up to it). ``d = max(below - rank + 1, rank - at, 0)``: the number of records
    that must change for the point to be the order statistic. Replacing one record moves each count by at
    most 1, so d has sensitivity 1.
    """
    n = data.size
    if side == "lower":
        below = np.searchsorted(data, grid, side="left").astype(np.int64)
        at = np.append(below[1:], n)
    else:
        at = np.searchsorted(data, grid, side="right").astype(np.int64)
        at[-1] = n
        below = np.concatenate(([0], at[:-1])).astype(np.int64)
    distance: IntArray = np.maximum(np.maximum(below - rank + 1, rank - at), 0).astype(np.int64)
    return distance


def _event(plan: SuggestionPlan) -> PrivacyEvent:
    ends = {2: "the lower and the upper bound", 1: "the one bound that is not the search range's"}
    return PrivacyEvent(
        label="suggest-bounds",
        mechanism="exponential",
        budget=PureDP(plan.epsilon),
        sensitivity=1.0,
        count=plan.selections,
        note=(
            f"exponential mechanism selecting {ends[plan.selections]} on the public log-scale grid "
            f"({plan.grid.size} points), sensitivity-1 rank distance; exact"
        ),
        details={"grid_points": float(plan.grid.size), "epsilon": plan.epsilon},
    )


@attrs.frozen
class SuggestedBounds:
    """Bounds estimated privately by :func:`suggest_bounds`, and what they cost.

    Parameters
    ----------
    bounds : Bounds
        The suggested bounds: two points of the public grid (pass them as ``bounds=``).
    privacy : Ledger
        The spend: one exponential-mechanism event (``count`` selections), composed by the accountant of the
        budget's unit; add it to your accounting (a :class:`~privframe.Session` does).
    plan : SuggestionPlan
        The public plan: target ranks, margins, grid.
    """

    bounds: Bounds
    privacy: Ledger
    plan: SuggestionPlan

    @property
    def located(self) -> tuple[bool, bool]:
        """Whether each end was selected from the data (False: it is the end of the search range)."""
        return self.plan.lower_rank is not None, self.plan.upper_rank is not None

    def __str__(self) -> str:
        low, high = self.bounds.low, self.bounds.high
        where = {(True, True): "", (True, False): " (upper: the search range's)"}
        where[(False, True)] = " (lower: the search range's)"
        q_low, q_high = self.plan.quantiles
        far = max((o for o, located in zip(self.plan.overshoot, self.located, strict=True) if located), default=0.0)
        caveat = f"; an end may lie far beyond the records (probability <= {far:.2g})" if far >= 0.05 else ""
        return (
            f"bounds ({low:g}, {high:g}){where[self.located]}: enclose the central {q_high - q_low:.0%} of the "
            f"records with probability >= {self.plan.confidence:g}{caveat}; spent {self.privacy.summary()}"
        )


def _one_dimensional(x: npt.ArrayLike) -> FloatArray:
    data = as_data(x)  # the public schema check: finite reals (docs/concepts.md)
    if data.ndim == 2 and data.shape[1] == 1:
        data = data[:, 0]
    if data.ndim != 1:
        raise DataError("suggest_bounds needs one-dimensional data (one column)", path="x")
    return data


@attrs.frozen
class _Prepared:
    """A checked call: the data, its public plan, the budget and the seed (nothing drawn, nothing charged)."""

    data: FloatArray = attrs.field(eq=False, repr=False)  # never printed
    plan: SuggestionPlan
    budget: Budget
    seed: np.random.SeedSequence = attrs.field(eq=False)


def prepare(
    x: npt.ArrayLike,
    budget: Budget,
    *,
    search: tuple[float, float] = DEFAULT_SEARCH,
    quantiles: tuple[float, float] = DEFAULT_QUANTILES,
    confidence: float = 0.95,
    rng: RngLike = None,
) -> _Prepared:
    """Every check and the plan, before anything is charged (a refusal here costs nothing)."""
    budget = _check_budget(budget)
    search = _check_search(search)
    quantiles = _check_quantiles(quantiles)
    confidence = _check_confidence(confidence)
    seed = as_seed_sequence(rng)
    data = _one_dimensional(x)
    plan = plan_suggestion(data.size, budget, search=search, quantiles=quantiles, confidence=confidence)
    return _Prepared(data, plan, budget, seed)


def release(call: _Prepared) -> SuggestedBounds:
    """Charge the selections, then select the ends (nothing after the charge can fail on the data)."""
    plan = call.plan
    accountant = registry.create("accountant", "gdp" if isinstance(call.budget, GDP) else "approx-dp")
    spender = PrivacySpender(accountant, call.budget)
    spender.charge(_event(plan))
    (generator,) = spawn_generators(call.seed, 1)
    grid = plan.grid
    data = np.sort(np.clip(call.data, grid[0], grid[-1]))
    rate = plan.epsilon / 2.0  # exact: halving a double
    last = grid.size - 1

    def select(rank: int | None, side: str, trivial: int) -> int:
        return trivial if rank is None else exponential_index(generator, _distances(data, grid, rank, side), rate)

    low, high = select(plan.lower_rank, "lower", 0), select(plan.upper_rank, "upper", last)
    low, high = _post_process(low, high, last)
    return SuggestedBounds(Bounds(grid[low], grid[high]), spender.ledger(), plan)


def _post_process(low: int, high: int, last: int) -> tuple[int, int]:
    """The selected indices in order, a cell apart at least (post-processing of the released indices).

    Sorting can only widen: the sorted pair leaves out a record only if one of the selected points does.
    Equal indices (all records on one grid point) become that point and the next one up (or down at the
    top), so that the bounds have low < high.
    """
    low, high = min(low, high), max(low, high)
    if low == high:
        return (low, high + 1) if high < last else (low - 1, high)
    return low, high


def selection_pmf(x: npt.ArrayLike, plan: SuggestionPlan) -> FloatArray:
    """The exact law of the released grid indices ``(low, high)``, shape ``(P, P)``, in floating point.

    The two selections are independent, each ``P(j) ~ exp(-(eps / 2) d(j))``, followed by the
    post-processing of :func:`suggest_bounds`. For audits and tests (small data; it reads the data and
    releases nothing).
    """
    grid = plan.grid
    data = np.sort(np.clip(_one_dimensional(x), grid[0], grid[-1]))
    if data.size != plan.n:
        raise ConfigError("the data must have the plan's n records", path="x")
    rate, size = plan.epsilon / 2.0, grid.size

    def end(rank: int | None, side: str, trivial: int) -> FloatArray:
        pmf = np.zeros(size)
        if rank is None:
            pmf[trivial] = 1.0
            return pmf
        log_weight = -rate * _distances(data, grid, rank, side).astype(np.float64)
        weight = np.exp(log_weight - np.max(log_weight))
        result: FloatArray = weight / weight.sum()
        return result

    lower, upper = end(plan.lower_rank, "lower", 0), end(plan.upper_rank, "upper", size - 1)
    pairs = np.multiply.outer(lower, upper)
    law: FloatArray = np.triu(pairs, 1) + np.tril(pairs, -1).T  # sorted
    tied = np.diag(pairs)  # equal indices: the point and the next one up (down at the top)
    law[np.arange(size - 1), np.arange(1, size)] += tied[:-1]
    law[size - 2, size - 1] += tied[-1]
    return law


def suggest_bounds(
    x: npt.ArrayLike,
    budget: Budget,
    *,
    search: tuple[float, float] = DEFAULT_SEARCH,
    quantiles: tuple[float, float] = DEFAULT_QUANTILES,
    confidence: float = 0.95,
    rng: RngLike = None,
) -> SuggestedBounds:
    """Public bounds estimated privately from a budget the analyst chooses to spend on them.

    Two exponential mechanisms select the lower and the upper bound among the points of a public
    log-scale grid of ``search`` (``privframe.suggest``, module docstring): with probability at least
    ``confidence``, for every dataset, at most ``floor(q_low n)`` records lie below the lower bound and at
    most ``floor((1 - q_high) n)`` above the upper one. The bounds are grid points (the rounding is
    outward), so no float computed from the data is released. Spend it from the same total as the
    interval: the budget left for the interval is what remains (a :class:`~privframe.Session` charges both).

    Parameters
    ----------
    x : array_like, shape (n,)
        The records (finite reals; the schema check reads them before anything is charged, as every call
        does). Records outside ``search`` are clipped to it: the guarantee is for the clipped records.
    budget : PureDP, ApproxDP or GDP
        What the suggestion spends, all of it. Pure eps natively (eps / 2 per selection); an (eps, delta)
        budget is spent as pure eps (its delta is not needed); ``GDP(mu)`` as two pure selections whose
        GDP composes to mu (``pure_dp_gdp_mu``).
    search : (float, float), default (-1e9, 1e9)
        The public range to search: finite, ``low < high``. A narrower range from domain knowledge (``(0,
        1e4)`` for a positive quantity) gives a smaller grid and keeps the bounds within it.
    quantiles : (float, float), default (0.01, 0.99)
        The tails the bounds may leave out: ``0 < q_low < q_high < 1``.
    confidence : float, default 0.95
        The probability, for every dataset, that the bounds leave out no more than those tails.
    rng : None, int, SeedSequence or Generator, optional
        None (the default) draws fresh OS entropy, the only right choice for a real release.

    Returns
    -------
    SuggestedBounds
        ``.bounds`` (a :class:`~privframe.Bounds`), ``.privacy`` (the ledger of the spend), ``.plan``.

    Raises
    ------
    BudgetError
        At ``budget`` for no budget or not a budget.
    ConfigError
        At ``search``, ``quantiles``, ``confidence`` or ``rng`` for an invalid value; at ``budget`` when at
        this n and budget neither tail can be located (before the data are read; nothing is spent).
    DataError
        At ``x`` for data that are not finite reals in one column.

    Notes
    -----
    Each selection's distance is the number of records that must change for a grid point to be the target
    order statistic: sensitivity 1 under the replacement of one record (n is public), so the selection at
    rate ``eps_i / 2`` is eps_i-DP, and it is sampled exactly (:func:`privframe.privacy.selection.exponential_index`).
    The targets are moved outward by a margin of ``~ 2 ln((P - 1) / miss) / eps_i`` ranks that bounds the
    chance of landing inside the tail; at small ``n eps`` the tails cannot be located at all (see Raises).

    Examples
    --------
    >>> import numpy as np, privframe as pf
    >>> x = np.random.default_rng(0).lognormal(3.0, 0.5, size=20_000)
    >>> s = pf.suggest_bounds(x, pf.PureDP(0.5), search=(0, 1e6), rng=1)
    >>> s.bounds
    Bounds(low=5.0, high=80.0)
    >>> s.privacy.total
    PureDP(epsilon=0.5)
    """
    return release(prepare(x, budget, search=search, quantiles=quantiles, confidence=confidence, rng=rng))
