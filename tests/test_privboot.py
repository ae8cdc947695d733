"""PrivBoot (algorithms.md section 6): the B rule, the noise, both ledgers, the exact accountant, coverage.

The exact finite-B accountant is checked against three oracles: the Gaussian closed form (n = 1: every
release contains the record exactly once, so B releases are exactly ``mu_0 sqrt(B)``-GDP), Google's
dp-accounting for a single subsampled release, and the asymptotic statement it must approach as B grows.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from _support import Untouchable

import privframe as pf
import privframe.plugin as pp
from privframe.privacy import accounting
from privframe_std.methods.privboot import privboot_resamples
from privframe_std.methods.privboot.accounting import (
    ASYMPTOTIC_FACTOR,
    asymptotic_mu,
    calibrate_mu0,
    compose_releases,
    privboot_pld,
)
from privframe_std.methods.privboot.method import ANNOUNCE_DRAWS, privboot_cost_note


def _approx(mu: float) -> pf.ApproxDP:
    """mu-GDP's (eps, delta) point at delta = 1e-6: the budget privboot's default exact accounting takes."""
    return pf.GDP(mu).to_approx_dp(1e-6)


def _data(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """The privboot-mean population: clip(N(0.5, 1), [0, 1]), mean 0.5."""
    return np.clip(np.random.default_rng(seed).normal(0.5, 1.0, size=n), 0.0, 1.0)


# ---------------------------------------------------------------------------------------------------------
# B rule, noise scale, ledger


@pytest.mark.parametrize(("mu", "B"), [(0.1, 20), (0.3, 180), (0.5, 500), (1.0, 2000), (0.05, 20)])
def test_b_rule(mu: float, B: int) -> None:
    assert privboot_resamples(mu, 0.9) == B  # max(2000 mu^2, 2 / alpha) = max(., 20)
    assert privboot_resamples(0.01, 0.99) == 200


def test_noise_scale_and_asymptotic_ledger() -> None:
    n, mu = 2000, 0.3
    res = pf.confidence_interval(
        _data(n, 0), "mean", method="privboot", budget=pf.GDP(mu), bounds=(0, 1), rng=1, accounting="asymptotic"
    )
    B = res.parameters["B"]
    assert B == 180
    sigma = math.sqrt((2 - 2 / math.e) * B) * (1 / n) / mu
    mu_0 = mu / math.sqrt((2 - 2 / math.e) * B)
    assert sigma <= res.diagnostics["sigma"] <= sigma * pp.noise.max_scale_ratio(mu_0)  # exact lattice noise
    assert res.diagnostics["mu_0"] == pytest.approx(mu_0, rel=1e-12)
    (event,) = res.privacy.events
    assert event.asymptotic is True
    assert event.budget == pf.GDP(mu)
    assert event.noise_scale == res.diagnostics["sigma"]
    assert event.details["B"] == B
    assert res.privacy.accountant == "gdp"
    assert res.privacy.total == pf.GDP(mu)
    assert res.privacy.asymptotic
    assert "(asymptotic guarantee)" in res.privacy.summary()
    # what the claim costs exactly: above mu-GDP's epsilon at delta = 1e-6, within the 5% it is allowed
    exact, claimed = res.diagnostics["exact_epsilon"], res.diagnostics["claimed_epsilon"]
    assert claimed == pytest.approx(accounting.gdp_epsilon(1e-6, mu))
    assert claimed < exact <= 1.05 * claimed
    assert res.low < res.center < res.high


def test_the_noise_drawn_has_the_claimed_scale() -> None:
    """On constant data every bootstrap value is the constant, so the releases are pure N(0, sigma^2) noise.

    The centre is their mean: SD sigma / sqrt(B). 600 seeded runs; the SD estimate has relative SE
    1/sqrt(1200) ~ 2.9%; 5 SE is 14%. Half or double the noise would be 50% or 100% off. The standard
    interval's half-width is z sqrt(max(var - sigma^2, 0)), about 0 here: its mean must be far below sigma.
    """
    n, mu, runs = 50, 0.1, 600  # B = 20
    x = np.full(n, 0.25)
    centers, halves = [], []
    for seed in np.random.SeedSequence(5).spawn(runs):
        res = pf.confidence_interval(
            x, "mean", method="privboot", budget=_approx(mu), bounds=(0, 1), rng=seed, ci="standard"
        )
        centers.append(res.diagnostics.get("unclipped", (0.0, 0.0, res.center))[2])  # before the range [0, 1]
        halves.append(res.width / 2)
    sigma = res.diagnostics["sigma"]
    assert res.parameters["B"] == 20
    assert np.std(np.array(centers) - 0.25, ddof=1) == pytest.approx(sigma / math.sqrt(20), rel=5 / math.sqrt(2 * runs))
    assert np.mean(halves) < 0.5 * sigma


def test_budgets() -> None:
    x = _data(500, 1)
    res = pf.confidence_interval(x, "mean", method="privboot", budget=pf.ApproxDP(2.0, 1e-6), bounds=(0, 1), rng=2)
    assert res.parameters["mu"] == pytest.approx(accounting.gdp_mu_for(2.0, 1e-6))
    with pytest.raises(pf.BudgetError, match="pure"):
        pf.confidence_interval(x, "mean", method="privboot", budget=pf.PureDP(1.0), bounds=(0, 1))
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", method="privboot", budget=None, bounds=(0, 1))


def test_options_sampler_and_reproducibility() -> None:
    x = _data(400, 3)
    kw: dict[str, Any] = {"method": "privboot", "budget": _approx(0.5), "bounds": (0, 1)}
    res = pf.confidence_interval(x, "mean", B=64, rng=4, **kw)
    assert res.parameters["B"] == 64
    again = pf.confidence_interval(x, "mean", B=64, rng=4, **kw)
    assert (res.low, res.high) == (again.low, again.high)
    standard = pf.confidence_interval(x, "mean", B=64, rng=4, ci="standard", **kw)
    assert (standard.low, standard.high) == pytest.approx(res.diagnostics["standard_interval"])
    assert standard.center == res.center  # same releases, other post-processing
    with pytest.raises(pf.ConfigError, match="n-out-of-n"):
        pf.confidence_interval(x, "mean", sampler="wor", rng=4, **kw)
    with pytest.raises(pf.ConfigError, match=r"ci: must be one of"):
        pf.confidence_interval(x, "mean", ci="bca", **kw)


def test_result_does_not_depend_on_the_memory_budget() -> None:
    """A budget below the g-model's likelihood matrix (B x 300 doubles) makes the fit recompute it in blocks:
    the interval is the same, bit for bit."""
    x = _data(400, 5)
    kw: dict[str, Any] = {"method": "privboot", "budget": _approx(1.0), "bounds": (0, 1), "B": 5000, "rng": 6}
    roomy = pf.confidence_interval(x, "mean", **kw)
    tight = pf.confidence_interval(x, "mean", memory_budget=2**20, **kw)  # the matrix takes 12 MB
    assert (roomy.low, roomy.high, roomy.center) == (tight.low, tight.high, tight.center)


def test_a_long_call_announces_its_cost(caplog: pytest.LogCaptureFixture) -> None:
    """GDP(8) at n = 20 000 (B = 128 000) is 2.6e9 draws: the warning names B, n and an estimate in seconds;
    a call below ``ANNOUNCE_DRAWS`` logs nothing."""
    note = privboot_cost_note(20_000, privboot_resamples(8.0, 0.9), 8.0)
    assert note is not None
    for part in ("B = 128000", "n = 20000", "expect about"):
        assert part in note
    assert privboot_cost_note(10_000, 2000, 1.0) is None
    assert privboot_cost_note(ANNOUNCE_DRAWS, 1, 1.0) is not None
    with caplog.at_level("WARNING", logger="privframe_std.methods.privboot.method"):
        pf.confidence_interval(_data(400, 3), "mean", method="privboot", budget=_approx(0.5), bounds=(0, 1), rng=1)
    assert not caplog.records


def test_deconvolution_with_little_noise_matches_the_bootstrap() -> None:
    """At a large budget the noise is negligible and both CIs approach the non-private percentile bootstrap.

    mu = 4 (B = 32000 would be slow), so B is fixed at 2000: sigma = sqrt(1.26 * 2000) / (n mu) = 0.00063 against
    a bootstrap SD of 0.0094. Endpoints agree within 0.003 (a third of the bootstrap SD; two independent
    sets of 2000 resamples give 5% quantiles with SE ~ 0.0004).
    """
    x = _data(2000, 6)
    priv = pf.confidence_interval(x, "mean", method="privboot", budget=_approx(4.0), bounds=(0, 1), B=2000, rng=7)
    ref = pf.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=(0, 1), B=2000, rng=8)
    assert priv.low == pytest.approx(ref.low, abs=0.003)
    assert priv.high == pytest.approx(ref.high, abs=0.003)
    assert priv.diagnostics["standard_interval"] == pytest.approx((ref.low, ref.high), abs=0.003)


# ---------------------------------------------------------------------------------------------------------
# The exact finite-B accountant


@pytest.mark.parametrize(("mu0", "B"), [(0.5, 1), (0.1, 100), (0.02, 2500)])
def test_exact_accountant_reproduces_gdp_when_every_release_holds_the_record(mu0: float, B: int) -> None:
    """n = 1: K = 1 always, p = 1, so h = G_mu0 and B releases are exactly mu0 sqrt(B)-GDP.

    The discretisation is pessimistic: delta is never below the truth, and within 1e-3 relative (the
    default grid step mu_0 / 50 gave at most 4e-4 when written).
    """
    pld = privboot_pld(mu0, 1, B)
    for eps in (0.0, 0.5, 1.0, 3.0):
        exact = accounting.gdp_delta(eps, mu0 * math.sqrt(B))
        assert exact <= pld.delta(eps) <= exact * (1 + 1e-3)


def test_exact_accountant_matches_dp_accounting_for_one_release() -> None:
    """One release of a subsampled Gaussian (K = 1 only, sampling probability p): C_p's profile is the max of
    the add and remove profiles, which dp-accounting computes for ADD_OR_REMOVE_ONE. For B > 1 the replace-one
    composition of C_p(f) is weaker than composing each direction on its own, so ours is larger.
    """
    dp_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")  # the accounting extra
    mu0, p = 0.3, 0.3
    mixture = (np.array([1.0]), np.array([1.0]), p)
    single = compose_releases(mu0, mixture, 1)
    reference = dp_pld.from_gaussian_mechanism(1 / mu0, sampling_prob=p, value_discretization_interval=1e-4)
    for eps in (0.1, 0.5, 1.0):
        assert single.delta(eps) == pytest.approx(reference.get_delta_for_epsilon(eps), rel=1e-6)
    many = compose_releases(mu0, mixture, 10)
    reference_many = reference.self_compose(10)
    for eps in (0.1, 0.5, 1.0):
        assert many.delta(eps) >= reference_many.get_delta_for_epsilon(eps)


def test_exact_accountant_approaches_the_asymptotic_guarantee() -> None:
    """mu_0 = mu / sqrt((2 - 2/e) B): the exact B-fold composition tends to mu-GDP (here mu = 1, n = 10^4).

    Measured effective mu at delta = 1e-6: 1.74 (B = 10), 1.086 (100), 1.0145 (1000), 1.0036 (10^4): the
    excess shrinks roughly like 1/B. The asymptotic value is approached from above, so at finite B the
    default (asymptotic) ledger entry understates the exact cost; the exact option pays it.
    """
    n, mu = 10_000, 1.0
    excess = []
    for B in (10, 100, 1000, 10_000):
        mu0 = mu / math.sqrt(ASYMPTOTIC_FACTOR * B)
        assert asymptotic_mu(mu0, B) == pytest.approx(mu)
        excess.append(privboot_pld(mu0, n, B).mu_effective(1e-6) - mu)
    assert all(e > 0 for e in excess)
    assert all(later < earlier / 3 for earlier, later in itertools.pairwise(excess))
    assert excess[-1] < 0.01


def test_exact_calibration_meets_the_budget() -> None:
    n, B, eps, delta = 10_000, 100, 2.0, 1e-6
    mu0 = calibrate_mu0(eps, delta, n=n, B=B)
    pld = privboot_pld(mu0, n, B)
    assert pld.delta(eps) <= delta
    assert privboot_pld(mu0 * 1.0005, n, B).delta(eps) > delta  # and it is (nearly) the largest such mu0
    # Exact calibration is stricter than the asymptotic rule at finite B.
    assert mu0 < accounting.gdp_mu_for(eps, delta) / math.sqrt(ASYMPTOTIC_FACTOR * B)


def test_exact_accounting_is_the_default_and_records_an_eps_delta_ledger() -> None:
    x = _data(1000, 9)
    target = _approx(0.5)
    res = pf.confidence_interval(x, "mean", method="privboot", budget=target, bounds=(0, 1), B=100, rng=10)
    assert res.parameters["accounting"] == "exact"
    (event,) = res.privacy.events
    assert event.asymptotic is False
    assert not res.privacy.asymptotic
    assert event.budget == target
    assert res.privacy.accountant == "approx-dp"
    assert res.diagnostics["sigma"] > res.diagnostics["asymptotic_sigma"]  # B = 100: exact costs more noise
    pld = privboot_pld(res.diagnostics["mu_0"], 1000, res.parameters["B"])
    assert pld.delta(target.epsilon) <= 1e-6


def test_a_gdp_budget_under_exact_accounting_is_refused_naming_the_conversion() -> None:
    """The exact composition proves an (eps, delta) point, not a GDP curve: no silent conversion."""
    x = _data(500, 1)
    with pytest.raises(
        pf.BudgetError, match=r"^budget: privboot's exact accounting .*to_approx_dp\(1e-6\).*asymptotic"
    ):
        pf.confidence_interval(x, "mean", method="privboot", budget=pf.GDP(1.0), bounds=(0, 1))


@pytest.mark.parametrize("B", [20, 100])
def test_an_asymptotic_claim_at_small_b_is_refused_before_the_data_are_read(B: int) -> None:
    """B = 20 at mu = 1 costs eps = 7.19 at delta = 1e-6 against mu-GDP's 4.89 (B = 100: 5.37): refused, naming
    exact accounting; in a session it costs nothing. Exact accounting charges its exact cost at B = 20."""
    options: dict[str, Any] = {"method": "privboot", "bounds": (0, 1), "B": B, "accounting": "asymptotic"}
    with pytest.raises(
        pf.ConfigError, match=r"^sampler\.B: B = \d+ bootstrap releases are too few .*accounting='exact'"
    ):
        pf.confidence_interval(Untouchable(2000), "mean", budget=pf.GDP(1.0), **options)  # type: ignore[arg-type]
    session = pf.Session(pf.GDP(2.0), allow_asymptotic=True)
    with pytest.raises(pf.ConfigError, match="too few"):
        session.confidence_interval(_data(2000, 1), "mean", budget=pf.GDP(1.0), **options)
    assert session.spent is None
    assert not session.calls
    exact = pf.confidence_interval(
        _data(2000, 2), "mean", method="privboot", budget=_approx(1.0), bounds=(0, 1), B=20, rng=3
    )
    assert exact.privacy.total == _approx(1.0)
    assert not exact.privacy.asymptotic
    assert privboot_pld(exact.diagnostics["mu_0"], 2000, 20).delta(_approx(1.0).epsilon) <= 1e-6
    assert exact.diagnostics["mu_0"] < 0.8 / math.sqrt(ASYMPTOTIC_FACTOR * 20)  # 0.149 against the claim's 0.199


# ---------------------------------------------------------------------------------------------------------
# Coverage on the privboot-mean setting


@pytest.mark.slow
def test_coverage_privboot_mean_mu1() -> None:
    """Issue acceptance: n = 10^4, clip(N(0.5, 1), [0, 1]), mu = 1 (B = 2000), nominal 0.90, 300 trials.

    SE = sqrt(0.9 * 0.1 / 300) = 0.0173; both intervals must be within 3 SE of 0.90.
    """
    trials = 300
    hits_dec = hits_std = 0
    for seed in np.random.SeedSequence(2024).spawn(trials):
        data_seed, run_seed = seed.spawn(2)
        res = pf.confidence_interval(
            _data(10_000, data_seed), "mean", method="privboot", budget=_approx(1.0), bounds=(0, 1), rng=run_seed
        )
        hits_dec += res.contains(0.5)
        low, high = res.diagnostics["standard_interval"]
        hits_std += low < 0.5 < high
    se = math.sqrt(0.9 * 0.1 / trials)
    print(f"privboot mu=1: deconvolution {hits_dec / trials:.3f}, standard {hits_std / trials:.3f}")  # run with -s
    assert abs(hits_dec / trials - 0.90) <= 3 * se
    assert abs(hits_std / trials - 0.90) <= 3 * se


def test_the_ks_distance_is_refused_by_default_and_named_alternatives_work() -> None:
    """The n-out-of-n bootstrap is inconsistent for KS (measured 0.36-0.48 at nominal 0.90): a ConfigError
    that names what works, raised before any data are read; check_consistency=False runs it for reproduction."""
    from scipy import stats

    x = np.random.default_rng(0).normal(size=300)
    options = {"reference": stats.norm(), "budget": _approx(1.0), "B": 50, "rng": 1}
    with pytest.raises(
        pf.ConfigError,
        match=r"^statistic: method 'privboot' needs .*consistent n-out-of-n bootstrap.*'ks'.*dette-graw, privsub",
    ):
        pf.confidence_interval(x, "ks", method="privboot", **options)
    res = pf.confidence_interval(x, "ks", method={"name": "privboot", "check_consistency": False}, **options)
    assert res.low <= res.high
