"""PTR-GDP (algorithms.md 3.3): ledger, both variants, and an empirical privacy check on a worst-case pair."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtri

import privframe as pf
import privframe.plugin as pp
from privframe.plugin.spending import PrivacySpender
from privframe_std.mechanisms.ptr_gdp import PTRGDP


def _event(mech: PTRGDP, mu: float = 1.0, delta: float = 1e-6, gamma: float = 0.1) -> pf.PrivacyEvent:
    return mech.plan_smooth(gamma, pf.GDP(mu, delta=delta), label="x")


def test_plan_records_mu_delta_and_the_split() -> None:
    event = _event(PTRGDP(), mu=2.0, delta=1e-5, gamma=0.3)
    assert event.budget == pf.GDP(2.0, delta=1e-5)
    assert event.mechanism == "ptr-gdp"
    assert event.details["gamma"] == 0.3
    assert event.details["mu_test"] == pytest.approx(2.0 / math.sqrt(2))
    assert event.details["mu_release"] == pytest.approx(2.0 / math.sqrt(2))
    skewed = _event(PTRGDP(test_share=0.2), mu=2.0)
    assert skewed.details["mu_test"] ** 2 + skewed.details["mu_release"] ** 2 == pytest.approx(4.0)
    assert skewed.details["mu_test"] == pytest.approx(2.0 * math.sqrt(0.2))


@pytest.mark.parametrize(
    ("budget", "match"),
    [(pf.GDP(1.0), "delta"), (pf.ApproxDP(1.0, 1e-6), "GDP"), (pf.PureDP(1.0), "GDP")],
)
def test_plan_refuses_budgets_it_cannot_honour(budget: pf.Budget, match: str) -> None:
    with pytest.raises(pf.BudgetError, match=match):
        PTRGDP().plan_smooth(0.1, budget, label="x")


def test_bound_variant_draws_the_documented_bound() -> None:
    """Exact noise: ln b is the noisy ln s on its grid, shifted up by ceil(sd z_{1-delta}) + 2 steps; the
    release is the value plus the exact discrete Gaussian of scale b / mu_1 on its own grid; test first."""
    mech = PTRGDP()
    event = _event(mech, mu=1.0, delta=1e-6, gamma=0.2)
    out = mech.release_smooth(np.array([3.0]), math.log(0.5), event, np.random.default_rng(4))
    mu0 = mu1 = 1 / math.sqrt(2)
    rng = np.random.default_rng(4)
    test = pp.noise.plan_gaussian(0.2, mu0)
    noisy = float(pp.noise.release(np.array([math.log(0.5)]), test, rng)[0])
    steps = math.ceil(math.sqrt(test.t * test.q) * -ndtri(1e-6)) + 2
    b = math.exp(noisy + test.grid * steps)
    assert (noisy / test.grid).is_integer()
    assert out.bound == b
    release = pp.noise.plan_gaussian(b, mu1)
    assert out.noise_scale == release.scale
    assert out.value[0] == pp.noise.release(np.array([3.0]), release, rng)[0]
    assert (out.value[0] / release.grid).is_integer()
    assert out.passed


def test_float_bound_variant_draws_the_documented_bound() -> None:
    """With float noise: b = exp(ln s + (gamma/mu_0)(Z_0 + z_{1-delta})) and noise b/mu_1, Z_0 drawn first."""
    mech = PTRGDP(exact=False)
    event = _event(mech, mu=1.0, delta=1e-6, gamma=0.2)
    assert event.simulated
    out = mech.release_smooth(np.array([3.0]), math.log(0.5), event, np.random.default_rng(4))
    z0, z1 = np.random.default_rng(4).standard_normal(2)
    mu0 = mu1 = 1 / math.sqrt(2)
    b = math.exp(math.log(0.5) + (0.2 / mu0) * (z0 - ndtri(1e-6)))
    assert out.bound == pytest.approx(b, rel=1e-12)
    assert out.noise_scale == pytest.approx(b / mu1, rel=1e-12)
    assert out.value[0] == pytest.approx(3.0 + b / mu1 * z1, rel=1e-12)
    assert out.passed


def test_classic_variant_passes_fails_and_falls_back() -> None:
    mech = PTRGDP(variant="classic")
    event = _event(mech, gamma=0.05)
    passed = mech.release_smooth(np.array([1.0]), math.log(0.01), event, np.random.default_rng(1), proposal=10.0)
    assert passed.passed
    assert passed.bound == 10.0
    with pytest.raises(pf.PTRFailed, match="nothing was released") as info:
        mech.release_smooth(np.array([0.123456789]), math.log(10.0), event, np.random.default_rng(1), proposal=0.01)
    assert "0.123" not in str(info.value)
    fallback = PTRGDP(variant="classic", on_fail="global")
    out = fallback.release_smooth(
        np.array([1.0]), math.log(10.0), event, np.random.default_rng(1), proposal=0.01, fallback_sensitivity=2.0
    )
    assert not out.passed
    assert out.bound == 2.0
    with pytest.raises(pf.ConfigError, match="proposal"):
        mech.release_smooth(np.array([1.0]), 0.0, event, np.random.default_rng(1))


def test_classic_failure_rate_matches_the_gaussian_tail() -> None:
    """With b_0 = s, the test fails iff Z_0 > -z_{1-delta}... i.e. with probability Phi(-z) -> 1 - delta."""
    mech = PTRGDP(variant="classic")
    gamma, mu, delta = 0.2, 1.0, 0.1
    event = _event(mech, mu=mu, delta=delta, gamma=gamma)
    mu0 = mu / math.sqrt(2)
    # Choose b_0 so that the pass probability is 0.3: ln b_0 - ln s = (gamma/mu0)(z_{0.3} + z_{1-delta}).
    s = 1.0
    b0 = math.exp((gamma / mu0) * (ndtri(0.3) - ndtri(delta)))
    runs = 4000
    passes = 0
    for seed in range(runs):
        try:
            mech.release_smooth(np.array([0.0]), math.log(s), event, np.random.default_rng(seed), proposal=b0)
            passes += 1
        except pf.PTRFailed:
            pass
    se = math.sqrt(0.3 * 0.7 / runs)
    assert passes / runs == pytest.approx(0.3, abs=4 * se)


def _releases(
    mech: PTRGDP, value: float, bound: float, event: pf.PrivacyEvent, rng: np.random.Generator, size: int
) -> np.ndarray:
    """``size`` independent releases through the mechanism's batch path (row i has release_smooth's law)."""
    out = mech.release_smooth_batch(np.full((size, 1), value), np.full(size, math.log(bound)), event, rng)
    assert out.released.all()
    return np.asarray(out.value[:, 0])


def _empirical_mu(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Largest lower-confidence mu over threshold tests: Phi^-1(1 - FPR_hi) - Phi^-1(FNR_hi) at each cut.

    FPR = P(A > t), FNR = P(B <= t). One-sided Clopper-Pearson-free normal bounds with a Bonferroni z over
    the 41 thresholds tested (z = 3.5); returns (lower bound, point estimate) at the most revealing cut.
    """
    n = a.shape[0]
    cuts = np.quantile(np.concatenate([a, b]), np.linspace(0.05, 0.95, 41))
    best_lower, best_point = -np.inf, -np.inf
    for t in cuts:
        fpr = np.mean(a > t)
        fnr = np.mean(b <= t)
        z = 3.5
        fpr_hi = min(1 - 1e-12, fpr + z * math.sqrt(fpr * (1 - fpr) / n) + 1 / n)
        fnr_hi = min(1 - 1e-12, fnr + z * math.sqrt(fnr * (1 - fnr) / n) + 1 / n)
        lower = stats.norm.ppf(1 - fpr_hi) - stats.norm.ppf(fnr_hi)
        point = stats.norm.ppf(1 - fpr) - stats.norm.ppf(fnr)
        if lower > best_lower:
            best_lower, best_point = lower, point
    return float(best_lower), float(best_point)


def test_worst_case_pair_is_within_mu_and_half_noise_is_caught() -> None:
    """On D vs D': g moves by exactly s(D), and s(D') = s(D) e^gamma (the worst case the bound allows).

    With gamma small the proposed bound is close to s, so the release alone is nearly mu_1-GDP; the claim
    mu covers it. The threshold test's lower confidence bound on mu must stay below the claim, and a
    mechanism with half the release noise (effective mu ~ 2 mu_1 = sqrt(2) mu) must exceed it.
    """
    mech = PTRGDP()
    mu, delta, gamma, s = 1.0, 1e-6, 1e-3, 1.0
    event = _event(mech, mu=mu, delta=delta, gamma=gamma)
    rng = np.random.default_rng(2026)
    size = 50_000
    d0 = _releases(mech, 0.0, s, event, rng, size)
    d1 = _releases(mech, s, s * math.exp(gamma), event, rng, size)
    lower, point = _empirical_mu(d0, d1)
    assert lower <= mu
    assert point == pytest.approx(event.details["mu_release"], abs=0.06)  # the release part dominates

    class HalfNoise(PTRGDP):
        def release_smooth_batch(self, values, log_bounds, event, rng, **kw):  # type: ignore[no-untyped-def]
            out = super().release_smooth_batch(values, log_bounds, event, rng, **kw)
            return attrs.evolve(out, value=values + (out.value - values) / 2, noise_scale=out.noise_scale / 2)

    broken = HalfNoise()
    h0 = _releases(broken, 0.0, s, event, rng, size)
    h1 = _releases(broken, s, s * math.exp(gamma), event, rng, size)
    broken_lower, _ = _empirical_mu(h0, h1)
    assert broken_lower > mu, "a PTR-GDP release with half the noise was not caught"


def test_registered_and_routed_through_the_spender() -> None:
    mech = pf.registry.create("mechanism", "ptr-gdp", {"variant": "bound"})
    assert isinstance(mech, pp.SmoothMechanism)
    accountant = pf.registry.create("accountant", "gdp", {})
    spender = PrivacySpender(accountant, pf.GDP(1.0, delta=1e-6))
    half = pf.GDP(1 / math.sqrt(2), delta=5e-7)
    spender.release_smooth(mech, np.array([0.0]), 1.0, 0.1, half, label="a", rng=np.random.default_rng(0))
    spender.release_smooth(mech, np.array([0.0]), 1.0, 0.1, half, label="b", rng=np.random.default_rng(0))
    total = spender.ledger().total
    assert isinstance(total, pf.GDP)
    assert total.mu == pytest.approx(1.0)
    assert total.delta == pytest.approx(1e-6)
    with pytest.raises(pf.BudgetError, match="nothing was released"):
        spender.release_smooth(mech, np.array([0.0]), 1.0, 0.1, half, label="c", rng=np.random.default_rng(0))
