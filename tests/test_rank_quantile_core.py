"""The rank-quantile core (docs/methods/rank-quantile.md): privacy by brute force, exact sampling, the
calibration against the exact worst case, coverage on tied data, and the histogram's decomposition.

Most checks are exact computations on tiny grids (every dataset, every replace-one neighbour); the
Monte Carlo ones use fixed seeds and state their standard errors.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

import privframe as pf
from privframe.privacy import accounting
from privframe.privacy import selection as _sampling
from privframe_std.mechanisms import exponential
from privframe_std.methods.rank_quantile import budget, core

# ---------------------------------------------------------------------------------------------------------
# helpers


def _end(depth: int, rate: float, log_factor: float = 0.0, block: int = 0) -> core.EndPlan:
    return core.EndPlan(depth=depth, rate=rate, log_factor=log_factor, tilt_block=block, alpha=0.025, miss=0.0)


def _plan(n: int, size: int, lower: core.EndPlan, upper: core.EndPlan, variant: str = "independent") -> core.RankPlan:
    """A hand-made plan (any depths and rates): privacy must hold for every one of them."""
    eps = (2 * lower.rate,) if variant == "joint" else (2 * lower.rate, 2 * upper.rate)
    return core.RankPlan(n=n, q=0.5, confidence=0.95, grid_size=size, variant=variant, lower=lower, upper=upper,
                         selection_epsilons=eps, route="test", budget=pf.PureDP(sum(eps)))  # fmt: skip


def _datasets(n: int, bins: int) -> list[np.ndarray]:
    """Every histogram of n records on ``bins`` bins."""
    out = []
    for combo in itertools.combinations_with_replacement(range(bins), n):
        out.append(np.bincount(np.array(combo), minlength=bins).astype(np.int64))
    return out


def _neighbours(counts: np.ndarray) -> list[np.ndarray]:
    """Every replace-one neighbour: one record moves from a non-empty bin to another bin."""
    out = []
    for source in np.flatnonzero(counts):
        for target in range(counts.size):
            if target != source:
                moved = counts.copy()
                moved[source] -= 1
                moved[target] += 1
                out.append(moved)
    return out


def _max_log_ratio(plan: core.RankPlan, n: int) -> float:
    worst = 0.0
    for counts in _datasets(n, 2 * plan.grid_size + 1):
        pmf = core.selection_pmf(counts, plan)
        support = pmf > 0  # a trivial end has a one-point law, the same on every dataset
        for other in _neighbours(counts):
            other_pmf = core.selection_pmf(other, plan)
            assert np.array_equal(support, other_pmf > 0)
            ratio = np.log(pmf[support]) - np.log(other_pmf[support])
            worst = max(worst, float(np.max(np.abs(ratio))))
    return worst


def _chi_square_p(observed: np.ndarray, expected_p: np.ndarray) -> float:
    """Chi-square p-value, pooling the cells expected below 5 into one."""
    expected = expected_p * observed.sum()
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


# ---------------------------------------------------------------------------------------------------------
# histogram


def test_histogram_puts_grid_points_and_open_cells_in_their_own_bins() -> None:
    # grid 0, 1, 2, 3, 4 (G = 4): bins 0 {0}, 1 (0,1), 2 {1}, 3 (1,2), 4 {2}, ..., 8 {4}
    x = [-7.0, 0.0, 0.5, 1.0, 1.0, 2.9999, 3.0, 4.0, 9.0]
    counts = core.histogram(x, 0.0, 4.0, 4)
    assert counts.tolist() == [2, 1, 2, 0, 0, 1, 1, 0, 2]
    assert counts.dtype == np.int64


def test_histogram_refuses_non_finite_data_without_printing_it() -> None:
    with pytest.raises(pf.DataError, match="finite") as info:
        core.histogram([1.0, math.nan, 123.456], 0.0, 4.0, 4)
    assert "123" not in str(info.value)


def test_histogram_decomposes_over_blocks_and_the_interval_is_bit_identical() -> None:
    rng = np.random.default_rng(3)
    low, high, size = -5.0, 5.0, 2**10
    edges = core.grid_edges(low, high, size)
    x = np.concatenate([rng.normal(size=3000), np.zeros(2000), rng.choice(edges, 500), [-9.0, 9.0]])
    rng.shuffle(x)
    whole = core.histogram(x, low, high, size)
    plan = core.plan(x.size, 0.3, 0.9, pf.PureDP(2.0), size)
    expected = core.interval(core.select(whole, plan, np.random.default_rng(11)), plan, low, high)
    for cuts in ([1, 2, 4000], sorted(rng.choice(x.size, 17, replace=False).tolist()), []):
        blocks = np.split(x, cuts)
        summed = sum(core.histogram(block, low, high, size) for block in blocks)
        np.testing.assert_array_equal(summed, whole)
        got = core.interval(core.select(summed, plan, np.random.default_rng(11)), plan, low, high)
        assert got == expected  # bit for bit


def test_counts_that_do_not_match_the_plan_are_refused() -> None:
    plan = core.plan(50, 0.5, 0.9, pf.PureDP(8.0), 8)
    with pytest.raises(pf.ConfigError, match="sum to the plan's n"):
        core.select(np.ones(17, dtype=np.int64), plan, np.random.default_rng(0))
    with pytest.raises(pf.ConfigError, match="2 \\* grid_size \\+ 1"):
        core.select(np.ones(16, dtype=np.int64), plan, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------------------
# privacy, by brute force over every dataset and neighbour


@pytest.mark.parametrize(
    ("label", "lower", "upper", "variant"),
    [
        ("independent", _end(2, 0.5), _end(2, 0.5), "independent"),
        ("independent, tilted", _end(1, 0.7, block=2), _end(3, 0.3, block=1), "independent"),
        ("one-sided", _end(0, 0.0), _end(2, 1.0, block=1), "one-sided"),
        ("joint", _end(1, 0.6), _end(2, 0.6), "joint"),
    ],
)
def test_output_pmf_of_neighbours_stays_within_e_eps(
    label: str, lower: core.EndPlan, upper: core.EndPlan, variant: str
) -> None:
    """Every dataset of 4 records on a grid of G = 3 (7 bins: 4 grid points, 3 open cells) and every
    replace-one neighbour: the exact output pmfs differ by at most e^eps, eps the sum of the selections'
    epsilons. The worst case reaches at least 60% of eps, so the check is not vacuous."""
    plan = _plan(4, 3, lower, upper, variant)
    eps = sum(plan.selection_epsilons) if variant != "one-sided" else 2 * upper.rate
    worst = _max_log_ratio(plan, 4)
    assert worst <= eps + 1e-9, label
    assert worst >= 0.6 * eps, label


def test_the_audit_catches_a_selection_without_the_factor_one_half() -> None:
    """A broken selection at rate eps (utility not halved) is only 2 eps-DP: the same audit fails it."""
    eps = 1.0
    broken = _plan(4, 3, _end(0, 0.0), _end(2, eps), "one-sided")  # rate eps claims eps-DP
    assert _max_log_ratio(broken, 4) > 1.2 * eps


def test_each_selection_is_bounded_range() -> None:
    """eps-BR: for each neighbour pair the log-ratio's range over the outputs is at most eps (the GDP route
    relies on it), while its maximum alone can reach eps."""
    rate = 0.6
    plan = _plan(4, 3, _end(0, 0.0), _end(2, rate, block=1), "one-sided")
    widest = 0.0
    for counts in _datasets(4, 7):
        log_p = np.log(core.selection_pmf(counts, plan)[0])
        for other in _neighbours(counts):
            ratio = log_p - np.log(core.selection_pmf(other, plan)[0])
            widest = max(widest, float(np.ptp(ratio)))
    assert widest <= 2 * rate + 1e-9
    assert widest >= 0.9 * 2 * rate


def test_distances_have_sensitivity_one_and_are_quasi_convex() -> None:
    rng = np.random.default_rng(5)
    size, n = 16, 40
    plan = _plan(n, size, _end(9, 0.5, block=3), _end(13, 0.5, block=5))
    for _ in range(200):
        counts = np.bincount(rng.integers(0, 2 * size + 1, n), minlength=2 * size + 1).astype(np.int64)
        other = _neighbours(counts)[rng.integers(0, n)]
        for side in ("lower", "upper"):
            d = core.end_distances(counts, plan, side, tilted=False)
            assert np.max(np.abs(d - core.end_distances(other, plan, side, tilted=False))) <= 1
            centre = int(np.argmin(d))
            assert np.all(np.diff(d[: centre + 1]) <= 0)
            assert np.all(np.diff(d[centre:]) >= 0)
            assert d.min() == 0  # the target order statistic of the rounded data is a grid point


# ---------------------------------------------------------------------------------------------------------
# exact sampling


def _empirical(plan: core.RankPlan, counts: np.ndarray, draws: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    size = plan.grid_size + 1
    observed = np.zeros(size * size, dtype=np.int64)
    for _ in range(draws):
        i, j = core.select(counts, plan, rng)
        observed[i * size + j] += 1
    return observed


@pytest.mark.parametrize("variant", ["independent", "joint"])
def test_draws_follow_the_exact_pmf(variant: str) -> None:
    """8000 draws on a tied dataset (G = 4) against the exact pmf: chi-square at a fixed seed."""
    counts = np.array([1, 0, 2, 1, 3, 0, 0, 1, 2], dtype=np.int64)  # 10 records, atoms at grid points
    plan = _plan(10, 4, _end(3, 0.4, block=2 if variant == "independent" else 0), _end(4, 0.4), variant)
    observed = _empirical(plan, counts, 8000, seed=1)
    assert _chi_square_p(observed, core.selection_pmf(counts, plan).ravel()) > 1e-3


def test_the_decimal_refinement_draws_the_same_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forcing every draw through the decimal interval arithmetic (float error bound set to 1) gives the
    same exact law: chi-square on 3000 draws."""
    monkeypatch.setattr(_sampling, "float_error", lambda classes: 1.0)
    counts = np.array([0, 1, 1, 0, 3, 0, 1, 2, 0], dtype=np.int64)
    plan = _plan(8, 4, _end(2, 0.9), _end(3, 0.9), "joint")
    observed = _empirical(plan, counts, 3000, seed=2)
    assert _chi_square_p(observed, core.selection_pmf(counts, plan).ravel()) > 1e-3


def test_float_error_bound_is_the_exponential_mechanisms_and_holds_on_hard_inputs() -> None:
    """Same bound as the exponential mechanism's; on large counts and distances the float fractions are
    within it of fractions computed at 80 digits."""
    import decimal

    assert _sampling.float_error(1000) == exponential._float_error(1000)
    rng = np.random.default_rng(9)
    for rate in (1e-4, 0.37, 25.0):
        counts = rng.integers(1, 2**62, size=300, dtype=np.int64)
        distances = np.sort(rng.choice(10**7, size=300, replace=False)).astype(np.int64)
        fractions = _sampling._float_fractions(counts, distances - distances.min(), rate)
        with decimal.localcontext() as context:
            context.prec = 80
            r = decimal.Decimal(rate)
            weights = [int(c) * (-(r * int(d - distances.min()))).exp() for c, d in zip(counts, distances, strict=True)]
            total = sum(weights, decimal.Decimal(0))
            exact = np.array([float(x / total) for x in itertools.accumulate(weights)])
        assert np.max(np.abs(fractions - exact)) <= _sampling.float_error(300)


def test_rng_none_draws_os_entropy() -> None:
    plan = core.plan(200, 0.5, 0.9, pf.PureDP(4.0), 64)
    counts = core.histogram(np.linspace(0, 1, 200), 0.0, 1.0, 64)
    draws = {core.select(counts, plan) for _ in range(30)}
    assert len(draws) > 1


# ---------------------------------------------------------------------------------------------------------
# calibration: the bound against the exact worst case


def _wrong_side(pmf_lower: np.ndarray, t: int) -> float:
    return float(pmf_lower[t + 1 :].sum())


@pytest.mark.parametrize(("depth", "rate", "block"), [(2, 0.5, 0), (3, 0.8, 0), (2, 0.6, 2), (1, 1.5, 1)])
def test_miss_bound_dominates_and_equals_the_worst_case_over_datasets(depth: int, rate: float, block: int) -> None:
    """For every dataset of 6 records on G = 3 and every possible population quantile position t (a grid
    index of the data rounded down), with K records rounded to at most e_t: the probability that the
    lower end lands above e_t is at most ``phi(K - depth)`` of the calibration, and the supremum over
    datasets equals it exactly for every K >= depth (two-point data: K at the lower bound, the rest at the
    upper)."""
    n, size = 6, 3
    factor = core.tilt_factor(size, block, rate)
    plan = _plan(n, size, _end(depth, rate, math.log(factor), block), _end(1, rate))
    worst: dict[int, float] = {}
    for counts in _datasets(n, 2 * size + 1):
        pmf = core.selection_pmf(counts, plan).sum(axis=1)
        rounded_down = np.append(np.cumsum(counts)[1::2], n)  # records rounded to at most e_t
        for t in range(size + 1):
            k = int(rounded_down[t])
            worst[k] = max(worst.get(k, 0.0), _wrong_side(pmf, t))
    for k in range(depth, n + 1):
        g = factor * math.exp(-rate * (k - depth + 1))
        assert worst[k] <= g / (1 + g) + 1e-12
        assert worst[k] >= g / (1 + g) - 1e-12  # tight: the calibration is the exact worst case


def test_joint_miss_bound_dominates_the_worst_case() -> None:
    """The joint selection's bound (factor G (G + 1)) holds on every dataset of 5 records on G = 3."""
    n, size, rate, depth = 5, 3, 0.7, 2
    log_pairs = math.log(size * (size + 1))
    plan = _plan(n, size, _end(depth, rate, log_pairs), _end(2, rate, log_pairs), "joint")
    for counts in _datasets(n, 2 * size + 1):
        pmf = core.selection_pmf(counts, plan).sum(axis=1)
        rounded_down = np.append(np.cumsum(counts)[1::2], n)
        for t in range(size + 1):
            k = int(rounded_down[t])
            if k >= depth:
                g = size * (size + 1) * math.exp(-rate * (k - depth + 1))
                assert _wrong_side(pmf, t) <= g / (1 + g) + 1e-12


def _two_point_miss(plan: core.RankPlan) -> float:
    """Exact P(lower end above the quantile) for the distribution with mass q at low and 1 - q at high."""
    n, size = plan.n, plan.grid_size
    total = 0.0
    for k in range(n + 1):
        counts = np.zeros(2 * size + 1, dtype=np.int64)
        counts[0], counts[-1] = k, n - k
        pmf = core.selection_pmf(counts, plan).sum(axis=1)
        total += float(stats.binom.pmf(k, n, plan.q)) * (1.0 - pmf[0])
    return total


def test_the_calibrated_miss_is_attained_and_a_miscalibrated_tail_fails() -> None:
    """n = 200, G = 256, PureDP(1): on the two-point distribution the exact miss of the lower end equals
    the plan's bound (the calibration is minimax), and is below alpha / 2. Calibrating the tail at the
    total epsilon with no 1/2 (the published code's error) picks a rank whose exact miss is about 0.59."""
    n, size, eps = 200, 256, 1.0
    good = core.plan(n, 0.5, 0.95, pf.PureDP(eps), size, variant="independent", tilt=False)
    exact = _two_point_miss(good)
    assert exact <= good.lower.miss <= 0.025
    assert exact >= good.lower.miss - 1e-9
    wrong_depth = core.calibrated_depth(n, 0.5, eps, math.log(size), 0.025)  # tail exp(-eps |err|), total eps
    assert wrong_depth > good.lower_rank
    wrong = _plan(n, size, _end(wrong_depth, good.lower.rate, good.lower.log_factor), good.upper)
    assert _two_point_miss(wrong) > 0.5


def test_tilted_plan_is_exact_on_the_two_point_distribution() -> None:
    n, size = 300, 512
    plan = core.plan(n, 0.4, 0.9, pf.PureDP(2.0), size, variant="independent")
    assert plan.lower.tilt_block > 0
    exact = _two_point_miss(plan)
    assert exact <= plan.lower.miss <= plan.lower.alpha
    # the only slack is where K < depth (bound 1 there; the tilt pulls the end down to the bound instead)
    assert exact >= plan.lower.miss - stats.binom.cdf(plan.lower_rank - 1, plan.n, plan.q) - 1e-12


def test_miss_bound_matches_a_direct_sum() -> None:
    n, p, rate, log_factor = 80, 0.3, 0.2, math.log(1000.0)
    for depth in (1, 10, 24, 80):
        k = np.arange(n + 1)
        phi = np.where(k < depth, 1.0, special.expit(log_factor - rate * (k - depth + 1)))
        direct = float(np.sum(stats.binom.pmf(k, n, p) * phi))
        assert core.miss_bound(depth, n, p, rate, log_factor) == pytest.approx(direct, rel=1e-10, abs=1e-300)


def test_nonprivate_ranks_are_the_exact_binomial_ones() -> None:
    n, q = 100, 0.5
    lower, upper = core.order_statistic_ranks(n, q, 0.95)
    assert (lower, upper) == (40, 61)
    assert stats.binom.cdf(lower - 1, n, q) <= 0.025 < stats.binom.cdf(lower, n, q)
    assert stats.binom.sf(upper - 1, n, q) <= 0.025 < stats.binom.sf(upper - 2, n, q)


# ---------------------------------------------------------------------------------------------------------
# plans


@pytest.mark.parametrize("spec", [pf.PureDP(1.0), pf.ApproxDP(1.0, 1e-6), pf.ApproxDP(5.0, 1e-6), pf.GDP(1.0)])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("n", [100, 2000])
def test_plans_are_valid_and_never_wider_in_rank_than_the_pure_split(spec: pf.Budget, q: float, n: int) -> None:
    plan = core.plan(n, q, 0.95, spec, 2**16)
    lower, upper = core.order_statistic_ranks(n, q, 0.95)
    assert plan.lower.miss <= plan.lower.alpha
    assert plan.upper.miss <= plan.upper.alpha
    assert plan.lower.alpha + plan.upper.alpha <= 1 - 0.95  # the complement of the float confidence
    if plan.variant in ("independent", "joint"):
        assert 1 <= plan.lower_rank <= lower
        assert upper <= plan.upper_rank <= n
    if isinstance(spec, pf.GDP):  # against the exact pure-DP conversion of the same mu
        reference = core.plan(n, q, 0.95, spec, 2**16, gdp_accounting="pure")
    else:  # against the pure split of the same epsilon
        reference = core.plan(n, q, 0.95, pf.PureDP(spec.epsilon), 2**16)
    assert plan.upper_rank - plan.lower_rank <= reference.upper_rank - reference.lower_rank


def test_small_n_gives_one_sided_or_whole_bounds_with_a_flag() -> None:
    none = core.plan(5, 0.5, 0.95, pf.PureDP(0.1), 2**16)
    assert none.variant == "none"
    assert none.trivial
    assert none.selection_epsilons == ()
    counts = core.histogram(np.zeros(5), 0.0, 1.0, 2**16)
    assert core.interval(core.select(counts, none, np.random.default_rng(0)), none, 0.0, 1.0) == (0.0, 1.0)
    one = core.plan(100, 0.5, 0.95, pf.PureDP(1.0), 2**16)
    assert one.variant == "one-sided"
    assert one.lower.trivial
    assert not one.upper.trivial
    assert one.upper.alpha == pytest.approx(0.05)
    assert one.selection_epsilons == (1.0,)


def test_auto_takes_the_smaller_rank_span() -> None:
    for n, eps in ((300, 1.0), (3000, 0.5), (400, 3.0)):
        auto = core.plan(n, 0.5, 0.95, pf.PureDP(eps), 2**8)
        spans = [
            p.upper_rank - p.lower_rank
            for p in (core.plan(n, 0.5, 0.95, pf.PureDP(eps), 2**8, variant=v) for v in ("independent", "joint"))
            if p.variant in ("independent", "joint")
        ]
        assert auto.upper_rank - auto.lower_rank == min(spans)


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"n": 0}, "n"),
        ({"q": 1.0}, "q"),
        ({"confidence": 0.0}, "confidence"),
        ({"grid_size": 0}, "grid_size"),
        ({"grid_size": 2.5}, "grid_size"),
        ({"variant": "both"}, "variant"),
        ({"gdp_accounting": "loose"}, "gdp_accounting"),
    ],
)
def test_plan_refuses_bad_public_inputs(kwargs: dict[str, Any], path: str) -> None:
    args: dict[str, Any] = {"n": 100, "q": 0.5, "confidence": 0.95, "budget": pf.PureDP(1.0), "grid_size": 64}
    args.update(kwargs)
    with pytest.raises(pf.ConfigError) as info:
        core.plan(**args)
    assert info.value.path == path


# ---------------------------------------------------------------------------------------------------------
# budgets


def test_gdp_routes_compose_to_the_budget() -> None:
    for mu in (0.3, 1.0, 3.0):
        br = budget.selection_epsilon(pf.GDP(mu), 2, "bounded-range")
        assert accounting.gdp_compose([budget.bounded_range_gdp_mu(br.epsilon)] * 2) <= mu
        pure = budget.selection_epsilon(pf.GDP(mu), 2, "pure")
        assert accounting.gdp_compose([accounting.pure_dp_gdp_mu(pure.epsilon)] * 2) <= mu
        assert br.epsilon > 1.9 * pure.epsilon
        one = budget.selection_epsilon(pf.GDP(mu), 1)
        assert budget.bounded_range_gdp_mu(one.epsilon) <= mu


def test_bounded_range_tradeoff_is_the_envelope_of_the_two_point_pairs() -> None:
    """f_BR(a) = min over a' in [-eps, 0] of max(1 - e^{a'+eps} a, e^{a'} (1 - a)) (the two-point curves)."""
    eps = 1.3
    shifts = np.linspace(-eps, 0.0, 20001)
    for a in np.linspace(0.01, 0.99, 25):
        envelope = np.min(np.maximum(1 - np.exp(shifts + eps) * a, np.exp(shifts) * (1 - a)))
        assert budget.bounded_range_tradeoff(float(a), eps) <= float(envelope) + 1e-12
        assert budget.bounded_range_tradeoff(float(a), eps) == pytest.approx(float(envelope), abs=5e-5)


@pytest.mark.parametrize("eps", [1e-3, 0.1, 0.5, 1.0, 2.27, 5.0, 10.0, 20.0])
def test_bounded_range_gdp_mu_holds_on_the_whole_curve_and_is_tight(eps: float) -> None:
    """G_mu(a) <= f_BR(a) at every a of a fine grid (log-spaced into both ends) for mu = pure_dp_gdp_mu(eps / 2),
    and a mu smaller by 1e-6 relative fails at the symmetric point."""
    mu = budget.bounded_range_gdp_mu(eps)
    a = np.concatenate([np.logspace(-300, -1, 4000), np.linspace(0.1, 0.9, 4000)[1:-1], 1 - np.logspace(-1, -16, 4000)])
    b = np.concatenate([1 - a[:7998], np.logspace(-1, -16, 4000)])  # 1 - a, exact near a = 1
    z = np.where(a < 0.5, -special.ndtri(np.minimum(a, 0.5)), special.ndtri(b))  # Phi^-1(1 - a), accurately
    g_mu = special.ndtr(z - mu)
    f_br = b / (1 + math.expm1(eps) * a)
    assert np.all(g_mu <= f_br * (1 + 1e-9) + 1e-300)
    corner = 1 / (1 + math.exp(eps / 2))
    smaller = mu * (1 - 1e-6)
    assert special.ndtr(special.ndtri(1 - corner) - smaller) > budget.bounded_range_tradeoff(corner, eps)


def test_approx_dp_is_never_below_the_pure_split_and_its_composition_holds() -> None:
    for eps, delta in ((1.0, 1e-6), (5.0, 1e-6), (1.0, 1e-2)):
        two = budget.selection_epsilon(pf.ApproxDP(eps, delta), 2)
        assert two.epsilon >= eps / 2
        if two.route == "optimal-composition":
            assert accounting.optimal_composition_delta(two.epsilon, 0.0, 2, eps) <= delta
        one = budget.selection_epsilon(pf.ApproxDP(eps, delta), 1)
        assert one.epsilon == eps  # one pure event is charged as it is: more than eps would be refused


# ---------------------------------------------------------------------------------------------------------
# coverage on tied and discrete data (seeded Monte Carlo)


def _coverage(
    draw: Any, theta: float, n: int, q: float, spec: pf.Budget, low: float, high: float, trials: int
) -> float:
    rng = np.random.default_rng(2024)
    plan = core.plan(n, q, 0.95, spec, 2**10)
    hits = 0
    for _ in range(trials):
        lo, hi = core.private_interval(draw(rng, n), low, high, plan, rng)
        hits += lo <= theta <= hi
    return hits / trials


@pytest.mark.parametrize("q", [0.2, 0.5, 0.8])
def test_coverage_on_heavy_ties(q: float) -> None:
    """60% of the records exactly at 0 (a grid point), the rest N(0, 1): theta_q = 0 for q in [0.2, 0.8],
    and q = 0.2, 0.8 sit exactly on the atom's edges (the hardest case for ties). Coverage >= 0.95 - 3 SE."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return np.where(rng.random(n) < 0.6, 0.0, rng.normal(size=n))

    trials = 300
    covered = _coverage(draw, 0.0, 400, q, pf.PureDP(2.0), -5.0, 5.0, trials)
    assert covered >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)


def test_coverage_on_poisson_counts() -> None:
    """Poisson(3) on [0, 50] (atoms inside grid cells): theta_0.5 = 3."""

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.poisson(3.0, n).astype(np.float64)

    trials = 300
    covered = _coverage(draw, 3.0, 300, 0.5, pf.GDP(1.0), 0.0, 50.0, trials)
    assert covered >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [pf.PureDP(1.0), pf.GDP(1.0)])
def test_coverage_on_heavy_ties_at_larger_n(spec: pf.Budget) -> None:
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return np.where(rng.random(n) < 0.6, 0.0, rng.normal(size=n))

    trials = 1000
    covered = _coverage(draw, 0.0, 2000, 0.2, spec, -5.0, 5.0, trials)
    assert covered >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)


def test_distance_classes_match_numpy_unique_on_both_paths() -> None:
    rng = np.random.default_rng(4)
    for spread in (50, 10**9):  # the bincount path and the sort path
        distance = rng.integers(0, spread, size=1000).astype(np.int64) + 7
        values, sizes = core._classes(distance)
        expected_values, expected_sizes = np.unique(distance, return_counts=True)
        np.testing.assert_array_equal(values, expected_values)
        np.testing.assert_array_equal(sizes, expected_sizes)


# ---------------------------------------------------------------------------------------------------------
# the published construction (test-only baseline)


@pytest.mark.parametrize(("n", "q"), [(500, 0.5), (2000, 0.1), (10000, 0.9)])
def test_core_ranks_are_at_least_as_deep_as_the_published_construction(n: int, q: float) -> None:
    """At the same per-end epsilon and resolution (granularity half a grid cell), the untilted core's ranks
    are at least as deep as the baseline's with the correct tail; the baseline with the published tail
    (total eps, no 1/2) would be deeper still, which is what makes it invalid."""
    from baselines import drechsler

    low, high, size, eps = 0.0, 10.0, 2**16, 1.0
    granularity = (high - low) / (2 * size)
    plan = core.plan(n, q, 0.95, pf.PureDP(eps), size, variant="independent", tilt=False)
    k_low, k_high = drechsler.calibrated_ranks(n, q, 0.95, eps / 2, low, high, granularity)
    assert plan.lower_rank >= k_low
    assert plan.upper_rank <= k_high
    wrong_low, wrong_high = drechsler.calibrated_ranks(n, q, 0.95, 4 * eps / 2, low, high, granularity)
    assert wrong_low > plan.lower_rank
    assert wrong_high < plan.upper_rank


def test_the_tilt_is_dropped_where_it_would_drift_to_the_bound() -> None:
    """At n = 100 (one-sided, depth about 20) the points beyond the data could outweigh the target under a
    tilt, so the plan keeps the uniform base measure; at n = 2000 the guard passes and the tilt deepens
    both ranks."""
    small = core.plan(100, 0.5, 0.95, pf.PureDP(1.0), 2**16)
    assert small.upper.tilt_block == 0
    large = core.plan(2000, 0.5, 0.95, pf.PureDP(1.0), 2**16)
    untilted = core.plan(2000, 0.5, 0.95, pf.PureDP(1.0), 2**16, tilt=False)
    assert large.lower.tilt_block > 0
    assert large.upper.tilt_block > 0
    assert large.lower_rank > untilted.lower_rank
    assert large.upper_rank < untilted.upper_rank
    end = large.lower
    steps = (2**16 + 1 + end.tilt_block - 1) // end.tilt_block
    assert end.rate * (end.depth - steps) >= math.log1p(math.exp(end.log_factor)) + core.TILT_MARGIN


def test_suggested_grid_size_follows_n_and_the_budget() -> None:
    assert core.suggested_grid_size(100, pf.PureDP(0.1)) == 2**10
    assert core.suggested_grid_size(500, pf.PureDP(1.0)) == 2**10
    assert core.suggested_grid_size(10_000, pf.PureDP(1.0)) == 2**14
    assert core.suggested_grid_size(10_000, pf.GDP(1.0)) == 2**15
    assert core.suggested_grid_size(10**7, pf.PureDP(1.0)) == 2**16


@pytest.mark.parametrize(
    ("q", "budget_", "side", "atom"),
    [(0.1, pf.PureDP(1.0), "upper", 1.0), (0.5, pf.PureDP(1.0), "lower", 3.0), (0.9, pf.GDP(1.0), "lower", 5.0)],
)
def test_the_tilt_does_not_carry_an_end_across_an_empty_gap_between_atoms(
    q: float, budget_: pf.Budget, side: str, atom: float
) -> None:
    """Integer data on tight bounds (Poisson(3)-like counts on [0, 5.2], each gap between two integers a fifth
    of the grid): the distance is flat across a gap, and a tilt of share * depth steps outweighed it (these
    ends had means 1.92, 2.09 and 4.01: the next atom, or the gap just before it, where the published
    construction stays within a grid cell). With the gap guard's cap each end stays on its atom, exactly
    (the end's law computed in full), while the tilt is still on."""
    n, low, high = 2000, 0.0, 5.2
    values = np.repeat([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 5.2], [100, 300, 450, 450, 340, 200, 160])
    size = core.suggested_grid_size(n, budget_)
    plan = core.plan(n, q, 0.95, budget_, size)
    end = plan.lower if side == "lower" else plan.upper
    assert plan.variant == "independent"
    assert end.tilt_block > 0
    law = core._end_pmf(core.end_distances(core.histogram(values, low, high, size), plan, side), end.rate)
    edges = core.grid_edges(low, high, size)
    step = (high - low) / size
    on_atom = float(law[np.abs(edges - atom) <= step].sum())
    assert on_atom > 0.99
    cap = core.TILT_CAP_RATES / end.rate + core.TILT_CAP_SDS * math.sqrt(n * q * (1 - q))
    assert (size + 1) / end.tilt_block <= cap + 1


def test_the_gap_guard_binds_only_where_the_depth_would_tilt_further() -> None:
    """At n = 100 000 the share of the depth asks for tens of thousands of steps; the cap holds it to
    16 / rate + 4 sds, and the plan stays valid (the miss bound within the allowance)."""
    plan = core.plan(100_000, 0.5, 0.95, pf.PureDP(1.0), 2**16)
    for end, p in ((plan.lower, 0.5), (plan.upper, 0.5)):
        cap = core.TILT_CAP_RATES / end.rate + core.TILT_CAP_SDS * math.sqrt(100_000 * p * (1 - p))
        steps = -(-(2**16 + 1) // end.tilt_block)
        assert steps <= cap + 1
        assert 0.5 * end.depth > cap  # the cap, not the share, set the block
        assert end.miss <= end.alpha
