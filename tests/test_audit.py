"""The empirical privacy auditor (privframe.audit) and an audit of every mechanism and one-shot method.

Every audit follows the same pattern: the honest release passes at its claimed budget (its empirical lower
bound stays below the claim), and a **deliberately broken** variant (half the noise, or a sensitivity without
the kappa factor) is caught. The auditor's own statistics are checked against closed forms, scipy's exact
binomial intervals, and a false-alarm rate measured over many seeded audits.

A method's released numbers are audited with the resample indices held fixed: a test sampler returns one
known index matrix and a recording mechanism captures each release's value and planned noise event, which
are then replayed through the real mechanism in large batches. The one-shot guarantees hold for every index
matrix the sampler can produce, so this is the worst case of the real method, not a re-implementation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.audit import (
    AuditResult,
    additive_release,
    approx_dp_tradeoff,
    audit_additive_mechanism,
    audit_mechanism,
    audit_registered_mechanism,
    audit_smooth_mechanism,
    clopper_pearson,
    gdp_tradeoff,
    tradeoff_curve,
    worst_case_pair,
)
from privframe.privacy import accounting
from privframe.resampling.blocks import draw

N_SAMPLES = 100_000
BATCH = 50_000


def gaussian_shift(shift: float) -> Callable[..., np.ndarray]:
    """N(value * shift, 1): exactly |shift|-GDP between the values 0 and 1."""

    def release(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
        out: np.ndarray = value * shift + rng.standard_normal(batch)
        return out

    return release


def weakened(event: pf.PrivacyEvent, factor: float) -> pf.PrivacyEvent:
    """``event`` with ``factor`` times its noise: an exact lattice release draws integer noise on its event's
    grid, so its noise is scaled through the grid (the value then rounds to a finer grid too)."""
    plan = event.noise
    if isinstance(plan, pp.LatticePlan):
        plan = attrs.evolve(plan, grid=plan.grid * factor)
    return attrs.evolve(event, noise_scale=(event.noise_scale or 0.0) * factor, noise=plan)


def broken(mechanism: Any, budget: pf.Budget, factor: float = 0.5) -> tuple[Callable[..., np.ndarray], pf.Budget]:
    """``mechanism`` with ``factor`` times the planned noise, claiming the honest event's budget.

    An exact lattice release draws integer noise on its event's grid, so its noise is scaled through the grid.
    """
    event = mechanism.plan(1.0, budget, label="audit")
    weak = weakened(event, factor)

    def release(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
        out: np.ndarray = mechanism.apply(np.full(batch, value), weak, rng)
        return out

    return release, event.budget


# ---------------------------------------------------------------------------------------------------------
# The auditor's statistics


@pytest.mark.parametrize(("k", "n"), [(0, 50), (1, 50), (17, 50), (49, 50), (50, 50), (3, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k: int, n: int) -> None:
    low, high = clopper_pearson(np.array([k]), n, 0.99)
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.99, method="exact")
    assert low[0] == pytest.approx(ref.low, abs=1e-12)
    assert high[0] == pytest.approx(ref.high, abs=1e-12)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_gdp_tradeoff_closed_form_and_symmetry(mu: float) -> None:
    alpha = np.linspace(0.0, 1.0, 101)
    g = gdp_tradeoff(alpha, mu)
    assert g == pytest.approx(stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu), abs=1e-12)
    assert gdp_tradeoff(g, mu) == pytest.approx(alpha, abs=1e-9)  # G_mu is an involution
    assert tradeoff_curve(pf.GDP(mu), alpha) == pytest.approx(g, abs=0)


def test_approx_dp_tradeoff_closed_form() -> None:
    alpha = np.linspace(0.0, 1.0, 101)
    eps, delta = 1.0, 0.01
    expected = np.maximum.reduce([np.zeros_like(alpha), 1 - delta - math.e * alpha, (1 - delta - alpha) / math.e])
    assert approx_dp_tradeoff(alpha, eps, delta) == pytest.approx(expected, abs=1e-15)
    assert tradeoff_curve(pf.ApproxDP(eps, delta), alpha) == pytest.approx(expected, abs=1e-15)
    assert tradeoff_curve(pf.PureDP(eps), alpha) == pytest.approx(approx_dp_tradeoff(alpha, eps, 0.0), abs=0)


@pytest.mark.parametrize(("mu", "delta"), [(0.5, 1e-3), (1.0, 1e-6), (1.0, 0.05), (4.0, 1e-4)])
def test_gdp_delta_envelope_is_a_valid_lower_bound(mu: float, delta: float) -> None:
    """Each (eps, delta + delta_mu(eps)) curve is implied by (mu, delta)-GDP: the envelope lies on or above
    every one of them (checked at eps off the grid too, up to the grid's slack) and below G_mu."""
    alpha = np.concatenate([np.logspace(-8, -1, 40), np.linspace(0.1, 1.0, 40)])
    envelope = tradeoff_curve(pf.GDP(mu, delta=delta), alpha)
    assert np.all(envelope <= gdp_tradeoff(alpha, mu) + 1e-12)
    for eps in [0.0, 0.37, 1.0, 2.5, 5.0 * mu]:
        line = approx_dp_tradeoff(alpha, eps, min(delta + accounting.gdp_delta(eps, mu), 1.0))
        assert np.all(envelope >= line - 2e-3)


def test_gdp_delta_envelope_tends_to_g_mu() -> None:
    alpha = np.linspace(1e-4, 1.0, 200)
    envelope = tradeoff_curve(pf.GDP(1.0, delta=1e-12), alpha)
    assert np.max(gdp_tradeoff(alpha, 1.0) - envelope) < 2e-3


def with_parameter(claimed: pf.Budget, value: float) -> pf.Budget:
    """The same kind of claim with mu (GDP) or epsilon replaced by ``value``."""
    if isinstance(claimed, pf.GDP):
        return pf.GDP(value, delta=claimed.delta)
    if isinstance(claimed, pf.ApproxDP):
        return pf.ApproxDP(value, claimed.delta)
    return pf.PureDP(value)


def test_point_bounds_are_the_boundary_of_violation() -> None:
    """A point's ``bound`` is the largest parameter whose curve it violates, for every kind of claim."""
    claims: list[pf.Budget] = [pf.GDP(1.0), pf.GDP(1.0, delta=1e-3), pf.ApproxDP(1.0, 1e-3), pf.PureDP(1.0)]
    for claimed in claims:
        result = audit_mechanism(gaussian_shift(1.4), 0.0, 1.0, claimed, n_samples=5000, rng=1, batch=5000)
        checked = 0
        for point in result.points:
            if not math.isfinite(point.bound) or point.bound <= 1e-5:
                continue
            below = with_parameter(claimed, point.bound * 0.999)
            above = with_parameter(claimed, point.bound * 1.001)
            alpha = np.array([point.alpha_high])
            assert point.beta_high < tradeoff_curve(below, alpha)[0]
            assert point.beta_high >= tradeoff_curve(above, alpha)[0]
            checked += 1
        assert checked > 10


# ---------------------------------------------------------------------------------------------------------
# The auditor on releases whose privacy is known exactly


def test_exact_gaussian_shift_passes_and_its_bound_is_tight() -> None:
    """N(0,1) vs N(1,1) is exactly 1-GDP. With 10^5 samples and 128 Bonferroni-corrected tests the CP margin
    on alpha and beta near 0.3 is about 3.4 SE = 3.4 sqrt(0.21 / 10^5) = 0.005, i.e. ~0.03 in mu: the bound
    lands in (0.9, 1]. Measured: 0.964."""
    result = audit_mechanism(gaussian_shift(1.0), 0.0, 1.0, pf.GDP(1.0), N_SAMPLES, rng=1, batch=BATCH)
    assert result.passed
    assert 0.9 < result.empirical_lower_bound <= 1.0
    assert result.unit == "mu"
    assert result.n_samples == N_SAMPLES
    assert not result.violations
    assert len(result.points) == 2 * len({p.threshold for p in result.points})
    assert "passed" in str(result)


def test_a_too_strong_claim_is_caught() -> None:
    result = audit_mechanism(gaussian_shift(1.3), 0.0, 1.0, pf.GDP(1.0), N_SAMPLES, rng=2, batch=BATCH)
    assert not result.passed
    assert 1.0 < result.empirical_lower_bound <= 1.3
    assert result.violations
    assert "VIOLATION" in str(result)


def test_false_alarm_rate_is_below_the_significance() -> None:
    """40 audits of an exactly 1-GDP release at significance 0.05: each fails with probability <= 0.05 (the
    Bonferroni bound is conservative, so far less). Expected <= 2 failures, SE sqrt(40 * 0.05 * 0.95) = 1.4;
    allow 2 + 3 SE = 6. The lower bounds are all valid (<= 1) exactly when no audit fails."""
    results = [
        audit_mechanism(gaussian_shift(1.0), 0.0, 1.0, pf.GDP(1.0), 2000, rng=seed, batch=2000)
        for seed in np.random.SeedSequence(77).spawn(40)
    ]
    failures = sum(not r.passed for r in results)
    assert failures <= 6
    assert sum(r.empirical_lower_bound > 1.0 for r in results) == failures


def test_randomized_response_discrete_outputs() -> None:
    """Randomised response keeps the bit with probability e^eps / (1 + e^eps): exactly eps-DP. Its only
    informative test has alpha = beta = 1 / (1 + e^eps) = 0.27 (SE 0.0014 at 10^5), so the bound is close."""
    eps = 1.0
    keep = math.exp(eps) / (1 + math.exp(eps))

    def release(bit: float, rng: np.random.Generator, batch: int, p: float = keep) -> np.ndarray:
        flip = rng.random(batch) >= p
        return np.where(flip, 1.0 - bit, bit)

    honest = audit_mechanism(release, 0.0, 1.0, pf.PureDP(eps), N_SAMPLES, rng=3, batch=BATCH)
    assert honest.passed
    assert 0.9 < honest.empirical_lower_bound <= eps
    assert honest.unit == "epsilon"
    leaky = math.exp(1.5) / (1 + math.exp(1.5))
    caught = audit_mechanism(
        lambda b, g, batch: release(b, g, batch, leaky), 0.0, 1.0, pf.PureDP(eps), N_SAMPLES, rng=3, batch=BATCH
    )
    assert not caught.passed
    assert 1.4 < caught.empirical_lower_bound <= 1.5


def test_mu_delta_claim_allows_a_catastrophe_of_probability_delta() -> None:
    """With probability 0.01 the release reveals the input outright, else it is 1-GDP: (1, 0.01)-GDP holds,
    1-GDP and (1, 0.005)-GDP do not (the catastrophe shows in ~1000 of 10^5 releases)."""

    def release(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
        out = value + rng.standard_normal(batch)
        out[rng.random(batch) < 0.01] = 100.0 * (2 * value - 1)
        return out

    audit = {
        str(claim): audit_mechanism(release, 0.0, 1.0, claim, N_SAMPLES, rng=4, batch=BATCH)
        for claim in (pf.GDP(1.0, delta=0.01), pf.GDP(1.0), pf.GDP(1.0, delta=0.005))
    }
    assert audit["(1, 0.01)-GDP"].passed
    assert audit["(1, 0.01)-GDP"].empirical_lower_bound <= 1.0
    assert not audit["1-GDP"].passed
    assert not audit["(1, 0.005)-GDP"].passed
    assert audit["(1, 0.005)-GDP"].empirical_lower_bound > 1.0


def test_vector_outputs_projection_and_coordinates() -> None:
    """A 3-d Gaussian shift of norm 1 is 1-GDP. Projected on the estimated mean difference it is detected at
    full strength; coordinate by coordinate each shift is 1/sqrt(3) = 0.577, so that mode proves less."""
    shift = np.ones(3) / math.sqrt(3)

    def release(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
        out: np.ndarray = value * shift + rng.standard_normal((batch, 3))
        return out

    projected = audit_mechanism(release, 0.0, 1.0, pf.GDP(1.0), N_SAMPLES, rng=5, batch=BATCH)
    assert projected.passed
    assert 0.9 < projected.empirical_lower_bound <= 1.0
    assert {p.coordinate for p in projected.points} == {None}
    coords = audit_mechanism(release, 0.0, 1.0, pf.GDP(1.0), N_SAMPLES, rng=5, batch=BATCH, projection="coordinates")
    assert coords.passed
    assert 0.5 < coords.empirical_lower_bound <= 1 / math.sqrt(3)
    assert {p.coordinate for p in coords.points} == {0, 1, 2}


def test_unbatched_release_and_determinism() -> None:
    def one(value: float, rng: np.random.Generator) -> float:
        return value + float(rng.standard_normal())

    first = audit_mechanism(one, 0.0, 1.0, pf.GDP(1.0), 2000, rng=6)
    again = audit_mechanism(one, 0.0, 1.0, pf.GDP(1.0), 2000, rng=6)
    assert first == again
    assert first.passed
    other = audit_mechanism(one, 0.0, 1.0, pf.GDP(1.0), 2000, rng=7)
    assert other.empirical_lower_bound != first.empirical_lower_bound


def test_batch_size_does_not_change_what_is_audited() -> None:
    """Same seed, different batch sizes: the same stream of standard normals, so the same result."""
    a = audit_mechanism(gaussian_shift(1.0), 0.0, 1.0, pf.GDP(1.0), 10_000, rng=8, batch=10_000)
    b = audit_mechanism(gaussian_shift(1.0), 0.0, 1.0, pf.GDP(1.0), 10_000, rng=8, batch=1000)
    assert a.empirical_lower_bound == b.empirical_lower_bound


def _bad_shape(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
    return np.zeros(batch + 1)


def _non_finite(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
    return np.full(batch, np.inf)


def _data_dependent_shape(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
    return np.zeros((batch, 1 + int(value)))


@pytest.mark.parametrize(
    ("kwargs", "error", "prefix"),
    [
        ({"claimed": 1.0}, pf.BudgetError, "claimed:"),
        ({"n_samples": 10}, pf.ConfigError, "n_samples:"),
        ({"n_samples": 1000.5}, pf.ConfigError, "n_samples:"),
        ({"thresholds": 0}, pf.ConfigError, "thresholds:"),
        ({"batch": 0}, pf.ConfigError, "batch:"),
        ({"significance": 1.0}, pf.ConfigError, "significance:"),
        ({"significance": 0.0}, pf.ConfigError, "significance:"),
        ({"projection": "pca"}, pf.ConfigError, "projection:"),
        ({"calibration": 1}, pf.ConfigError, "calibration:"),
        ({"release": "gaussian"}, pf.ConfigError, "release:"),
        ({"release": _bad_shape}, pf.ConfigError, "release:"),
        ({"release": _non_finite}, pf.ConfigError, "release:"),
        ({"release": _data_dependent_shape}, pf.ConfigError, "release:"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[pf.PrivframeError], prefix: str) -> None:
    call: dict[str, Any] = {"release": gaussian_shift(1.0), "claimed": pf.GDP(1.0), "n_samples": 1000, "batch": 500}
    call.update(kwargs)
    with pytest.raises(error) as info:
        audit_mechanism(call.pop("release"), 0.0, 1.0, call.pop("claimed"), rng=0, **call)
    assert str(info.value).startswith(prefix)


def test_worst_case_pairs_attain_the_mean_sensitivity() -> None:
    d0, d1 = worst_case_pair(10, (-1.0, 3.0))
    assert d0.tolist() == [-1.0] * 10
    assert d1.tolist() == [3.0] + [-1.0] * 9
    assert abs(d1.mean() - d0.mean()) == pytest.approx(4.0 / 10)
    v0, v1 = worst_case_pair(5, pf.L2Ball(2.0))
    assert np.linalg.norm(v1.mean(axis=0) - v0.mean(axis=0)) == pytest.approx(2 * 2.0 / 5)
    assert np.all(np.linalg.norm(v1, axis=1) <= 2.0 + 1e-15)
    with pytest.raises(pf.ConfigError, match=r"^n:"):
        worst_case_pair(0, (0.0, 1.0))


# ---------------------------------------------------------------------------------------------------------
# Mechanisms: no violation at the claimed budget, and half the noise is caught


def _mechanism(name: str, **options: Any) -> Any:
    return pf.registry.create("mechanism", name, options)


def _gaussian() -> pp.Mechanism:
    mechanism: pp.Mechanism = _mechanism("gaussian")
    return mechanism


@pytest.mark.parametrize(
    ("name", "budget", "unit"),
    [
        ("gaussian", pf.GDP(1.0), "mu"),
        ("gaussian", pf.GDP(0.5), "mu"),
        ("gaussian", pf.ApproxDP(2.0, 1e-6), "mu"),  # recorded as the tight GDP(mu*) it is calibrated to
        ("laplace", pf.PureDP(1.0), "epsilon"),
        ("laplace", pf.ApproxDP(0.5, 1e-6), "epsilon"),
    ],
)
def test_mechanism_passes_at_its_claim_and_half_noise_is_caught(name: str, budget: pf.Budget, unit: str) -> None:
    mechanism = _mechanism(name)
    honest = audit_additive_mechanism(mechanism, budget, n_samples=N_SAMPLES, rng=10)
    claimed = mechanism.plan(1.0, budget, label="audit").budget
    assert honest.claimed == claimed
    assert honest.unit == unit
    assert honest.passed, str(honest)
    assert honest.empirical_lower_bound > 0.8 * honest.claimed_value
    release, claimed = broken(mechanism, budget)
    caught = audit_mechanism(release, 0.0, 1.0, claimed, N_SAMPLES, rng=10, batch=BATCH)
    assert not caught.passed, str(caught)
    assert caught.empirical_lower_bound > 1.5 * caught.claimed_value


def test_gaussian_is_also_audited_against_the_approx_dp_budget_it_was_given() -> None:
    """Calibrated to (2, 1e-6)-DP through the tight conversion, the Gaussian mechanism meets that curve too."""
    release, _ = additive_release(_mechanism("gaussian"), pf.ApproxDP(2.0, 1e-6))
    result = audit_mechanism(release, 0.0, 1.0, pf.ApproxDP(2.0, 1e-6), N_SAMPLES, rng=11, batch=BATCH)
    assert result.passed
    assert result.unit == "epsilon"


def test_laplace_sensitivity_is_the_l2_norm_scaled_to_l1_in_d_dimensions() -> None:
    """In d = 4 the Laplace mechanism takes an L2 sensitivity and scales it to L1 by sqrt(d). The worst L1
    change for an L2 change of 1 is the diagonal (1, 1, 1, 1) / 2; with the L2 scale used as if it were L1
    (the bug the sqrt(d) prevents) the release is 2-DP instead of 1-DP."""
    laplace = _mechanism("laplace")
    event = laplace.plan(1.0, pf.PureDP(1.0), label="audit", dimension=4)
    shift = np.full(4, 0.5)

    def release(event: pf.PrivacyEvent) -> Callable[..., np.ndarray]:
        def run(value: float, rng: np.random.Generator, batch: int) -> np.ndarray:
            out: np.ndarray = laplace.apply(np.tile(value * shift, (batch, 1)), event, rng)
            return out

        return run

    # projected on the mean difference, i.e. the diagonal: the score is the sum of the coordinates
    honest = audit_mechanism(release(event), 0.0, 1.0, event.budget, N_SAMPLES, rng=12, batch=BATCH)
    assert honest.passed
    # the bug: the L2 sensitivity 1 taken as the L1 one, i.e. the lattice planned for Delta_1 = 1, not 2
    wrong = pp.noise.plan_laplace(1.0, 1.0, 4)
    assert wrong.scale == pytest.approx(event.noise_scale / 2, rel=1e-5)
    l1_as_l2 = attrs.evolve(event, noise_scale=wrong.scale, noise=wrong)
    caught = audit_mechanism(release(l1_as_l2), 0.0, 1.0, event.budget, N_SAMPLES, rng=12, batch=BATCH)
    assert not caught.passed


def test_ptr_gdp_passes_and_half_noise_is_caught() -> None:
    """PTR-GDP ("bound" variant) at (1, 1e-6)-GDP on the pair (value 0, bound 1) vs (value 1, bound e^gamma).
    Its proposed log-bound alone is a Gaussian shift by gamma with noise gamma / mu_test: mu_test = 0.707-GDP,
    which the audit sees (~0.68). Halving both noises (doubling mu_test and mu_release) makes that part
    1.41-GDP, above the whole claim."""
    mechanism = _mechanism("ptr-gdp")
    budget = pf.GDP(1.0, delta=1e-6)
    honest = audit_smooth_mechanism(mechanism, budget, gamma=0.1, n_samples=30_000, rng=13)
    assert honest.passed, str(honest)
    assert honest.claimed == budget
    assert 0.6 < honest.empirical_lower_bound <= 1.0

    class HalfNoise:
        name = "ptr-gdp"
        accepts = MappingProxyType({pf.GDP: pf.GDP})

        def plan_smooth(self, gamma: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
            event: pf.PrivacyEvent = mechanism.plan_smooth(gamma, budget, label=label, dimension=dimension)
            details = {**event.details, "mu_test": 2 * event.details["mu_test"]}
            details["mu_release"] = 2 * event.details["mu_release"]
            return attrs.evolve(event, details=details)

        def release_smooth(self, *args: Any, **kwargs: Any) -> Any:
            return mechanism.release_smooth(*args, **kwargs)

        def release_smooth_batch(self, *args: Any, **kwargs: Any) -> Any:
            return mechanism.release_smooth_batch(*args, **kwargs)

    caught = audit_smooth_mechanism(HalfNoise(), budget, gamma=0.1, n_samples=30_000, rng=13)
    assert not caught.passed, str(caught)
    assert caught.empirical_lower_bound > 1.2


def test_ptr_gdp_classic_variant_test_outcome_is_audited() -> None:
    """Classic PTR: the public pass/fail bit is part of the release and is tested as its own coordinate. With the
    public proposal b_0 = 3 the test passes ~99.9% of the time on (0, 1) and ~99% on (1, e^0.1); the released
    value then has noise b_0 / mu_release. The whole is (mu, delta)-GDP."""
    mechanism = _mechanism("ptr-gdp", variant="classic", on_fail="raise")
    budget = pf.GDP(1.0, delta=1e-6)
    generous = 3.0
    result = audit_smooth_mechanism(mechanism, budget, gamma=0.1, proposal=generous, n_samples=20_000, rng=14)
    assert result.passed, str(result)
    passed_share = [p for p in result.points if p.coordinate == 0]
    assert passed_share  # the pass/fail coordinate was tested


def test_exponential_mechanism_passes_and_double_epsilon_is_caught() -> None:
    """The exponential mechanism for the median on the built-in selection pair (four records on [0, 1], one
    moved from 0 to 1), whose largest pointwise privacy loss is 0.86 eps (exact densities below). Threshold
    tests on the output reach ~0.8 eps. Run with twice the epsilon it claims (half the "noise", a density
    exp(eps u) instead of exp(eps u / 2)), it leaks ~1.7 eps and is caught."""
    from privframe_std.mechanisms.exponential import quantile_log_density

    median = pf.registry.create("statistic", "median")
    mechanism = _mechanism("exponential")
    d0, d1 = (np.array([pair]) for pair in pf.audit.SELECTION_PAIR)
    ys = np.linspace(5e-4, 1 - 5e-4, 2000)
    loss = quantile_log_density(d1, 0.5, 1.0, 0.0, 1.0, ys) - quantile_log_density(d0, 0.5, 1.0, 0.0, 1.0, ys)
    assert 0.85 < np.max(np.abs(loss)) <= 1.0
    honest = audit_registered_mechanism(mechanism, pf.PureDP(1.0), n_samples=N_SAMPLES, rng=16, statistic=median)
    assert honest.passed, str(honest)
    assert 0.7 < honest.empirical_lower_bound <= 1.0
    release, claimed = pf.audit.selection_release(mechanism, median, pf.PureDP(2.0))
    caught = audit_mechanism(release, d0[0], d1[0], pf.PureDP(1.0), N_SAMPLES, rng=16, batch=BATCH)
    assert claimed == pf.PureDP(2.0)
    assert not caught.passed, str(caught)
    assert caught.empirical_lower_bound > 1.4


def test_registered_mechanisms_all_have_a_builtin_audit() -> None:
    budgets: dict[str, pf.Budget] = {"ptr-gdp": pf.GDP(1.0, delta=1e-6), "laplace": pf.PureDP(1.0)}
    budgets["exponential"] = pf.PureDP(1.0)
    median = pf.registry.create("statistic", "median")
    for name in pf.registry.names("mechanism"):
        mechanism = _mechanism(name)
        budget = budgets.get(name, pf.GDP(1.0))
        result = audit_registered_mechanism(mechanism, budget, n_samples=5000, rng=15, statistic=median)
        assert isinstance(result, AuditResult)
        assert result.passed, f"{name}: {result}"
    with pytest.raises(pf.ConfigError, match=r"^mechanism:"):
        audit_registered_mechanism(object(), pf.GDP(1.0))
    with pytest.raises(pf.ConfigError, match=r"^statistic:"):
        audit_registered_mechanism(_mechanism("exponential"), pf.PureDP(1.0))


# ---------------------------------------------------------------------------------------------------------
# Methods: the released centre and radius of the one-shot methods


_RECORDED: list[tuple[str, np.ndarray, pf.PrivacyEvent]] = []


@attrs.frozen
class RecordingGaussian:
    """The standard Gaussian mechanism, recording every value it is asked to release with its event."""

    name: ClassVar[str] = "test-recording-gaussian"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pf.GDP: pf.GDP, pf.ApproxDP: pf.GDP})

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        return _gaussian().plan(sensitivity, budget, label=label, dimension=dimension)

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        _RECORDED.append((event.label, np.array(value, dtype=np.float64), event))
        out: pp.Array = _mechanism("gaussian").apply(value, event, rng)
        return out

    def noise_quantile(self, event: pf.PrivacyEvent, p: float) -> float:
        return float(_mechanism("gaussian").noise_quantile(event, p))

    def noise_sd(self, event: pf.PrivacyEvent) -> float:
        return float(_mechanism("gaussian").noise_sd(event))

    def noise_draws(self, event: pf.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        draws: pp.Array = _mechanism("gaussian").noise_draws(event, shape, rng)
        return draws


_SMOOTH_RECORDED: list[tuple[str, np.ndarray, float, pf.PrivacyEvent]] = []


@attrs.frozen
class RecordingPTR:
    """The standard ptr-gdp mechanism, recording every value and smooth bound it is asked to release."""

    name: ClassVar[str] = "test-recording-ptr"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pf.GDP: pf.GDP})

    def plan_smooth(self, gamma: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        event: pf.PrivacyEvent = _mechanism("ptr-gdp").plan_smooth(gamma, budget, label=label, dimension=dimension)
        return event

    def release_smooth(self, value: pp.Array, log_bound: float, event: pf.PrivacyEvent, rng: Any, **kwargs: Any) -> Any:
        _SMOOTH_RECORDED.append((event.label, np.array(value, dtype=np.float64), log_bound, event))
        return _mechanism("ptr-gdp").release_smooth(value, log_bound, event, rng, **kwargs)

    def noise_quantile(self, event: pf.PrivacyEvent, p: float) -> float:
        return float(_mechanism("ptr-gdp").noise_quantile(event, p))

    def noise_sd(self, event: pf.PrivacyEvent) -> float:
        return float(_mechanism("ptr-gdp").noise_sd(event))

    def noise_draws(self, event: pf.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        draws: pp.Array = _mechanism("ptr-gdp").noise_draws(event, shape, rng)
        return draws


@attrs.frozen
class FixedSampler:
    """Returns one fixed index matrix and claims the multiplicity bound ``kappa`` (test-only)."""

    name: ClassVar[str] = "test-fixed"
    rows: tuple[tuple[int, ...], ...] = ((0, 0, 0, 1, 2, 3, 4, 5, 6, 7),)
    kappa: int = 3

    def design(self, n: int) -> pp.Design:
        rows = len(self.rows)
        return pp.Design(n=n, m=len(self.rows[0]), B=rows, kappa=self.kappa, replace=True, block_rows=rows)

    def draw_block(self, design: pp.Design, rng: np.random.Generator, rows: int) -> pp.IndexMatrix:
        return np.array(self.rows, dtype=np.intp)[:rows]


class AuditParts:
    @pp.hookimpl
    def privframe_register_samplers(self, registry: pp.SamplerRegistry) -> None:
        registry.add(FixedSampler)

    @pp.hookimpl
    def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
        registry.add(RecordingGaussian, asserts_privacy=True)
        registry.add(RecordingPTR, asserts_privacy=True)


@pytest.fixture
def audit_parts() -> Iterator[str]:
    name = pf.registry.register(AuditParts(), name="test-audit-parts")
    try:
        yield name
    finally:
        pf.registry.unregister(name)
        _RECORDED.clear()
        _SMOOTH_RECORDED.clear()


def recorded_releases(data: np.ndarray, **options: Any) -> dict[str, tuple[np.ndarray, pf.PrivacyEvent]]:
    """Run cr-gs once and return {label: (value before noise, planned event)} for each release."""
    _RECORDED.clear()
    pf.confidence_interval(data, "mean", method="cr-gs", mechanism="test-recording-gaussian", rng=0, **options)
    return {label: (value, event) for label, value, event in _RECORDED}


def replay(
    records: dict[int, tuple[np.ndarray, pf.PrivacyEvent]], clamp: bool, noise_factor: float = 1.0
) -> Callable[..., np.ndarray]:
    """A batched release that adds the recorded event's noise (times ``noise_factor``) to the recorded value
    of the dataset it is given (keyed by 0 / 1), clamped at 0 for a radius like the method does."""
    gaussian = _mechanism("gaussian")

    def release(which: int, rng: np.random.Generator, batch: int) -> np.ndarray:
        value, event = records[which]
        event = weakened(event, noise_factor)
        out: np.ndarray = gaussian.apply(np.tile(value, (batch, 1)), event, rng)
        return np.maximum(out, 0.0) if clamp else out

    return release


@pytest.mark.usefixtures("audit_parts")
def test_cr_gs_centre_and_radius_pass_and_broken_variants_are_caught() -> None:
    """CR-GS on the worst case: n = 1000 records in [0, 1], all 0, vs one flipped to 1; one resample of m = 10
    in which that record appears kappa = 3 times. The centre moves by Delta_n = 1/n exactly (tight); the radius
    Q = tau_m R moves by sqrt(10) (3/10 - 1/1000), 99.3% of its claimed sensitivity sqrt(10) (3/10 + 1/1000).

    Broken variants: the centre with half the noise (its 0.707-GDP release becomes 1.41-GDP), and the radius
    computed by the real method from a sampler that reports kappa = 1 for the same rows, i.e. the sensitivity
    without the kappa factor (the release becomes ~2.1-GDP).

    The paper's radius makes the worst case exact; the default noise-aware radius (roots convolved with fixed
    noise draws) moves by at most as much on the same pair, and its release passes the same audit."""
    mu = 1.0
    d0, d1 = worst_case_pair(1000, (0.0, 1.0))
    options = {"budget": pf.GDP(mu), "bounds": (0.0, 1.0), "sampler": "test-fixed", "radius": "paper"}
    runs = {which: recorded_releases(data, **options) for which, data in ((0, d0), (1, d1))}
    aware = {
        which: recorded_releases(data, **{**options, "radius": "noise-aware"}) for which, data in ((0, d0), (1, d1))
    }
    lie = {which: recorded_releases(data, **options, kappa=1) for which, data in ((0, d0), (1, d1))}
    half = pf.GDP(mu / math.sqrt(2))

    centre = {which: runs[which]["center"] for which in (0, 1)}
    assert centre[0][1].budget == half
    assert centre[1][0][0] - centre[0][0][0] == pytest.approx(1 / 1000)
    ok = audit_mechanism(replay(centre, clamp=False), 0, 1, half, N_SAMPLES, rng=20, batch=BATCH)
    assert ok.passed, str(ok)
    assert 0.6 < ok.empirical_lower_bound <= half.mu
    bad = audit_mechanism(replay(centre, clamp=False, noise_factor=0.5), 0, 1, half, N_SAMPLES, rng=20, batch=BATCH)
    assert not bad.passed, str(bad)
    assert bad.empirical_lower_bound > 1.2

    radius = {which: runs[which]["radius"] for which in (0, 1)}
    assert radius[1][1].sensitivity == pytest.approx(math.sqrt(10) * (3 / 10 + 1 / 1000))
    assert radius[1][0][0] - radius[0][0][0] == pytest.approx(math.sqrt(10) * (3 / 10 - 1 / 1000))
    ok = audit_mechanism(replay(radius, clamp=True), 0, 1, half, N_SAMPLES, rng=21, batch=BATCH)
    assert ok.passed, str(ok)
    convolved = {which: aware[which]["radius"] for which in (0, 1)}
    assert convolved[1][1].sensitivity == radius[1][1].sensitivity  # same noise scale
    assert 0 < abs(convolved[1][0][0] - convolved[0][0][0]) <= radius[1][1].sensitivity
    aware_ok = audit_mechanism(replay(convolved, clamp=False), 0, 1, half, N_SAMPLES, rng=22, batch=BATCH)
    assert aware_ok.passed, str(aware_ok)
    assert 0.55 < ok.empirical_lower_bound <= half.mu
    no_kappa = {which: lie[which]["radius"] for which in (0, 1)}
    assert no_kappa[1][1].sensitivity == pytest.approx(math.sqrt(10) * (1 / 10 + 1 / 1000))
    bad = audit_mechanism(replay(no_kappa, clamp=True), 0, 1, half, N_SAMPLES, rng=21, batch=BATCH)
    assert not bad.passed, str(bad)
    assert bad.empirical_lower_bound > 1.5


SmoothRecord = tuple[np.ndarray, float, pf.PrivacyEvent]


def recorded_smooth_releases(data: np.ndarray, **options: Any) -> dict[str, SmoothRecord]:
    """Run cr-ss (median) once: {label: (value, ln smooth bound, planned event)} for each release.

    With the paper's beta, which the worst cases below were sized for (a larger beta adds test noise to the
    proposed bound, which only lowers what an audit can see)."""
    _SMOOTH_RECORDED.clear()
    pf.confidence_interval(
        data, "median", method="cr-ss", budget=pf.GDP(1.0, delta=1e-4), bounds=(0.0, 1.0),
        mechanism="test-recording-ptr", rng=0, **{"beta": "paper", **options},
    )  # fmt: skip
    return {label: (value, bound, event) for label, value, bound, event in _SMOOTH_RECORDED}


def smooth_replay(records: dict[int, SmoothRecord], noise_factor: float = 1.0) -> Callable[..., np.ndarray]:
    """Replays ptr-gdp on the recorded value and bound; each release is (ln of the proposed bound, value).
    ``noise_factor = 1/2`` halves both the test and the release noise."""
    ptr = _mechanism("ptr-gdp")

    def release(which: int, rng: np.random.Generator, batch: int = 1) -> np.ndarray:
        value, log_bound, event = records[which]
        if noise_factor != 1.0:
            details = dict(event.details)
            details["mu_test"] /= noise_factor
            details["mu_release"] /= noise_factor
            event = attrs.evolve(event, details=details)
        rows = np.repeat(np.asarray(value, dtype=np.float64).reshape(1, -1), batch, axis=0)
        out = ptr.release_smooth_batch(rows, np.full(batch, log_bound), event, rng)
        return np.column_stack([np.log(out.bound), out.value[:, 0]])

    return release


CR_SS_SAMPLES = 25_000


@pytest.mark.usefixtures("audit_parts")
def test_cr_ss_centre_passes_and_half_noise_is_caught() -> None:
    """The median of 101 records on [0, 1]: 51 zeros and 50 ones, against one zero flipped to one. The lower
    median jumps from 0 to 1, the full width, and the smooth bound is 1 on both sides, so the released value
    moves by its whole bound. Its claim is (mu / sqrt 2, delta / 2)-GDP; the value alone carries at most the
    release part mu_release = mu / 2 (less, as the proposed bound exceeds s(D)), seen at ~0.4. With half the
    noise in both the test and the release it carries ~0.9 mu > 0.707 mu and is caught."""
    c0 = np.array([0.0] * 51 + [1.0] * 50)
    c1 = c0.copy()
    c1[0] = 1.0
    centre = {
        which: recorded_smooth_releases(data, sampler="wor", B=50)["center"] for which, data in ((0, c0), (1, c1))
    }
    (v0, log_s0, event), (v1, log_s1, _) = centre[0], centre[1]
    assert (float(v0[0]), float(v1[0]), log_s0, log_s1) == (0.0, 1.0, 0.0, 0.0)  # both smooth bounds are 1
    claim = event.budget
    assert claim == pf.GDP(1 / math.sqrt(2), delta=5e-5)
    options: dict[str, Any] = {"projection": "coordinates"}
    ok = audit_mechanism(smooth_replay(centre), 0, 1, claim, CR_SS_SAMPLES, rng=30, batch=5000, **options)
    assert ok.passed, str(ok)
    assert 0.25 < ok.empirical_lower_bound <= ok.claimed_value
    bad = audit_mechanism(
        smooth_replay(centre, noise_factor=0.5), 0, 1, claim, CR_SS_SAMPLES, rng=30, batch=5000, **options
    )
    assert not bad.passed, str(bad)


@pytest.mark.usefixtures("audit_parts")
def test_cr_ss_radius_passes_and_the_bound_without_kappa_is_caught() -> None:
    """The radius's smooth bound s(D) may change by the factor e^{kappa beta} between neighbours (a record
    appears up to kappa times in a resample), so PTR tests it with log-smoothness gamma = kappa beta. The
    worst case: 41 records all 0.5 against one moved to 1; one resample of m = 10 holding that record 3 times.
    The roots stay 0 but ln s(D) moves by 0.88 of kappa beta, so the proposed log-bound alone is ~0.44-GDP
    (mu_test = 0.5 times 0.88). A sampler that reports kappa = 1 for the same rows makes cr-ss calibrate the
    test to beta alone while ln s(D) moves by 2.5 beta: ~1.25-GDP, caught against the 0.707 claim."""
    r0 = np.full(41, 0.5)
    r1 = r0.copy()
    r1[0] = 1.0
    honest = {
        which: recorded_smooth_releases(data, sampler="test-fixed")["radius"] for which, data in ((0, r0), (1, r1))
    }
    lie = {
        which: recorded_smooth_releases(data, sampler="test-fixed", kappa=1)["radius"]
        for which, data in ((0, r0), (1, r1))
    }
    gamma = honest[0][2].details["gamma"]
    shift = honest[1][1] - honest[0][1]  # the records carry ln s(D)
    assert 0.8 * gamma < shift <= gamma  # ln s(D) moves by nearly the whole log-smoothness kappa beta
    assert lie[1][1] - lie[0][1] > 2 * lie[0][2].details["gamma"]  # but by 2.5 x gamma under the lie
    claim = honest[0][2].budget
    assert claim == pf.GDP(1 / math.sqrt(2), delta=5e-5)
    options: dict[str, Any] = {"projection": "coordinates"}
    ok = audit_mechanism(smooth_replay(honest), 0, 1, claim, CR_SS_SAMPLES, rng=31, batch=5000, **options)
    assert ok.passed, str(ok)
    assert 0.3 < ok.empirical_lower_bound <= ok.claimed_value
    bad = audit_mechanism(smooth_replay(lie), 0, 1, claim, CR_SS_SAMPLES, rng=31, batch=5000, **options)
    assert not bad.passed, str(bad)
    assert bad.empirical_lower_bound > 1.0


# ---------------------------------------------------------------------------------------------------------
# PrivSub: the full-data call and one amplified subsample call, each against its ledger entry


PRIVSUB_N = 300


def _privsub_ledger(epsilon: float) -> tuple[pf.PrivacyEvent, pf.PrivacyEvent, int]:
    """The ledger events of a privsub run (mean, Laplace, (epsilon, 1e-6)-DP, T = 10) and its subsample size."""
    res = pf.confidence_interval(
        np.zeros(PRIVSUB_N), "mean", method="privsub", budget=pf.ApproxDP(epsilon, 1e-6), bounds=(0.0, 1.0),
        mechanism="laplace", T=10, rng=0,
    )  # fmt: skip
    full, sub = res.privacy.events
    assert (full.label, sub.label, sub.count) == ("full", "subsample", 10)
    return full, sub, int(res.parameters["m"])


def _estimator() -> Any:
    mean = pf.registry.create("statistic", "mean")
    return pp.MechanismEstimator(mean, _mechanism("laplace"), pf.Bounds(0.0, 1.0))


def test_privsub_amplified_subsample_call_passes_and_no_amplification_is_caught() -> None:
    """Each subsample call runs the Laplace mean at eps_call on a uniform m-subset drawn without replacement
    (the real ``wor`` sampler) and is recorded as amplified, eps = ln(1 + (m/n)(e^eps_call - 1)). On the pair
    all-zeros vs one record at 1 the amplified bound is attained (the record is in the subset with probability
    m/n), and the audit sees nearly all of it. The same call on a fixed subset that always holds the record
    (no amplification) leaks eps_call and is caught; so is the call with half the noise. A large total budget
    ((20, 1e-6)-DP over T = 10 calls) makes the per-call epsilon large enough to measure."""
    _, sub, m = _privsub_ledger(20.0)
    assert isinstance(sub.budget, pf.PureDP)
    eps_call, rate = sub.budget.epsilon, sub.details["sampling_rate"]
    assert sub.subsample == pp.Subsample(n=PRIVSUB_N, m=m)
    assert rate == pytest.approx(m / PRIVSUB_N)
    # The claim audited is what the registered accountant makes of one such call: the amplified epsilon.
    claimed = pf.registry.create("accountant", "approx-dp").compose([attrs.evolve(sub, count=1)])
    assert claimed == pf.PureDP(math.log1p(rate * math.expm1(eps_call)))
    estimator = _estimator()
    d0, d1 = worst_case_pair(PRIVSUB_N, (0.0, 1.0))

    def release(random_subsets: bool, eps: float) -> Callable[..., np.ndarray]:
        def run(data: np.ndarray, rng: np.random.Generator, batch: int) -> np.ndarray:
            if random_subsets:
                sampler = pf.registry.create("sampler", "wor", {"m": m, "B": batch})
                index = draw(sampler, PRIVSUB_N, rng).matrix()
            else:
                index = np.tile(np.arange(m, dtype=np.intp), (batch, 1))
            values, _ = estimator.release_batch(data, index, pf.PureDP(eps), rng)
            return np.asarray(values, dtype=np.float64)

        return run

    samples = 30_000
    ok = audit_mechanism(release(True, eps_call), d0, d1, claimed, samples, rng=40, batch=samples)
    assert ok.passed, str(ok)
    assert ok.empirical_lower_bound > 0.8 * ok.claimed_value
    fixed = audit_mechanism(release(False, eps_call), d0, d1, claimed, samples, rng=40, batch=samples)
    assert not fixed.passed, str(fixed)
    assert fixed.empirical_lower_bound > 1.5 * fixed.claimed_value
    half = audit_mechanism(release(True, 2 * eps_call), d0, d1, claimed, samples, rng=40, batch=samples)
    assert not half.passed, str(half)


def test_privsub_full_data_call_passes_and_half_noise_is_caught() -> None:
    full, _, _ = _privsub_ledger(2.0)
    assert isinstance(full.budget, pf.PureDP)
    estimator = _estimator()
    d0, d1 = worst_case_pair(PRIVSUB_N, (0.0, 1.0))

    def release(eps: float) -> Callable[..., np.ndarray]:
        def run(data: np.ndarray, rng: np.random.Generator, batch: int) -> np.ndarray:
            index = np.tile(np.arange(PRIVSUB_N, dtype=np.intp), (batch, 1))
            values, _ = estimator.release_batch(data, index, pf.PureDP(eps), rng)
            return np.asarray(values, dtype=np.float64)

        return run

    batch = 5000  # rows of all n records: keep each index matrix small
    ok = audit_mechanism(release(full.budget.epsilon), d0, d1, full.budget, N_SAMPLES, rng=41, batch=batch)
    assert ok.passed, str(ok)
    assert ok.empirical_lower_bound > 0.8 * ok.claimed_value
    bad = audit_mechanism(release(2 * full.budget.epsilon), d0, d1, full.budget, N_SAMPLES, rng=41, batch=batch)
    assert not bad.passed, str(bad)


# ---------------------------------------------------------------------------------------------------------
# privframe audit


@attrs.frozen
class HalfNoiseGaussian:
    """A deliberately broken mechanism: the Gaussian mechanism's event, half its noise."""

    name: ClassVar[str] = "test-half-gaussian"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pf.GDP: pf.GDP, pf.ApproxDP: pf.GDP})

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        return _gaussian().plan(sensitivity, budget, label=label, dimension=dimension)

    def apply(self, value: pp.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        return _gaussian().apply(value, weakened(event, 0.5), rng)


class BrokenPlugin:
    @pp.hookimpl
    def privframe_register_mechanisms(self, registry: pp.MechanismRegistry) -> None:
        registry.add(HalfNoiseGaussian, asserts_privacy=True)


def test_cli_audit_passes_a_standard_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    from privframe.cli import main

    assert main(["audit", "gaussian", "--mu", "1", "--samples", "20000", "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is True
    assert out["violations"] == 0
    assert out["claimed"] == "1-GDP"
    assert out["unit"] == "mu"
    assert 0.85 < out["empirical_lower_bound"] <= 1.0
    assert out["n_samples"] == 20000
    assert main(["audit", "exponential", "--epsilon", "1", "--samples", "20000", "--seed", "1"]) == 0
    assert "passed: no test violates" in capsys.readouterr().out
    assert main(["audit", "ptr-gdp", "--mu", "1", "--delta", "1e-6", "--samples", "2000", "--seed", "1"]) == 0


def test_cli_audit_passes_statistic_options(capsys: pytest.CaptureFixture[str]) -> None:
    """A quantile needs its level: --statistic-option q=0.9 gives it; without it the error names q."""
    from privframe.cli import main

    args = ["audit", "exponential", "--epsilon", "1", "--samples", "2000", "--seed", "1", "--statistic", "quantile"]
    assert main([*args, "--statistic-option", "q=0.9"]) == 0
    assert "passed" in capsys.readouterr().out
    assert main(args) == 2
    assert "q" in capsys.readouterr().err


def test_cli_audit_catches_a_broken_plugin_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    from privframe.cli import main

    name = pf.registry.register(BrokenPlugin(), name="test-broken-mechanism")
    try:
        status = main(["audit", "test-half-gaussian", "--mu", "1", "--samples", "20000", "--seed", "1"])
    finally:
        pf.registry.unregister(name)
    out = capsys.readouterr().out
    assert status == 1
    assert "VIOLATION" in out
    assert "claimed: 1-GDP" in out


# ---------------------------------------------------------------------------------------------------------
# Longer runs (pytest -m slow)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("release", "claimed"),
    [
        (gaussian_shift(1.0), pf.GDP(1.0)),
        (lambda v, rng, batch: v + rng.laplace(size=batch), pf.PureDP(1.0)),
        (lambda v, rng, batch: v + rng.laplace(size=batch), pf.ApproxDP(1.0, 1e-3)),
    ],
    ids=["gaussian-gdp", "laplace-pure", "laplace-approx"],
)
def test_false_alarm_rate_over_many_audits(release: Callable[..., np.ndarray], claimed: pf.Budget) -> None:
    """2000 audits (2000 samples each) of releases that meet their claim exactly. The family-wise level is
    0.05, so at most 100 failures are expected (SE sqrt(2000 * 0.05 * 0.95) = 9.7; allow 100 + 3 SE = 129);
    the Bonferroni correction is conservative, so the rate is far lower (measured: 0 of 2000 for each)."""
    seeds = np.random.SeedSequence(2027).spawn(2000)
    failures = sum(not audit_mechanism(release, 0.0, 1.0, claimed, 2000, rng=s, batch=2000).passed for s in seeds)
    assert failures <= 129


@pytest.mark.slow
def test_audits_at_a_million_samples() -> None:
    """With 10^6 samples per dataset the lower bounds close in on the claims and stay below them (measured:
    0.990 for 1-GDP Gaussian, 0.987 for 1-DP Laplace, 0.836 for the exponential mechanism, whose largest
    pointwise loss on the pair is 0.865)."""
    gaussian = audit_additive_mechanism(_mechanism("gaussian"), pf.GDP(1.0), n_samples=10**6, rng=50)
    laplace = audit_additive_mechanism(_mechanism("laplace"), pf.PureDP(1.0), n_samples=10**6, rng=51)
    median = pf.registry.create("statistic", "median")
    exponential = pf.audit.audit_selection_mechanism(
        _mechanism("exponential"), median, pf.PureDP(1.0), n_samples=10**6, rng=52
    )
    for result, low in ((gaussian, 0.97), (laplace, 0.97), (exponential, 0.8)):
        assert result.passed, str(result)
        assert low < result.empirical_lower_bound <= result.claimed_value, str(result)


# ---------------------------------------------------------------------------------------------------------
# An honest verdict: a claim the sample size cannot refute is inconclusive, not passed


def _noiseless(value: float, rng: np.random.Generator, batch: int = 1) -> np.ndarray:
    return np.full(batch, float(value))


def test_a_noiseless_release_at_a_claim_beyond_reach_is_inconclusive_not_passed() -> None:
    """No noise at all tells the datasets apart every time, yet at 100k samples no point can prove more than
    mu ~ 7.8: an 8-GDP claim cannot fail there. It is reported inconclusive, with the sample size that would
    refute it, and at that size it fails."""
    result = audit_mechanism(_noiseless, 0.0, 1.0, pf.GDP(8.0), 100_000, rng=1, batch=50_000)
    assert result.violations == ()
    assert result.verdict == "inconclusive"
    assert not result.passed
    assert not result.conclusive
    assert 7.0 < result.detectable_limit < 8.0
    assert result.samples_needed is not None
    assert 100_000 < result.samples_needed < 1_000_000
    assert "INCONCLUSIVE" in str(result)
    refuted = audit_mechanism(_noiseless, 0.0, 1.0, pf.GDP(8.0), result.samples_needed, rng=1, batch=50_000)
    assert refuted.verdict == "failed"
    assert refuted.detectable_limit > 8.0


@pytest.mark.parametrize(
    ("claimed", "unit"), [(pf.GDP(1.0), "mu"), (pf.PureDP(2.0), "epsilon"), (pf.GDP(1.0, delta=1e-3), "mu")]
)
def test_the_detectable_limit_is_what_a_perfect_distinguisher_proves(claimed: pf.Budget, unit: str) -> None:
    """The limit equals the empirical lower bound of a noiseless release (both error rates 0), for each kind
    of claim; a claim below it that such a release violates fails."""
    result = audit_mechanism(_noiseless, 0.0, 1.0, claimed, 20_000, rng=2, batch=20_000)
    assert result.unit == unit
    assert result.verdict == "failed"
    assert result.empirical_lower_bound == pytest.approx(result.detectable_limit, rel=1e-6)


def test_gaussian_at_one_gdp_still_passes_conclusively() -> None:
    gaussian = _gaussian()
    result = audit_additive_mechanism(gaussian, pf.GDP(1.0), n_samples=50_000, rng=3)
    assert result.verdict == "passed"
    assert result.conclusive
    assert result.samples_needed is None
