"""The private-variance core: sensitivities, split, calibration, coverage, budget spelling, totality.

Statistical tests use fixed seeds and tolerances of k Monte Carlo standard errors, derived next to each
assertion (CONTRIBUTING.md, "Statistical tests"). Coverage is estimated from T seeded trials: at a nominal
0.95, ``SE = sqrt(0.95 * 0.05 / T)``.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privframe as pf
from privframe.errors import ConfigError
from privframe_std.methods import private_variance as pv
from privframe_std.methods.private_variance import calibration
from privframe_std.methods.private_variance.laws import NoiseLaw, sum_sf, sum_upper_quantile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines.noisyvar import noisyvar_interval

UNIT = (0.0, 1.0)


def _plan(n: int = 100, budget: pf.Budget | None = None, bounds: tuple[float, float] = UNIT) -> pv.VariancePlan:
    return pv.plan(n, bounds, budget or pf.PureDP(1.0))


def _release(values: np.ndarray, plan: pv.VariancePlan, uniforms: np.ndarray) -> list[np.ndarray]:
    """Simulated releases: the statistics plus continuous noise at the lattice plans' scales, drawn by inverse
    CDF from shared uniforms (common random numbers across plans)."""
    laws = pv.noise_laws(plan)
    return [values[:, i] + laws[i].ppf(uniforms[:, i]) for i in range(2)]


def _intervals(x: np.ndarray, plan: pv.VariancePlan, seed: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.array([pv.statistics(row, plan) for row in x])
    uniforms = np.random.default_rng(seed).random((x.shape[0], 2))
    low, high, _ = pv.interval(_release(values, plan, uniforms), pv.noise_laws(plan), plan)
    return low, high


# -- sensitivities -----------------------------------------------------------------------------------------


def test_sensitivities_by_brute_force_over_every_neighbour() -> None:
    """Every dataset of n = 3 records on a grid (values outside the bounds included: they are clipped) and
    every replace-one neighbour: the largest change of each computed statistic is at most the claimed
    sensitivity and attains the exact bound (the claim exceeds it only by the rounding margin)."""
    n, bounds = 3, (-1.0, 2.0)
    plan = attrs.evolve(_plan(), n=n, lower=bounds[0], upper=bounds[1], width=bounds[1] - bounds[0])
    grid = [-1.7, -1.0, -0.35, 0.5, 1.3, 2.0, 2.6]
    stats_of = {data: np.array(pv.statistics(np.array(data), plan)) for data in itertools.product(grid, repeat=n)}
    largest = np.zeros(2)
    for data, value in stats_of.items():
        for i, replacement in itertools.product(range(n), grid):
            neighbour = (*data[:i], replacement, *data[i + 1 :])
            largest = np.maximum(largest, np.abs(stats_of[neighbour] - value))
    claimed = np.array(pv.sensitivities(n, plan.width))
    exact = np.array([3.0 / n, 1.5**2 / n])
    assert np.all(largest <= claimed)
    assert np.all(largest >= exact * (1 - 1e-15))
    assert np.all(claimed <= exact * pv.rounding_margin(n) * (1 + 1e-15))


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    offset=st.sampled_from([0.0, -1e6, 3.25e9]),
    width=st.sampled_from([1e-3, 0.7, 3.7, 1e4]),
    n=st.integers(2, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_sensitivities_hold_for_the_computed_doubles(offset: float, width: float, n: int, seed: int) -> None:
    """On awkward doubles (large offsets, values beyond the bounds) a replace-one neighbour moves each computed
    statistic by no more than the claimed sensitivity (the fsum rounding is inside the margin)."""
    rng = np.random.default_rng(seed)
    low, high = offset, offset + width
    plan = attrs.evolve(_plan(), n=n, lower=low, upper=high, width=high - low)
    x = low + width * rng.uniform(-0.2, 1.2, n)
    y = x.copy()
    y[rng.integers(n)] = low + width * rng.choice([-0.5, 0.0, 0.5, 1.0, 1.5, rng.random()])
    change = np.abs(np.subtract(pv.statistics(x, plan), pv.statistics(y, plan)))
    assert np.all(change <= np.array(pv.sensitivities(n, plan.width)))


def test_statistics_are_total_and_never_read_a_data_value_into_an_error() -> None:
    plan = _plan()
    values = pv.statistics(np.r_[np.nan, np.inf, -np.inf, 1e308, -1e308, np.zeros(95)], plan)
    assert all(math.isfinite(v) for v in values)
    with pytest.raises(ConfigError, match="n = 100") as info:
        pv.statistics(np.full(7, 0.123456789), plan)
    assert "0.123" not in str(info.value)


# -- the split and the spelling of the budget --------------------------------------------------------------


@pytest.mark.parametrize(
    "budget", [pf.PureDP(1.0), pf.ApproxDP(1.0, 1e-6), pf.ApproxDP(5.0, 1e-6), pf.GDP(1.0)], ids=str
)
def test_the_split_composes_to_the_budget(budget: pf.Budget) -> None:
    plan = _plan(budget=budget)
    first, second = (release.parameter for release in plan.releases)
    if plan.spelling == "laplace":
        assert all(isinstance(r.budget, pf.PureDP) for r in plan.releases)
        assert first + second <= budget.epsilon  # type: ignore[union-attr]
        assert first == pytest.approx(plan.share * budget.epsilon)  # type: ignore[union-attr]
    else:
        assert plan.spelling == "gaussian"
        assert isinstance(budget, pf.GDP)
        assert math.hypot(first, second) <= budget.mu
        assert first**2 == pytest.approx(plan.share * budget.mu**2)
    assert 0.5 < plan.share < 1.0
    assert plan.inflation >= 0.0
    assert [r.sensitivity for r in plan.releases] == list(pv.sensitivities(plan.n, plan.width))


def test_the_split_minimises_the_criterion_on_its_grid() -> None:
    """The chosen share's coarse criterion is the smallest of the grid's (the plan's search, re-run here)."""
    from privframe_std.methods.private_variance import core

    plan = _plan()
    scores = {
        float(share): core._plan_at(100, 0.0, 1.0, 1.0, pf.PureDP(1.0), 0.95, "laplace", float(share), False).criterion
        for share in core._SHARES
    }
    assert min(scores, key=scores.__getitem__) == pytest.approx(plan.share, abs=0.026)


def test_approx_dp_spells_its_budget_as_pure_laplace_when_gaussian_noise_is_louder() -> None:
    """At (1, 1e-6) the Gaussian mechanism's mu = 0.237 gives noise sd 4.2 Delta against Laplace's 1.41 Delta at
    eps = 1: the plan is exactly the pure-eps plan."""
    pure, approx = _plan(budget=pf.PureDP(1.0)), _plan(budget=pf.ApproxDP(1.0, 1e-6))
    assert approx.spelling == "laplace"
    assert approx.releases == pure.releases
    assert approx.inflation == pure.inflation


@pytest.mark.slow
def test_approx_dp_takes_gaussian_noise_only_where_it_is_quieter_on_both_releases() -> None:
    pure, approx = _plan(500, pf.PureDP(1.0)), _plan(500, pf.ApproxDP(1.0, 0.05))
    assert approx.spelling != "laplace"
    for mine, theirs in zip(approx.releases, pure.releases, strict=True):
        assert mine.nominal_law().variance <= theirs.nominal_law().variance


def test_budget_spelling_is_never_wider_on_the_same_data_and_seeds() -> None:
    """Mean width over 150 seeded datasets at ApproxDP(1, 1e-6) is at most (here: equal to) PureDP(1)'s."""
    rng = np.random.default_rng(11)
    x = rng.normal(0.4, 0.1, (150, 100))
    widths = []
    for budget in (pf.PureDP(1.0), pf.ApproxDP(1.0, 1e-6)):
        low, high = _intervals(x, _plan(budget=budget), seed=5)
        widths.append(np.mean(high - low))
    assert widths[1] <= widths[0]


@pytest.mark.slow
def test_budget_spelling_with_gaussian_noise_is_narrower_on_the_same_data_and_seeds() -> None:
    """At ApproxDP(1, 0.05) the plan spends the budget on Gaussian noise (quieter on both releases); on the
    same 300 datasets and uniforms its mean width is below PureDP(1)'s."""
    rng = np.random.default_rng(12)
    x = rng.normal(5.0, 1.0, (300, 500))
    widths = []
    for budget in (pf.PureDP(1.0), pf.ApproxDP(1.0, 0.05)):
        low, high = _intervals(x, _plan(500, budget, (0.0, 10.0)), seed=6)
        widths.append(np.mean(high - low))
    assert widths[1] <= widths[0]


# -- the calibration ---------------------------------------------------------------------------------------


def _model(n: int = 100, eps: float = 1.0, share: float = 0.85) -> calibration.CoverageModel:
    return calibration.CoverageModel(
        n=n,
        mean_law=NoiseLaw("laplace", 1.0 / (n * share * eps)),
        spread_law=NoiseLaw("laplace", 0.25 / (n * (1.0 - share) * eps)),
        confidence=0.95,
        t_factor=calibration.t_factor(n, 0.95),
    )


def test_half_width_table_matches_the_direct_quantile() -> None:
    model = _model()
    h = calibration.half_width(model)
    v = np.concatenate(([0.0], np.geomspace(1e-9, 0.25, 60), [1.0, 3.0]))
    direct = sum_upper_quantile(0.025, model.t_factor * np.sqrt(v / model.n), model.mean_law)
    assert np.allclose(h(v), direct, rtol=1e-7, atol=0)
    # The inverse is well conditioned where H has risen clear of H(0) (it is flat near v = 0).
    clear = h(v) > h.at_zero * (1 + 1e-2)
    assert np.allclose(h.inverse(h(v[clear])), v[clear], rtol=1e-5)


def test_the_convolution_quantile_is_exact() -> None:
    law = NoiseLaw("laplace", 0.3)
    s = np.array([0.0, 0.01, 0.3, 2.0, 50.0])
    q = sum_upper_quantile(0.025, s, law)
    assert np.allclose(sum_sf(q, s, law), 0.025, rtol=1e-9)
    assert q[0] == pytest.approx(-0.3 * math.log(0.05))


def _two_function_quantile(p: float, s: np.ndarray, law: NoiseLaw) -> np.ndarray:
    """The quantile's Newton search with separate ``sum_sf`` and ``sum_pdf`` calls (the shared-work oracle)."""
    from scipy import special

    from privframe_std.methods.private_variance.laws import sum_pdf

    z = float(-special.ndtri(p))
    low = np.maximum(s * z, law.upper_quantile(p))
    high = s * float(-special.ndtri(p / 2.0)) + law.upper_quantile(p / 2.0)
    x = 0.5 * (low + high)
    for _ in range(40):
        excess = sum_sf(x, s, law) - p
        low = np.where(excess > 0, x, low)
        high = np.where(excess > 0, high, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x + excess / sum_pdf(x, s, law)
        inside = (step > low) & (step < high) & np.isfinite(step)
        moved = np.where(inside, step, 0.5 * (low + high))
        done = bool(np.all(np.abs(moved - x) <= 4e-16 * np.abs(x)))
        x = moved
        if done:
            break
    return x


@pytest.mark.parametrize("scale", [1e-9, 0.003, 0.3, 7.0])
def test_the_shared_work_quantile_is_the_two_function_one_bit_for_bit(scale: float) -> None:
    law = NoiseLaw("laplace", scale)
    s = np.concatenate([[0.0], np.geomspace(1e-12, 1e7, 301) * scale, [3e4 * scale]])
    for p in (0.05, 0.025, 0.005, 1e-6):
        assert np.array_equal(sum_upper_quantile(p, s, law), _two_function_quantile(p, s, law))
        assert sum_upper_quantile(p, s[7], law) == _two_function_quantile(p, s[7:8], law)[0]
        exact = s[(s > 0) & (s <= 1e4 * scale)]  # the regime the shared work takes without indexing
        assert np.array_equal(sum_upper_quantile(p, exact, law), _two_function_quantile(p, exact, law))


def test_coverage_quadrature_matches_a_monte_carlo_of_the_model() -> None:
    """The model's coverage (1-D quadrature) against 400 000 seeded draws of (D, eta_1, eta_2): SE at most
    sqrt(0.25 / 4e5) = 8e-4; tolerance 4 SE."""
    model = _model()
    h = calibration.half_width(model)
    rng = np.random.default_rng(3)
    size = 400_000
    for sigma2, c, delta, k in [(0.01, 0.5, -0.4, 0.5), (0.001, 0.4, 0.45, 1.0), (0.05, 0.0, 0.2, 0.0)]:
        d = rng.normal(0.0, math.sqrt(sigma2 / model.n), size)
        e1 = rng.laplace(0.0, model.mean_law.scale, size)
        e2 = rng.laplace(0.0, model.spread_law.scale, size)
        v = sigma2 + c * d - delta * e1 + e2 + k * model.spread_law.scale
        simulated = np.mean(np.abs(d + e1) <= h(np.maximum(v, 0.0)))
        assert float(calibration.coverage(sigma2, c, delta, k, model)[0]) == pytest.approx(simulated, abs=4 * 8e-4)


def test_the_inflation_is_the_smallest_that_reaches_the_target() -> None:
    model = _model()
    k = calibration.calibrate_inflation(model)
    target = model.confidence - calibration.CALIBRATION_SLACK
    assert calibration.worst_coverage(k, model)[0] >= target
    assert k > 0.05
    assert calibration.worst_coverage(k - 0.05, model)[0] < target


def _step_by_step_inflation(model: calibration.CoverageModel, tolerance: float = 1e-3) -> float:
    """The precise calibration as first written (the oracle): the grid's root, then ``k += tolerance`` one step
    at a time until the refined check passes."""
    from scipy import optimize

    target = model.confidence - calibration.CALIBRATION_SLACK

    def gap(k: float, refine: bool = False) -> float:
        return calibration.worst_coverage(k, model, refine=refine)[0] - target

    k = 0.0
    if gap(0.0) < 0.0:
        low, high = 0.0, 1.0
        while gap(high) < 0.0:
            low, high = high, 2.0 * high
        k = float(optimize.brentq(gap, low, high, xtol=tolerance)) + tolerance
    while gap(k, refine=True) < 0.0:
        k += tolerance
    return k


@pytest.mark.parametrize(
    ("n", "eps", "share"),
    [(100, 1.0, 0.85), (1234, 1.0, 0.85), (400, 5.0, 0.6)],
    ids=["n100", "n1234", "n400-eps5"],
)
def test_the_raised_inflation_is_the_one_a_step_by_step_scan_finds(n: int, eps: float, share: float) -> None:
    """The predicted search over the tolerance steps gives the scan's k to the last bit (at n = 1234 the scan
    takes 23 steps)."""
    model = _model(n, eps, share)
    assert calibration.calibrate_inflation(model) == _step_by_step_inflation(model)


def _scan(gap: Callable[[int], float]) -> int:
    m = 0
    while gap(m) < 0.0:
        m += 1
    return m


@pytest.mark.parametrize(
    "shape",
    [
        lambda m: 0.37 * m - 8.1,  # linear: the calibration's usual case
        lambda m: math.sqrt(m + 1.0) - 6.3,  # concave
        lambda m: 1e-3 * m * m - 2.5,  # convex
        lambda m: math.floor(m / 7.0) - 5.5,  # flat runs
        lambda m: 1e-4 * m - 0.3,  # a slope that predicts beyond the largest jump
        lambda m: 1e-6 * m - 0.3,  # and far beyond
        lambda m: 1.0,  # passes at once
    ],
    ids=["linear", "concave", "convex", "steps", "flat", "flatter", "at-once"],
)
def test_first_passing_is_the_scan_for_an_increasing_gap(shape: Callable[[int], float]) -> None:
    calls: list[int] = []

    def gap(m: int) -> float:
        calls.append(m)
        return float(shape(m))

    assert calibration._first_passing(gap) == _scan(shape)
    assert len(calls) <= 3 * math.log2(_scan(shape) + 2) + 4  # galloping, then halving: O(log m) checks


def test_first_passing_takes_four_checks_on_a_linear_gap() -> None:
    calls: list[int] = []

    def gap(m: int) -> float:
        calls.append(m)
        return 1.86e-5 * m - 4.2e-4  # the n = 1234 calibration's refined gap, roughly

    assert calibration._first_passing(gap) == 23
    assert sorted(set(calls)) == [0, 1, 22, 23]


def test_first_passing_returns_a_passing_step_above_a_failing_one_for_any_gap() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        values = np.cumsum(rng.normal(0.1, 1.0, 400)) - rng.uniform(0.0, 30.0)
        values[-1] = max(values[-1], 1.0)
        m = calibration._first_passing(lambda m, walk=values: float(walk[min(m, 399)]))
        assert values[m] >= 0.0
        assert m == 0 or values[m - 1] < 0.0


@pytest.mark.parametrize("n", [100, 5000])
def test_the_worst_case_reads_the_same_coverages_when_it_skips_the_rare_atom_laws(n: int) -> None:
    """The worst coverage per variance, computed on the credible laws only, is the minimum over every law's
    coverage with the non-credible ones set to +inf (as first written)."""
    model = _model(n)
    grid, fractions = calibration._SIGMA2_GRID, calibration._DELTA_FRACTIONS
    delta = np.sqrt(np.maximum(0.25 - grid, 0.0))[:, None] * fractions[None, :]
    low, high = calibration.coupling_range(grid[:, None], delta)
    rare_low, rare_high = calibration.rare_atom(grid[:, None], delta)
    s2 = np.broadcast_to(grid[:, None], delta.shape)
    couplings = np.concatenate((low, high, np.clip(0.0, low, high)), axis=1)
    credible = np.concatenate(
        (n * rare_low >= calibration.NORMAL_COUNT, n * rare_high >= calibration.NORMAL_COUNT, np.ones_like(low, bool)),
        axis=1,
    )
    assert 0 < credible.sum() < credible.size  # some laws are skipped
    every = calibration.coverage(np.hstack((s2, s2, s2)), couplings, np.hstack((delta, delta, delta)), 0.4, model)
    expected = np.where(credible.reshape(-1), every, np.inf).reshape(grid.size, -1).min(axis=1)
    assert np.array_equal(calibration._worst_at(grid, 0.4, model, calibration.FULL_RANGE), expected)


def test_the_half_width_and_its_slope_share_h_bit_for_bit() -> None:
    for model in (_model(), _model(5000, 0.3)):
        h = calibration.half_width(model)
        w = np.linspace(0.0, h.w_top, 997)
        value, slope = h.with_derivative(w)
        assert h._spline is not None
        assert np.array_equal(value, np.exp(h._spline(w)))
        assert np.array_equal(slope, np.exp(h._spline(w)) * h._spline(w, 1))


@pytest.mark.parametrize("scale", [1e-9, 0.003, 0.3])
def test_the_unbroadcast_laplace_path_is_the_indexed_one_bit_for_bit(scale: float) -> None:
    """``sum_sf`` and ``sum_pdf`` with every s in the exact regime skip the regime indexing; one s = 0 row
    forces the indexed path for the same values."""
    from privframe_std.methods.private_variance.laws import sum_pdf

    law = NoiseLaw("laplace", scale)
    s = np.geomspace(1e-6, 9e3, 40)[:, None] * scale
    x = np.random.default_rng(2).uniform(0.0, 20.0, (40, 33)) * (s + scale)
    mixed_s, mixed_x = np.vstack([s, [[0.0]]]), np.vstack([x, x[:1]])
    assert np.array_equal(sum_sf(x, s, law), sum_sf(mixed_x, mixed_s, law)[:-1])
    assert np.array_equal(sum_pdf(x, s, law), sum_pdf(mixed_x, mixed_s, law)[:-1])
    assert np.array_equal(sum_sf(x[:, 0], s[:, 0], law), sum_sf(mixed_x[:, 0], mixed_s[:, 0], law)[:-1])


def test_the_coupling_range_holds_every_law_and_its_ends_are_two_point_laws() -> None:
    """c = mu_3 / sigma^2 + mu - 1/2 for 2000 random laws on [0, 1] (2 to 5 atoms) lies in coupling_range."""
    rng = np.random.default_rng(4)
    for _ in range(2000):
        atoms = rng.random(rng.integers(2, 6))
        weights = rng.dirichlet(np.ones(atoms.size))
        mu = float(weights @ atoms)
        var = float(weights @ (atoms - mu) ** 2)
        c = float(weights @ (atoms - mu) ** 3) / var + mu - 0.5
        low, high = calibration.coupling_range(var, mu - 0.5)
        assert low - 1e-9 <= c <= high + 1e-9
    mu, var = 0.3, 0.05  # the ends: {0, mu + var / mu} and {mu - var / (1 - mu), 1}
    low, high = calibration.coupling_range(var, mu - 0.5)
    for x1, x2, end in [(0.0, mu + var / mu, low), (mu - var / (1 - mu), 1.0, high)]:
        p = (mu - x1) / (x2 - x1)
        third = (1 - p) * (x1 - mu) ** 3 + p * (x2 - mu) ** 3
        assert third / var + mu - 0.5 == pytest.approx(float(end))


def test_v_at_the_true_mean_is_the_second_moment_about_it_plus_the_coupling() -> None:
    """The identity the coverage model rests on: S2 - delta S1 = M + delta D - delta eta_1 + eta_2."""
    rng = np.random.default_rng(8)
    y, mu = rng.random(50), 0.37
    e1, e2 = 0.013, -0.004
    s1 = y.mean() - 0.5 + e1
    s2 = np.mean((y - 0.5) ** 2) + e2
    delta, d = mu - 0.5, y.mean() - mu
    assert s2 - delta * s1 == pytest.approx(np.mean((y - mu) ** 2) + delta * d - delta * e1 + e2, abs=1e-15)


# -- the interval ------------------------------------------------------------------------------------------


def test_the_interval_is_inside_the_bounds_and_never_empty_for_any_release() -> None:
    plan = _plan(bounds=(3.0, 5.0))
    laws = pv.noise_laws(plan)
    r1 = np.array([np.nan, np.inf, -np.inf, -1e300, 1e300, 3.0, 0.0, 4.0, 4.5, 2.0, 1e-300])
    r2 = np.array([0.0, np.nan, -np.inf, np.inf, 1e300, -5.0, 0.25, 0.0, 2.0, 1e-300, 0.5])
    low, high, centre = pv.interval((r1, r2), laws, plan)
    assert np.all((low >= 3.0) & (low < high) & (high <= 5.0))
    assert np.all((low <= centre) & (centre <= high))


def test_the_interval_keeps_a_positive_width_where_the_bounds_swallow_its_digits() -> None:
    plan = _plan(bounds=(1e15, 1e15 + 0.5))
    low, high, _ = pv.interval((np.array([0.25]), np.array([0.0])), pv.noise_laws(plan), plan)
    assert high[0] > low[0]


def test_the_interval_is_equivariant_under_shifts_and_scales_of_the_data_and_bounds() -> None:
    plan, moved = _plan(bounds=(0.0, 1.0)), _plan(bounds=(-7.0, -5.0))
    r = (np.array([0.3, 0.02, 0.9]), np.array([0.05, 0.2, 0.1]))
    laws = pv.noise_laws(plan)
    low, high, _ = pv.interval(r, laws, plan)
    low2, high2, _ = pv.interval(
        (2 * r[0], 4 * r[1]), tuple(law.scaled(f) for law, f in zip(laws, (2, 4), strict=True)), moved
    )
    assert np.allclose(low2, -7.0 + 2 * low, atol=1e-9)
    assert np.allclose(high2, -7.0 + 2 * high, atol=1e-9)


def test_the_interval_contains_every_accepted_mean() -> None:
    """On a fine grid of candidate means, every accepted one lies inside the reported interval (the hull)."""
    from privframe_std.methods.private_variance import core

    plan = _plan(budget=pf.ApproxDP(5.0, 1e-6))
    laws = pv.noise_laws(plan)
    rng = np.random.default_rng(9)
    r1, r2 = rng.uniform(-0.05, 1.05, 30), rng.uniform(-0.02, 0.3, 30)
    low, high, _ = pv.interval((r1, r2), laws, plan)
    mean_law = laws[0].scaled(1.0 + core.GRID_MARGIN)
    shift = np.maximum(r2, 0.0) + plan.inflation * laws[1].scale * (1.0 + core.GRID_MARGIN)
    grid = np.linspace(0.0, 1.0, 801)
    m = np.tile(np.clip(r1, 0.0, 1.0), grid.size)  # every (grid point, release) pair at once
    test = core._Test(m, m - 0.5, np.tile(shift, grid.size), mean_law, plan.n, 0.025, plan.t_factor)
    accepted = (test.slack(np.repeat(grid, r1.size)) >= 0).reshape(grid.size, r1.size)
    inside = (low - 1e-12 <= grid[:, None]) & (grid[:, None] <= high + 1e-12)
    assert accepted.any()
    assert np.all(~accepted | inside)


# -- coverage (seeded) -------------------------------------------------------------------------------------


def _coverage(draw, truth: float, bounds: tuple[float, float], n: int, budget: pf.Budget, trials: int, seed: int):
    rng = np.random.default_rng(seed)
    low, high = _intervals(draw(rng, (trials, n)), _plan(n, budget, bounds), seed + 1)
    return np.mean((low <= truth) & (truth <= high)), np.mean(high - low)


def test_rare_proportions_are_covered_at_small_n() -> None:
    """Bernoulli(0.02) on [0, 1] at n = 100 (where the t interval covers about 0.86): 400 trials, SE =
    sqrt(0.95 * 0.05 / 400) = 0.0109; coverage >= 0.95 - 3 SE."""
    covered, _ = _coverage(lambda r, s: (r.random(s) < 0.02).astype(float), 0.02, UNIT, 100, pf.PureDP(1.0), 400, 21)
    assert covered >= 0.95 - 3 * 0.0109


def test_tied_data_are_covered_at_small_n() -> None:
    """60% zeros and 40% Poisson(4) on [0, 23.3] (10 sd) at n = 100: 400 trials, SE 0.0109, >= 0.95 - 3 SE."""

    def draw(r: np.random.Generator, s: tuple[int, int]) -> np.ndarray:
        return np.where(r.random(s) < 0.6, 0.0, r.poisson(4.0, s).astype(float))

    covered, _ = _coverage(draw, 1.6, (0.0, 23.324), 100, pf.PureDP(1.0), 400, 31)
    assert covered >= 0.95 - 3 * 0.0109


@pytest.mark.slow
@pytest.mark.parametrize("budget", [pf.PureDP(1.0), pf.ApproxDP(5.0, 1e-6), pf.GDP(1.0)], ids=str)
@pytest.mark.parametrize("n", [100, 500, 2000])
def test_coverage_on_rare_and_tied_data(budget: pf.Budget, n: int) -> None:
    """Bernoulli(0.02) on [0, 1] and Poisson(3) on [0, 17.32] (10 sd): 1000 trials, SE 0.0069; >= 0.95 - 3 SE."""
    for draw, truth, bounds, seed in [
        (lambda r, s: (r.random(s) < 0.02).astype(float), 0.02, UNIT, 41),
        (lambda r, s: r.poisson(3.0, s).astype(float), 3.0, (0.0, 17.32), 51),
    ]:
        covered, _ = _coverage(draw, truth, bounds, n, budget, 1000, seed + n)
        assert covered >= 0.95 - 3 * 0.0069


@pytest.mark.slow
def test_not_grossly_conservative_on_normal_data() -> None:
    """Normal data on 10 sd bounds at n = 2000, PureDP(1): 1000 trials (SE 0.0069), within 3 SE of 0.95."""
    covered, _ = _coverage(lambda r, s: r.normal(0.0, 1.0, s), 0.0, (-5.0, 5.0), 2000, pf.PureDP(1.0), 1000, 61)
    assert abs(covered - 0.95) <= 3 * 0.0069


# -- the NoisyVar baseline ---------------------------------------------------------------------------------


def test_noisyvar_baseline_follows_the_paper() -> None:
    """Constant data and a huge variance budget leave sd~ = 0 about half the time: those intervals are the
    Laplace noise's own quantiles, mean~ +- b ln(1 / alpha) with b = W / (0.8 eps n)."""
    rng = np.random.default_rng(0)
    x = np.full((400, 50), 0.5)
    low, high = noisyvar_interval(x, UNIT, 1.0, rng)
    half = 0.5 * (high - low)
    expected = 1.0 / (0.8 * 1.0 * 50) * math.log(20.0)
    assert np.mean(np.isclose(half, expected)) > 0.3
    # The Laplace-quantile intervals cover with probability exactly 0.95 and the SIM ones are wider: 400
    # trials, SE = sqrt(0.95 * 0.05 / 400) = 0.0109, coverage >= 0.95 - 3 SE.
    covered = np.mean((low <= 0.5) & (high >= 0.5))
    assert covered >= 0.95 - 3 * 0.0109


def test_noisyvar_sim_step_sits_inside_the_exact_quantiles() -> None:
    """With negligible noise (eps = 1e9) SIM's half-width estimates ``z sd / sqrt(n)``: the paper's 1000 draws
    fall 0.31% short on average (the interpolated 0.05 and 0.95 sample quantiles of 1000 normals average
    -+1.6397 against -+1.6449), 20 000 draws to within 0.02%. A row's ratio has sd about 2.9% / sqrt(draws /
    1000), so the mean of 4000 rows at 1000 draws has SE 0.046% and of 400 rows at 20 000 draws 0.032%; the
    bounds are the expected values +- 3.5 SE."""
    n, z = 200, 1.6448536269514722
    data = np.random.default_rng(5).normal(0.5, 0.1, (4000, n))
    exact = z * data.std(axis=1, ddof=1) / math.sqrt(n)
    low, high = noisyvar_interval(data, UNIT, 1e9, np.random.default_rng(6), 0.9)
    paper = float(np.mean(0.5 * (high - low) / exact))
    assert abs(paper - 0.99689) <= 3.5 * 0.00046
    low, high = noisyvar_interval(data[:400], UNIT, 1e9, np.random.default_rng(7), 0.9, draws=20_000)
    many = float(np.mean(0.5 * (high - low) / exact[:400]))
    assert abs(many - 0.99984) <= 3.5 * 0.00032
