"""CR-GS (algorithms.md 3.1): exact noise scales, ledger, the noise actually drawn, coverage."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.privacy import accounting
from privframe_std.samplers import kappa_star


def _bernoulli(n: int, seed: int | np.random.SeedSequence, p: float = 0.05) -> np.ndarray:
    return np.random.default_rng(seed).binomial(1, p, size=n).astype(float)


@pytest.mark.parametrize("sampler", ["wor", "wr"])
def test_noise_scales_match_algorithms_3_1(sampler: str) -> None:
    n, mu = 10_000, 8.0
    res = pf.confidence_interval(
        _bernoulli(n, 0), "mean", method="cr-gs", budget=pf.GDP(mu), bounds=(0, 1), sampler=sampler, rng=3
    )
    m = math.ceil(n / math.log(n))
    kappa = 1 if sampler == "wor" else kappa_star(n, m, 1000, 1 / n)
    fpc = 1 / math.sqrt(1 - m / n) if sampler == "wor" else 1.0  # finite-population correction, WOR only
    delta_n, delta_m = 1 / n, 1 / m
    d = res.diagnostics
    assert res.parameters["m"] == m
    assert res.parameters["kappa"] == kappa
    assert d["delta_n"] == pytest.approx(delta_n, rel=1e-15)
    assert d["delta_m"] == pytest.approx(delta_m, rel=1e-15)
    # The exact lattice noise is at most max_scale_ratio above the continuous scale (rounding to its grid).
    ratio = pp.noise.max_scale_ratio(mu / math.sqrt(2))
    expected_nu = math.sqrt(2) * delta_n / mu
    assert expected_nu <= d["nu_n"] <= expected_nu * ratio
    assert d["fpc_factor"] == pytest.approx(fpc, rel=1e-15)
    expected_sigma = fpc * math.sqrt(2) * math.sqrt(m) * (kappa * delta_m + delta_n) / mu
    assert expected_sigma <= d["sigma_m"] <= expected_sigma * ratio
    assert [e.noise_scale for e in res.privacy.events] == [d["nu_n"], d["sigma_m"]]


def test_ledger_says_mu_gdp_with_eps_delta_equivalent() -> None:
    mu = 1.5
    res = pf.confidence_interval(_bernoulli(2000, 1), "mean", method="cr-gs", budget=pf.GDP(mu), bounds=(0, 1), rng=1)
    ledger = res.privacy
    assert ledger.accountant == "gdp"
    assert [e.label for e in ledger.events] == ["center", "radius"]
    for event in ledger.events:
        assert event.budget == pf.GDP(mu / math.sqrt(2))
        assert event.mechanism == "gaussian"
    assert isinstance(ledger.total, pf.GDP)
    assert ledger.total.mu == pytest.approx(mu, rel=1e-12)
    assert ledger.total.delta == 0.0
    eps = ledger.as_approx_dp(1e-6).epsilon
    assert eps == pytest.approx(accounting.gdp_epsilon(1e-6, mu), rel=1e-9)


def test_approx_dp_budget_is_honoured_through_the_tight_conversion() -> None:
    budget = pf.ApproxDP(2.0, 1e-6)
    res = pf.confidence_interval(_bernoulli(2000, 2), "mean", method="cr-gs", budget=budget, bounds=(0, 1), rng=2)
    mu = accounting.gdp_mu_for(2.0, 1e-6)
    assert res.parameters["mu"] == pytest.approx(mu)
    assert res.privacy.as_approx_dp(1e-6).epsilon <= 2.0 * (1 + 1e-9)


def test_pure_dp_budget_runs_with_laplace_and_gaussian_noise_cannot_give_it() -> None:
    """A pure budget defaults to Laplace noise at eps/2 per release; forcing the Gaussian mechanism on it is
    refused when the pipeline is built (Gaussian noise cannot give pure DP), naming the mechanism that can."""
    x = _bernoulli(500, 0)
    res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)
    assert [(e.mechanism, e.budget) for e in res.privacy.events] == [("laplace", pf.PureDP(0.5))] * 2
    with pytest.raises(pf.ConfigError, match=r"^mechanism: mechanism 'gaussian' accepts .* pure epsilon .*\(laplace\)"):
        pf.Pipeline.build("mean", method="cr-gs", budget=pf.PureDP(1.0), bounds=(0, 1), mechanism="gaussian")


def test_the_noise_drawn_has_the_claimed_scales() -> None:
    """Constant data make every root zero (Q = 0), so the released numbers are pure noise.

    The centre is theta + nu_n Z and the radius max(sigma_m Z, 0) / tau_n. Over 2000 seeded runs the
    centre's sample SD has relative SE ~ 1/sqrt(2 * 2000) = 1.6%; 5 SE is 8%. Half the noise would be 50% off.
    """
    n, mu, runs = 400, 1.0, 2000
    x = np.full(n, 0.25)
    centers, radii = [], []
    for seed in np.random.SeedSequence(99).spawn(runs):
        res = pf.confidence_interval(
            x, "mean", method={"name": "cr-gs", "radius": "paper"}, budget=pf.GDP(mu), bounds=(0, 1), B=20, rng=seed
        )
        centers.append(res.center)
        radii.append(res.high - res.center)
    d = res.diagnostics
    centers_a, radii_a = np.array(centers), np.array(radii)
    assert np.std(centers_a - 0.25, ddof=1) == pytest.approx(d["nu_n"], rel=5 / math.sqrt(2 * runs))
    # P(radius = 0) = 1/2: binomial SE 0.011, 4 SE tolerance.
    assert np.mean(radii_a == 0) == pytest.approx(0.5, abs=4 * math.sqrt(0.25 / runs))
    # Positive part is half-normal with scale sigma_m / tau_n; its RMS equals that scale (rel SE ~ 2.2%).
    positive = radii_a[radii_a > 0]
    rms = math.sqrt(np.mean(positive**2))
    assert rms == pytest.approx(d["sigma_m"] / d["tau_n"], rel=5 * math.sqrt(2 / len(positive)) / 2)


def test_seeded_runs_are_reproducible_and_chunking_does_not_change_them() -> None:
    x = _bernoulli(5000, 5)

    def run(**kw: object) -> pf.IntervalResult:
        return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=11, **kw)

    base = run()
    assert (run().low, run().high) == (base.low, base.high)
    small_chunks = run(memory_budget=2**16)  # one 32-row block per chunk
    assert (small_chunks.low, small_chunks.high) == (base.low, base.high)
    other = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=12)
    assert (other.low, other.high) != (base.low, base.high)


def test_vector_mean_gives_a_ball() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(0.1, 0.2, size=(3000, 3))
    reg = pf.confidence_region(X, "mean", method="cr-gs", budget=pf.GDP(4.0), bounds=pf.L2Ball(1.0), rng=4)
    assert reg.dimension == 3
    assert reg.diagnostics["delta_n"] == pytest.approx(2.0 / 3000)
    assert reg.radius > 0
    assert reg.contains(reg.center)
    assert not reg.contains(reg.center + 2 * reg.radius)
    with pytest.raises(pf.ConfigError, match="confidence_region"):
        pf.confidence_interval(X, "mean", method="cr-gs", budget=pf.GDP(4.0), bounds=pf.L2Ball(1.0), rng=4)


def test_nonprivate_subsampling_matches_cr_gs_skeleton() -> None:
    x = _bernoulli(4000, 6)
    ref = pf.confidence_interval(x, "mean", method="subsampling", budget=None, bounds=(0, 1), rng=8)
    assert ref.center == pytest.approx(x.mean())
    assert ref.privacy.total is None
    assert not ref.privacy.private
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", method="subsampling", budget=pf.GDP(1.0), bounds=(0, 1))
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", method="cr-gs", budget=None, bounds=(0, 1))


def test_coverage_bernoulli_wor_n10000_mu8() -> None:
    """Coverage within 3 Monte Carlo SE of 0.90 over 250 seeded trials (SE 0.019), with the default radius.

    WOR subsamples are less spread than independent samples by sqrt(1 - m/n) ~ 0.945 at n = 10000; the
    finite-population correction (default ``fpc=True``) undoes that. Measured with the paper's radius over 400
    trials: 0.91 with it, 0.8775 without (mean width 0.00714 vs 0.00674).
    """
    trials, hits = 250, 0
    for seed in np.random.SeedSequence(12345).spawn(trials):
        data_seed, run_seed = seed.spawn(2)
        x = _bernoulli(10_000, data_seed)
        res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(8.0), bounds=(0, 1), rng=run_seed)
        hits += res.contains(0.05)
    se = math.sqrt(0.9 * 0.1 / trials)
    assert abs(hits / trials - 0.90) <= 3 * se


def test_default_radius_covers_at_a_small_budget_where_the_paper_does_not() -> None:
    """n = 2000, GDP(0.5), 80 seeded trials (SE of 0.9 is 0.034): the noise-aware radius covers at least
    0.9 - 2 SE and never has zero width; the paper's radius, on the same draws, under-covers and is often a
    point (its noisy radius is clamped at 0)."""
    trials, se = 80, math.sqrt(0.09 / 80)
    hits = {"noise-aware": 0, "paper": 0}
    points = {"noise-aware": 0, "paper": 0}
    for seed in np.random.SeedSequence(4242).spawn(trials):
        data_seed, run_seed = seed.spawn(2)
        x = _bernoulli(2000, data_seed)
        for radius in hits:
            res = pf.confidence_interval(
                x, "mean", method={"name": "cr-gs", "radius": radius}, budget=pf.GDP(0.5), bounds=(0, 1), rng=run_seed
            )
            hits[radius] += res.contains(0.05)
            points[radius] += res.width == 0
    assert hits["noise-aware"] / trials >= 0.9 - 2 * se
    assert points["noise-aware"] == 0
    assert hits["paper"] / trials < 0.9 - 2 * se
    assert points["paper"] > 0


def test_the_same_seed_sequence_object_twice_gives_the_same_run() -> None:
    x = _bernoulli(2000, 9)
    seq = np.random.SeedSequence(2026)
    first = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=seq)
    second = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=seq)
    assert (first.low, first.high) == (second.low, second.high)


def test_order_statistic_rule_is_an_option() -> None:
    """The radius order statistic is a [choice]; the alternatives pick neighbouring ranks of the same roots."""
    x = np.random.default_rng(21).uniform(size=3000)  # continuous: no tied roots

    def radius(rule: str) -> float:
        res = pf.confidence_interval(
            x, "mean", method="subsampling", budget=None, bounds=(0, 1), B=100, rng=4, order_statistic=rule
        )
        return res.width / 2

    lower, default, higher = radius("lower"), radius("inverted_cdf"), radius("higher")
    assert lower <= default <= higher
    assert lower < higher  # numpy positions (B - 1) * 0.9 = 89.1: "lower" R_(90), "higher" R_(91), 1-based
    with pytest.raises(pf.ConfigError, match="order_statistic"):
        radius("linear")  # interpolates between roots: not a single order statistic


def test_subsampling_applies_the_same_fpc() -> None:
    x = _bernoulli(3000, 22)
    on = pf.confidence_interval(x, "mean", method="subsampling", budget=None, bounds=(0, 1), rng=4)
    off = pf.confidence_interval(x, "mean", method="subsampling", budget=None, bounds=(0, 1), rng=4, fpc=False)
    m = on.parameters["m"]
    assert on.width == pytest.approx(off.width / math.sqrt(1 - m / 3000), rel=1e-12)


def test_a_statistic_whose_limit_is_not_centred_is_refused_by_name_of_what_works() -> None:
    """KS: a ball about the estimate covered 0.81 +- 0.04 at nominal 0.90 (n = 2000, mu = 2); refused before
    any data are read unless check_consistency=False (the paper's baseline)."""
    from scipy import stats

    x = np.random.default_rng(0).normal(size=500)
    options: dict[str, Any] = {"reference": stats.norm(), "budget": pf.GDP(1.0), "rng": 1}
    with pytest.raises(
        pf.ConfigError, match=r"^statistic: method 'cr-gs' needs .*centred.*'ks'.*accept it: dette-graw, privsub"
    ):
        pf.confidence_interval(x, "ks", method="cr-gs", **options)
    res = pf.confidence_interval(x, "ks", method={"name": "cr-gs", "check_consistency": False}, **options)
    assert 0 <= res.low <= res.high <= 1


def test_an_interval_that_misses_the_parameter_space_becomes_the_whole_range() -> None:
    """The median's global sensitivity is the whole range, so at mu = 0.25 the centre often lands far outside
    [0, 1]; an interval entirely outside is reported as the range (uninformative), never as a point."""
    x = np.random.default_rng(5).uniform(size=300)
    disjoint = 0
    for seed in range(40):
        res = pf.confidence_interval(x, "median", method="cr-gs", budget=pf.GDP(0.25), bounds=(0, 1), rng=seed)
        assert res.width > 0
        assert 0 <= res.low < res.high <= 1
        if res.diagnostics.get("disjoint_from_range"):
            disjoint += 1
            assert (res.low, res.high) == (0.0, 1.0)
            unclipped_low, unclipped_high, _ = res.diagnostics["unclipped"]
            assert unclipped_high < 0 or unclipped_low > 1
    assert disjoint > 0


@pytest.mark.parametrize("radius", [1e200, 1e300])
def test_a_mean_region_holding_the_whole_ball_is_the_ball(radius: float) -> None:
    """At absurd public bounds the released radius overflows to infinity: every possible mean is inside, so
    the region is reported as the public ball itself (flagged), never as an infinite radius."""
    x = np.random.default_rng(6).normal(size=(2000, 3))
    res = pf.confidence_region(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(radius), rng=1)
    np.testing.assert_array_equal(res.center, 0.0)
    assert radius <= res.radius <= radius * (1 + 1e-15)
    assert res.diagnostics["whole_range"] is True
    assert "whole range" in res.flags
    assert "whole ball" in str(res)
    center, unclipped = res.diagnostics["unclipped"]
    assert unclipped == math.inf
    assert np.linalg.norm(np.asarray(center) / radius) < 1  # the released centre, kept for the record
    assert res.contains(np.array([radius, 0.0, 0.0]))  # a mean on the sphere is inside the open ball


def test_the_ball_rule_leaves_every_informative_region_alone() -> None:
    """Regions smaller than the ball (or at the sphere's edge but not holding it) are returned unchanged,
    and the rule is post-processing: it never touches a scalar interval or other statistics' regions."""
    from privframe.pipeline.ranges import within_ball

    x = np.random.default_rng(7).normal(size=(2000, 3))
    res = pf.confidence_region(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(5.0), rng=1)
    assert "whole_range" not in res.diagnostics
    mean = pf.registry.create("statistic", "mean")
    ball = pf.L2Ball(5.0)
    near = attrs.evolve(res, center=np.array([4.0, 0.0, 0.0]), radius=5.0)  # does not hold (-5, 0, 0)
    assert within_ball(near, mean, ball) is near
    holding = attrs.evolve(res, center=np.array([4.0, 0.0, 0.0]), radius=9.0)
    assert within_ball(holding, mean, ball).diagnostics["whole_range"] is True
    missing = attrs.evolve(res, center=np.array([20.0, 0.0, 0.0]), radius=1.0)
    assert within_ball(missing, mean, ball).diagnostics["disjoint_from_range"] is True
    lost = attrs.evolve(res, center=np.array([np.nan, 0.0, 0.0]))
    assert within_ball(lost, mean, ball).diagnostics["uninformative"] is True
    assert within_ball(holding, mean, pf.Bounds(-5.0, 5.0)) is holding
    huge = attrs.evolve(res, center=np.array([1e300, 1e300, 0.0]), radius=1e300)  # ||c|| overflows a plain norm
    assert within_ball(huge, mean, pf.L2Ball(1e300)) is huge
