"""pf.suggest_bounds: private, exact, charged, enclosing, and refusing what it cannot do (privframe.suggest)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.suggest as ps
from privframe.privacy.selection import exponential_index

Shape = Callable[[np.random.Generator, int], np.ndarray]

SHAPES: dict[str, Shape] = {
    "lognormal": lambda r, n: r.lognormal(0.0, 1.0, n),
    "normal": lambda r, n: r.normal(50.0, 10.0, n),
    "bimodal": lambda r, n: np.where(r.random(n) < 0.5, r.normal(-20.0, 3.0, n), r.normal(40.0, 5.0, n)),
    "poisson": lambda r, n: r.poisson(3.0, n).astype(np.float64),  # ties, an atom at 0
    "all-equal": lambda r, n: np.full(n, 7.0),
}


# ---------------------------------------------------------------------------------------------------------
# The grid


def test_the_grid_is_public_log_scale_and_holds_the_search_range() -> None:
    grid = ps.search_grid()
    assert grid.size == 303
    assert grid[0] == -1e9
    assert grid[-1] == 1e9
    assert 0.0 in grid
    positive = grid[grid > 0]
    assert positive[0] == 1e-6
    assert np.all(np.diff(grid) > 0)
    assert np.max(positive[1:] / positive[:-1]) <= 1.28  # neighbours within 28%
    narrow = ps.search_grid((0, 100))
    assert narrow[0] == 0.0
    assert narrow[-1] == 100.0
    assert narrow[1] == 1e-13
    assert ps.search_grid((3, 7)).tolist() == [3.0, 3.2, 4.0, 5.0, 6.3, 7.0]
    assert ps.search_grid((-7, -3)).tolist() == [-7.0, -6.3, -5.0, -4.0, -3.2, -3.0]


# ---------------------------------------------------------------------------------------------------------
# Privacy: the exact law on neighbouring datasets


VALUES = (-5.0, 0.0, 2.5, 2.7, 9.99, 50.0)  # below the range (clipped), on grid points, inside cells, above


def _plan(n: int, lower: int | None, upper: int | None, epsilon: float) -> ps.SuggestionPlan:
    grid = ps.search_grid((0, 10))
    return ps.SuggestionPlan(n, grid, (0.3, 0.7), 0.9, lower, upper, epsilon, (0, 0))


@pytest.mark.parametrize(("lower", "upper"), [(1, 3), (2, 2), (3, 1), (1, None), (None, 2)])
def test_neighbouring_datasets_have_likelihood_ratio_at_most_e_to_the_epsilon(
    lower: int | None, upper: int | None
) -> None:
    """Every multiset of 3 records from VALUES and every replacement of one record: the exact law of the
    released bounds (selection_pmf) has the same support, and its log ratio is at most the plan's total
    epsilon (eps_i per selection that runs); it comes within half of it, so the check has teeth."""
    epsilon = 0.7
    plan = _plan(3, lower, upper, epsilon)
    total = epsilon * plan.selections
    laws = {data: ps.selection_pmf(np.array(data), plan) for data in itertools.combinations_with_replacement(VALUES, 3)}
    worst = 0.0
    for data, law in laws.items():
        for position, value in itertools.product(range(3), VALUES):
            neighbour = tuple(sorted((*data[:position], value, *data[position + 1 :])))
            other = laws[neighbour]
            assert np.array_equal(law > 0, other > 0)
            support = law > 0
            worst = max(worst, float(np.max(np.abs(np.log(law[support]) - np.log(other[support])))))
    assert worst <= total * (1 + 1e-9)
    assert worst >= total / 2


def test_a_plan_from_the_public_inputs_is_private_at_its_budget() -> None:
    """The same check on the plan suggest_bounds itself makes (n = 4, PureDP(40), default search)."""
    plan = ps.plan_suggestion(4, pf.PureDP(40.0), quantiles=(0.2, 0.8))
    assert plan.selections == 2
    assert plan.epsilon == 20.0
    data = [(1.0, 2.0, 3.0, 4.0), (1.0, 2.0, 3.0, 1e12), (-1e12, 2.0, 3.0, 4.0), (1.0, 1.0, 1.0, 1.0)]
    for a, b in itertools.combinations(data, 2):
        if sum(x != y for x, y in zip(sorted(a), sorted(b), strict=True)) != 1:
            continue
        pa, pb = ps.selection_pmf(np.array(a), plan), ps.selection_pmf(np.array(b), plan)
        both = (pa > 1e-300) & (pb > 1e-300)  # far-out cells underflow in floats
        assert np.max(np.abs(np.log(pa[both]) - np.log(pb[both]))) <= 40.0 * (1 + 1e-9)


def _chi_square_p(counts: np.ndarray, law: np.ndarray) -> float:
    keep = law * counts.sum() >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(law[keep], law[~keep].sum()) * counts.sum()
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected).pvalue)


def test_the_released_bounds_follow_the_exact_law() -> None:
    """4000 calls of suggest_bounds against selection_pmf (a spread-out plan): chi-square at a fixed seed."""
    x = np.random.default_rng(3).uniform(1, 100, 400)
    kw: dict[str, Any] = dict(search=(0, 100), quantiles=(0.3, 0.7), confidence=0.2)
    plan = ps.plan_suggestion(400, pf.PureDP(0.6), **kw)
    law = ps.selection_pmf(x, plan)
    assert np.sum(law > 0.01) >= 5  # spread over several cells
    grid = plan.grid
    rng = np.random.default_rng(8)
    counts = np.zeros_like(law)
    for _ in range(4000):
        bounds = pf.suggest_bounds(x, pf.PureDP(0.6), rng=rng, **kw).bounds
        counts[np.searchsorted(grid, bounds.low), np.searchsorted(grid, bounds.high)] += 1
    assert _chi_square_p(counts.ravel(), law.ravel()) > 1e-3


def test_exponential_index_draws_exp_minus_rate_distance() -> None:
    distances = np.array([3, 0, 1, 1, 7, 0, 2, 40], dtype=np.int64)
    rate = 0.45
    law = np.exp(-rate * distances)
    law /= law.sum()
    rng = np.random.default_rng(4)
    counts = np.bincount([exponential_index(rng, distances, rate) for _ in range(6000)], minlength=distances.size)
    assert _chi_square_p(counts.astype(float), law) > 1e-3


# ---------------------------------------------------------------------------------------------------------
# The ledger and the session


@pytest.mark.parametrize("budget", [pf.PureDP(0.5), pf.GDP(0.5), pf.ApproxDP(0.5, 1e-6), pf.GDP(0.5, delta=1e-7)])
def test_the_ledger_charges_the_budget_given(budget: pf.Budget) -> None:
    x = np.random.default_rng(0).lognormal(3.0, 0.5, size=20_000)
    result = pf.suggest_bounds(x, budget, search=(0, 1e6), rng=1)
    (event,) = result.privacy.events
    assert event.mechanism == "exponential"
    assert event.sensitivity == 1.0
    assert event.count == 2
    assert isinstance(event.budget, pf.PureDP)
    total = result.privacy.total
    if isinstance(budget, pf.GDP):
        assert result.privacy.accountant == "gdp"
        assert isinstance(total, pf.GDP)
        assert total.mu == pytest.approx(budget.mu, rel=1e-9)
        assert total.mu <= budget.mu
        assert total.delta == 0.0  # pure selections spend no delta
    else:
        assert result.privacy.accountant == "approx-dp"
        assert event.budget.epsilon == budget.epsilon / 2  # basic split
        assert total is not None
        assert total.epsilon <= budget.epsilon
        assert total.epsilon == pytest.approx(budget.epsilon, rel=1e-4)
    if isinstance(budget, pf.PureDP):
        assert total == budget


def test_an_end_that_cannot_be_located_is_the_search_ranges_and_the_other_gets_the_whole_budget() -> None:
    plan = ps.plan_suggestion(20_000, pf.PureDP(0.1), search=(0, 1e6))
    assert (plan.lower_rank is None) != (plan.upper_rank is None)
    assert plan.selections == 1
    assert plan.epsilon == 0.1
    x = np.random.default_rng(0).lognormal(3.0, 0.5, size=20_000)
    result = pf.suggest_bounds(x, pf.PureDP(0.1), search=(0, 1e6), rng=2)
    assert result.privacy.events[0].count == 1
    assert result.privacy.total == pf.PureDP(0.1)
    if plan.lower_rank is None:
        assert result.bounds.low == 0.0
        assert result.located == (False, True)
    else:
        assert result.bounds.high == 1e6
        assert result.located == (True, False)


def test_a_session_charges_the_suggestion_and_leaves_the_rest_for_the_interval() -> None:
    x = np.random.default_rng(1).normal(40.0, 5.0, size=50_000)
    session = pf.Session(pf.PureDP(1.0))
    suggestion = session.suggest_bounds(x, pf.PureDP(0.2), search=(0, 1000), rng=3)
    assert session.spent == pf.PureDP(0.2)
    assert session.remaining == pf.PureDP(0.8)
    (call,) = session.calls
    assert call.outcome == "released"
    assert call.events == suggestion.privacy.events
    assert session.ledger.events[0].label == "call 1: suggest-bounds"
    interval = session.confidence_interval(
        x, "mean", method="cr-gs", budget=session.remaining, bounds=suggestion.bounds, rng=4
    )
    assert interval.low < 40.0 < interval.high
    assert session.remaining is None
    with pytest.raises(pf.BudgetError, match="over its total"):
        session.suggest_bounds(x, pf.PureDP(0.2), search=(0, 1000))
    assert len(session.calls) == 2


def test_a_session_suggestion_refused_by_its_plan_costs_nothing() -> None:
    session = pf.Session(pf.PureDP(1.0))
    with pytest.raises(pf.ConfigError) as info:
        session.suggest_bounds(np.ones(1000), pf.PureDP(0.1))
    assert info.value.path == "budget"
    assert session.calls == ()
    assert session.spent is None


def test_a_session_file_records_the_suggestion(tmp_path: Any) -> None:
    x = np.random.default_rng(2).normal(40.0, 5.0, size=50_000)
    path = tmp_path / "s.jsonl"
    pf.Session.open(path, pf.GDP(1.0)).suggest_bounds(x, pf.GDP(0.5), search=(0, 1000), rng=5)
    reopened = pf.Session.open(path)
    assert reopened.spent == pf.GDP(0.5)
    assert reopened.calls[0].events[0].label == "suggest-bounds"


# ---------------------------------------------------------------------------------------------------------
# Enclosure and width, seeded Monte Carlo


def _enclosure(shape: Shape, epsilon: float, n: int, reps: int, seed: int) -> tuple[int, float]:
    """(calls whose bounds leave out at most 1% of the records on each side, median width / central-98% width)."""
    rng = np.random.default_rng(seed)
    enclosed, widths = 0, []
    for _ in range(reps):
        x = shape(rng, n)
        bounds = pf.suggest_bounds(x, pf.PureDP(epsilon), rng=rng).bounds
        enclosed += int(np.sum(x < bounds.low) <= n // 100 and np.sum(x > bounds.high) <= n // 100)
        low, high = np.quantile(x, [0.01, 0.99])
        widths.append(bounds.width / (high - low) if high > low else 1.0)
    return enclosed, float(np.median(widths))


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize(("epsilon", "n", "reps"), [(0.1, 100_000, 40), (1.0, 10_000, 150)])
def test_the_bounds_enclose_the_central_98_percent(name: str, epsilon: float, n: int, reps: int) -> None:
    """Default search (-1e9, 1e9), quantiles (0.01, 0.99), confidence 0.95 (the guarantee: every dataset).

    "Enclose": at most 1% of the records below the lower bound and at most 1% above the upper one.
    Measured (seed 11): every shape enclosed in 40/40 calls at eps = 0.1, n = 100000 and in 150/150 at
    eps = 1, n = 10000, and in 200/200 at both settings with 200 calls (``python -m pytest -q
    tests/test_suggest_bounds.py -k enclose``; the 200-call run changes ``reps``): rate 1.000, binomial
    SE 0 (no failure; rule of three, the miss rate is below 1.5% at 95%). Median width: 1.00 (Poisson)
    to 1.28 (normal) times the data's own central-98% width. With the outward margin removed
    (``_margin`` returning 0) the lognormal is enclosed in 25/40 and 120/150 calls: this test fails.
    At eps = 0.1 and n = 1000 no tail can be located at all (the refusal test below).
    """
    enclosed, width = _enclosure(SHAPES[name], epsilon, n, reps, seed=11)
    assert enclosed / reps >= 0.9
    if name != "all-equal":
        assert width <= 1.8


def test_all_equal_records_get_the_grid_cell_around_them() -> None:
    bounds = pf.suggest_bounds(np.full(10_000, 7.0), pf.PureDP(1.0), rng=0).bounds
    assert (bounds.low, bounds.high) == (6.3, 8.0)
    on_grid = pf.suggest_bounds(np.full(10_000, 5.0), pf.PureDP(1.0), rng=0).bounds
    assert (on_grid.low, on_grid.high) == (5.0, 6.3)  # a point of the grid, and the next one up


def test_records_outside_the_search_range_are_clipped_to_it() -> None:
    bounds = pf.suggest_bounds(np.full(1000, 1e12), pf.PureDP(10.0), search=(0, 1e6), rng=0).bounds
    assert (bounds.low, bounds.high) == (8e5, 1e6)


def test_at_eps_0_1_and_n_1000_no_tail_can_be_located_and_nothing_is_spent() -> None:
    """A 1% tail of 1000 records is 10 records; at eps_i = 0.05 their likelihood ratio is e^0.5, so no
    0.1-DP estimate can place a bound near them reliably. The plan says so from n alone, before the
    data are read, naming the n that would do; the message is the same for every dataset of that n."""
    messages = set()
    for x in (np.ones(1000), np.random.default_rng(0).normal(size=1000)):
        with pytest.raises(pf.ConfigError) as info:
            pf.suggest_bounds(x, pf.PureDP(0.1))
        assert info.value.path == "budget"
        messages.add(str(info.value))
    (message,) = messages
    assert "n >= 17400" in message
    assert "Nothing was spent" in message


def test_the_plan_reports_when_an_end_may_land_far_out() -> None:
    wide = ps.plan_suggestion(1000, pf.PureDP(4.0))
    assert wide.selections == 2
    assert wide.overshoot == (1.0, 1.0)
    tight = ps.plan_suggestion(10_000, pf.PureDP(1.0))
    assert max(tight.overshoot) < 1e-4
    x = np.random.default_rng(0).normal(50.0, 10.0, 1000)
    assert "far beyond the records" in str(pf.suggest_bounds(x, pf.PureDP(4.0), rng=1))
    assert "far beyond" not in str(pf.suggest_bounds(np.repeat(x, 10), pf.PureDP(1.0), rng=1))


# ---------------------------------------------------------------------------------------------------------
# Randomness


def test_a_seed_reproduces_and_none_draws_os_entropy() -> None:
    x = np.random.default_rng(3).uniform(1, 100, 400)
    kw: dict[str, Any] = dict(search=(0, 100), quantiles=(0.3, 0.7), confidence=0.2)
    assert pf.suggest_bounds(x, pf.PureDP(0.6), rng=5, **kw) == pf.suggest_bounds(x, pf.PureDP(0.6), rng=5, **kw)
    drawn = {pf.suggest_bounds(x, pf.PureDP(0.6), **kw).bounds for _ in range(30)}
    assert len(drawn) >= 2


# ---------------------------------------------------------------------------------------------------------
# Bad inputs: typed errors naming the parameter, never a value


SECRET = 123456.789


@pytest.mark.parametrize(
    ("kwargs", "error", "path"),
    [
        ({"search": (0, math.inf)}, pf.ConfigError, "search"),
        ({"search": (math.nan, 1)}, pf.ConfigError, "search"),
        ({"search": (5, 5)}, pf.ConfigError, "search"),
        ({"search": (5, 1)}, pf.ConfigError, "search"),
        ({"search": (0, "9")}, pf.ConfigError, "search.high"),
        ({"search": 10}, pf.ConfigError, "search"),
        ({"quantiles": (0.0, 0.99)}, pf.ConfigError, "quantiles"),
        ({"quantiles": (0.01, 1.0)}, pf.ConfigError, "quantiles"),
        ({"quantiles": (0.9, 0.1)}, pf.ConfigError, "quantiles"),
        ({"quantiles": (-0.5, 0.5)}, pf.ConfigError, "quantiles"),
        ({"quantiles": (True, 0.5)}, pf.ConfigError, "quantiles.low"),
        ({"confidence": 1.0}, pf.ConfigError, "confidence"),
        ({"confidence": 0}, pf.ConfigError, "confidence"),
        ({"rng": -1}, pf.ConfigError, "rng"),
        ({"rng": "seed"}, pf.ConfigError, "rng"),
        ({"budget": None}, pf.BudgetError, "budget"),
        ({"budget": 0.5}, pf.BudgetError, "budget"),
    ],
)
def test_bad_parameters_raise_typed_errors_naming_them(kwargs: dict[str, Any], error: type, path: str) -> None:
    x = np.full(100_000, SECRET)
    arguments: dict[str, Any] = {"budget": pf.PureDP(1.0), **kwargs}
    budget = arguments.pop("budget")
    with pytest.raises(error) as info:
        pf.suggest_bounds(x, budget, **arguments)
    assert info.value.path == path
    assert "123456" not in str(info.value)


@pytest.mark.parametrize(
    "x",
    [
        np.array(["1.5", "2.5"]),
        "12",
        np.array([1.0, math.nan, SECRET]),
        np.array([SECRET, math.inf]),
        np.full((10, 2), SECRET),
        np.array([], dtype=float),
        np.array(SECRET),
    ],
)
def test_bad_data_raise_a_data_error_that_prints_no_value(x: Any) -> None:
    session = pf.Session(pf.PureDP(2.0))
    with pytest.raises(pf.DataError) as info:
        session.suggest_bounds(x, pf.PureDP(1.0))
    assert info.value.path == "x"
    assert "123456" not in str(info.value)
    assert session.calls == ()  # a malformed input is not a release and costs nothing


def test_one_column_data_are_accepted() -> None:
    x = np.random.default_rng(0).normal(40.0, 5.0, size=(50_000, 1))
    assert (
        pf.suggest_bounds(x, pf.PureDP(1.0), rng=1).bounds == pf.suggest_bounds(x[:, 0], pf.PureDP(1.0), rng=1).bounds
    )


def test_the_plan_is_a_public_value_that_prints_no_data() -> None:
    plan = ps.plan_suggestion(900, pf.PureDP(0.1), quantiles=(0.01, 0.8))
    assert plan.lower_rank is None  # the 1% tail of 900 is out of reach, the 20% one is not
    assert plan.upper_rank == 900 - 180 + plan.margins[1]
    assert plan == ps.plan_suggestion(900, pf.PureDP(0.1), quantiles=(0.01, 0.8))
    assert plan != ps.plan_suggestion(900, pf.PureDP(0.1), quantiles=(0.01, 0.8), search=(0, 1e9))
    assert plan.search == (-1e9, 1e9)
    prepared = ps.prepare(np.full(900, SECRET), pf.PureDP(0.1), quantiles=(0.01, 0.8))
    assert "123456" not in repr(prepared)
    with pytest.raises(pf.ConfigError, match=r"about n >= 870 "):  # the wider (20%) tail is located first
        ps.plan_suggestion(500, pf.PureDP(0.1), quantiles=(0.01, 0.8))
