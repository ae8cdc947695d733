"""Optimal composition, pure DP as GDP, and PrivSub's calibration (algorithms.md 1 and 4).

Oracles: KOV's closed form (an independent implementation with exact binomials), Google's dp-accounting
(privacy-loss distributions of the (eps, delta) worst-case pair, and of the exact worst-case pair of a
subsampled mechanism), the tradeoff curves themselves, and the defining inequalities of the calibration.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from _support import OptionalModule
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.plugin.spending import PrivacySpender
from privframe.privacy import accounting
from privframe_std.methods.privsub import calibration
from privframe_std.methods.privsub.budget import plan_budgets

common = OptionalModule("dp_accounting.pld.common")
pld = OptionalModule("dp_accounting.pld.privacy_loss_distribution")

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)
PLD_GRID = 1e-5  # dp-accounting rounds privacy losses up to this grid: a pessimistic estimate


def kov_delta_i(eps: float, delta: float, k: int, i: int) -> float:
    """KOV (2015) Theorem 3.3: the delta at eps_i = (k - 2i) eps, written with exact integer binomials."""
    total = sum(math.comb(k, ell) * (math.exp((k - ell) * eps) - math.exp((k - 2 * i + ell) * eps)) for ell in range(i))
    delta_i = total / (1 + math.exp(eps)) ** k
    # 1 - (1 - delta)^k (1 - delta_i), written without cancellation for tiny delta
    return -math.expm1(k * math.log1p(-delta) + math.log1p(-delta_i))


def pld_of_pair(eps: float, delta: float, k: int) -> Any:
    base = pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(eps, delta), value_discretization_interval=PLD_GRID
    )
    return base.self_compose(k)


# ---------------------------------------------------------------------------------------------------------
# Optimal composition


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.3, 0.0, 2), (0.5, 1e-6, 7), (0.1, 1e-8, 60), (2.0, 1e-5, 12)])
def test_optimal_composition_matches_kov_breakpoints(eps: float, delta: float, k: int) -> None:
    for i in range(k // 2 + 1):
        exact = kov_delta_i(eps, delta, k, i)
        assert accounting.optimal_composition_delta(eps, delta, k, (k - 2 * i) * eps) == pytest.approx(
            exact, rel=1e-10, abs=1e-15
        )


def test_optimal_composition_hand_values() -> None:
    # k = 1: the (eps, delta) pair itself. At eps' = 0 the hockey stick is the total variation
    # delta + (1 - delta) tanh(eps / 2); at eps' = eps it is delta.
    eps, delta = 1.0, 1e-3
    assert accounting.optimal_composition_delta(eps, delta, 1, 0.0) == pytest.approx(
        delta + (1 - delta) * math.tanh(eps / 2), rel=1e-13
    )
    assert accounting.optimal_composition_delta(eps, delta, 1, eps) == pytest.approx(delta, rel=1e-12)
    # k = 2, delta = 0, eps' = 0: C(2,0)(e^{2e} - 1) / (1 + e^e)^2 (the l = 2 term; l = 1 has gap 0).
    e = 0.7
    expected = (math.exp(2 * e) - 1) / (1 + math.exp(e)) ** 2
    assert accounting.optimal_composition_delta(e, 0.0, 2, 0.0) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 1e-6, 10), (0.1, 1e-8, 60), (0.05, 0.0, 60), (1.0, 1e-7, 5)])
def test_optimal_composition_matches_dp_accounting(eps: float, delta: float, k: int) -> None:
    """dp-accounting composes the PLD of the (eps, delta) worst-case pair numerically.

    Its losses are rounded up to a grid of width h = 1e-5, so its delta at eps' is at least the exact one and
    at most the exact one at eps' - k h. The hockey-stick divergence has slope at least -e^{eps'} in eps', so
    exact(eps') <= pld(eps') <= exact(eps') + e^{eps'} k h.
    """
    composed = pld_of_pair(eps, delta, k)
    for target in (0.0, 0.3, 1.0, 2.5):
        exact = accounting.optimal_composition_delta(eps, delta, k, target)
        numeric = composed.get_delta_for_epsilon(target)
        assert numeric >= exact * (1 - 1e-9) - 1e-15
        assert numeric <= exact + math.exp(target) * k * PLD_GRID


@pytest.mark.parametrize(("eps", "delta", "k", "target"), [(0.2, 0.0, 60, 1e-6), (0.05, 1e-9, 100, 1e-5)])
def test_optimal_epsilon_inverts_and_beats_advanced_and_basic(eps: float, delta: float, k: int, target: float) -> None:
    best = accounting.optimal_composition(eps, delta, k, target)
    assert accounting.optimal_composition_delta(eps, delta, k, best) <= target
    assert accounting.optimal_composition_delta(eps, delta, k, best * (1 - 1e-9)) > target
    slack = target - k * delta
    assert best < accounting.advanced_composition(eps, delta, k, slack)[0]
    assert best < k * eps
    numeric = pld_of_pair(eps, delta, k).get_epsilon_for_delta(target)
    assert numeric == pytest.approx(best, abs=k * PLD_GRID + 1e-9)


def test_optimal_composition_refuses_an_unreachable_delta() -> None:
    with pytest.raises(pf.BudgetError, match=r"^target_delta:"):
        accounting.optimal_composition(0.1, 1e-3, 10, 1e-4)  # below 1 - (1 - 1e-3)^10
    with pytest.raises(pf.BudgetError, match=r"^k:"):
        accounting.optimal_composition_delta(0.1, 0.0, 0, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Amplification by subsampling without replacement, against dp-accounting on the exact worst-case pair


@pytest.mark.parametrize(("eps", "q"), [(2.0, 0.1), (0.5, 0.0465), (1.0, 0.01)])
def test_amplification_matches_the_exact_subsampled_pair(eps: float, q: float) -> None:
    """Randomized response on the differing record: sampled with probability q, else the output law M
    is the same under both datasets; M = Q is the worst case. dp-accounting's PLD of that exact pair gives
    epsilon ln(1 + q (e^eps - 1)) at delta -> 0: the closed form is tight."""
    p_rr = np.array([math.exp(eps), 1.0]) / (1 + math.exp(eps))
    q_rr = p_rr[::-1]
    mixed_p, mixed_q = q * p_rr + (1 - q) * q_rr, q_rr
    pair = pld.from_two_probability_mass_functions(
        {0: math.log(mixed_q[0]), 1: math.log(mixed_q[1])},  # lower
        {0: math.log(mixed_p[0]), 1: math.log(mixed_p[1])},  # upper: the privacy loss is log(upper / lower)
        value_discretization_interval=PLD_GRID,
    )
    closed = accounting.amplify_wor(eps, 0.0, round(q * 10_000), 10_000)[0]
    assert closed == pytest.approx(math.log1p(q * math.expm1(eps)), rel=1e-12)
    assert pair.get_epsilon_for_delta(1e-12) == pytest.approx(closed, abs=2 * PLD_GRID)
    # Composing 60 such pairs exactly (PLD) never needs more epsilon than privframe's optimal composition of
    # 60 (closed, 0)-DP calls: the calibration's composition is a valid bound for the worst case.
    exact_60 = pair.self_compose(60).get_epsilon_for_delta(1e-6)
    assert exact_60 <= accounting.optimal_composition(closed, 0.0, 60, 1e-6) + 60 * PLD_GRID


def test_amplification_reference_value() -> None:
    assert accounting.amplify_wor(2.0, 1e-6, 10, 100)[0] == pytest.approx(0.4940287, abs=1e-6)


# ---------------------------------------------------------------------------------------------------------
# Pure DP as GDP


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
def test_pure_dp_implies_gdp_exactly_at_the_corner(eps: float) -> None:
    mu = accounting.pure_dp_gdp_mu(eps)
    alpha = np.linspace(0.0, 1.0, 200_001)
    pure_curve = np.maximum.reduce([np.zeros_like(alpha), 1 - math.exp(eps) * alpha, math.exp(-eps) * (1 - alpha)])
    gauss = stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu)
    assert np.all(pure_curve >= gauss - 1e-12)
    corner = 1 / (1 + math.exp(eps))
    assert stats.norm.cdf(stats.norm.ppf(1 - corner) - mu) == pytest.approx(corner, rel=1e-9)
    # tight: a slightly smaller mu is violated at the corner
    assert stats.norm.cdf(stats.norm.ppf(1 - corner) - mu * (1 - 1e-6)) > corner
    # the inverse
    back = accounting.gdp_pure_epsilon(mu)
    assert back == pytest.approx(eps, rel=1e-9)
    assert accounting.pure_dp_gdp_mu(back) <= mu


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.0])
def test_pure_dp_as_gdp_against_dp_accounting(eps: float) -> None:
    """The privacy profile of eps-DP (dp-accounting's PLD of the pure pair) lies below the mu-GDP profile."""
    mu = accounting.pure_dp_gdp_mu(eps)
    pure = pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(eps, 0.0), value_discretization_interval=1e-6
    )
    for target in np.linspace(0.0, eps, 11):
        assert pure.get_delta_for_epsilon(float(target)) <= accounting.gdp_delta(float(target), mu) + 1e-6
    assert pure.get_delta_for_epsilon(0.0) == pytest.approx(accounting.gdp_delta(0.0, mu), rel=1e-4)


# ---------------------------------------------------------------------------------------------------------
# Calibration


def test_calibration_closed_forms() -> None:
    n, m, T, eps, delta = 10_000, 465, 60, 1.0, 1e-6
    cal = calibration.calibrate_subsampled(eps, delta, n=n, m=m, count=T)
    q = m / n
    basic = math.log1p(math.expm1((eps / 2) / T) / q)
    assert cal.candidates["basic"] == pytest.approx(basic, rel=1e-10)
    # advanced: with slack delta/2 the amplified composition hits (1 - share) eps exactly
    adv_amp = accounting.amplify_wor(cal.candidates["advanced"], 0.0, m, n)[0]
    assert accounting.advanced_composition(adv_amp, 0.0, T, delta / 2)[0] == pytest.approx(eps / 2, rel=1e-10)
    # optimal: its composed delta at (1 - share) eps is the slack delta/2
    opt_amp = accounting.amplify_wor(cal.candidates["optimal"], 0.0, m, n)[0]
    assert accounting.optimal_composition_delta(opt_amp, 0.0, T, eps / 2) == pytest.approx(delta / 2, rel=1e-8)
    assert cal.composition == "optimal"
    assert cal.candidates["basic"] < cal.candidates["advanced"] < cal.candidates["optimal"]
    assert (cal.epsilon_full, cal.delta_full) == (0.5, 0.0)
    assert cal.epsilon_amplified == pytest.approx(opt_amp, rel=1e-15)
    assert cal.epsilon_total <= eps
    assert cal.delta_total == pytest.approx(delta / 2)


def test_calibration_pure_budget_uses_basic_composition() -> None:
    cal = calibration.calibrate_subsampled(2.0, 0.0, n=5000, m=300, count=60)
    assert cal.composition == "basic"
    assert math.isnan(cal.candidates["advanced"])
    assert cal.delta_total == 0.0
    assert 60 * cal.epsilon_amplified == pytest.approx(1.0, rel=1e-12)


def test_calibration_with_per_call_delta_splits_delta() -> None:
    n, m, T, delta = 10_000, 465, 60, 1e-6
    cal = calibration.calibrate_subsampled(1.0, delta, n=n, m=m, count=T, per_call_delta=True)
    assert cal.delta_full == pytest.approx(delta / 4)
    assert T * cal.delta_amplified == pytest.approx(delta / 4)
    assert cal.delta_call == pytest.approx(cal.delta_amplified * n / m)
    assert cal.delta_total <= delta * (1 + 1e-12)
    with pytest.raises(pf.BudgetError, match=r"^delta:"):
        calibration.calibrate_subsampled(1.0, 0.0, n=n, m=m, count=T, per_call_delta=True)


@pytest.mark.parametrize("mode", ["basic", "advanced", "optimal"])
def test_forced_composition_is_used_and_tight(mode: str) -> None:
    n, m, T, eps, delta = 2000, 159, 60, 5.0, 1e-6
    cal = calibration.calibrate_subsampled(eps, delta, n=n, m=m, count=T, composition=mode)
    assert cal.composition == mode
    assert cal.epsilon_total <= eps * (1 + 1e-12)
    # the per-call epsilon is the largest that fits: 1e-9 more does not
    above = accounting.amplify_wor(cal.epsilon_call * (1 + 1e-9), 0.0, m, n)[0]
    if mode == "basic":
        assert T * above > eps / 2
    elif mode == "advanced":
        assert accounting.advanced_composition(above, 0.0, T, delta / 2)[0] > eps / 2
    else:
        assert accounting.optimal_composition_delta(above, 0.0, T, eps / 2) > delta / 2


@PROPERTY
@given(
    n=st.integers(50, 200_000),
    frac=st.floats(0.001, 0.9),
    T=st.integers(2, 5000),
    eps=st.floats(0.01, 20.0),
    log_delta=st.floats(-12.0, -2.0),
    pure_budget=st.booleans(),
    per_call_delta=st.booleans(),
    share=st.floats(0.05, 0.95),
)
def test_calibrated_total_never_exceeds_the_budget(
    n: int, frac: float, T: int, eps: float, log_delta: float, pure_budget: bool, per_call_delta: bool, share: float
) -> None:
    m = max(1, min(n - 1, round(frac * n)))
    delta = 0.0 if pure_budget else 10.0**log_delta
    if per_call_delta and pure_budget:
        per_call_delta = False
    cal = calibration.calibrate_subsampled(eps, delta, n=n, m=m, count=T, share=share, per_call_delta=per_call_delta)
    assert cal.epsilon_total <= eps * (1 + 1e-12)
    assert cal.delta_total <= delta * (1 + 1e-12)
    # and the recorded composition really gives the recorded composed epsilon at the recorded delta
    if cal.composition == "optimal":
        assert (
            accounting.optimal_composition_delta(cal.epsilon_amplified, cal.delta_amplified, T, cal.epsilon_composed)
            <= cal.delta_composed * (1 + 1e-12) + 1e-300
        )
    elif cal.composition == "basic":
        assert cal.epsilon_composed == pytest.approx(T * cal.epsilon_amplified, rel=1e-12)


@PROPERTY
@given(
    n=st.integers(20, 50_000),
    frac=st.floats(0.01, 0.9),
    T=st.integers(2, 200),
    eps=st.floats(0.05, 15.0),
    log_delta=st.floats(-12.0, -3.0),
    unit=st.sampled_from(["approx", "pure", "gdp"]),
    mechanism=st.sampled_from(["laplace", "gaussian", "exponential"]),
)
def test_privsub_ledger_total_never_exceeds_the_budget(
    n: int, frac: float, T: int, eps: float, log_delta: float, unit: str, mechanism: str
) -> None:
    """The ledger privsub records (calibration, per-call events composed by the registered accountant) fits
    the requested budget."""
    m = max(2, min(n - 1, round(frac * n)))
    budget: pf.Budget = {
        "approx": pf.ApproxDP(eps, 10.0**log_delta),
        "pure": pf.PureDP(eps),
        "gdp": pf.GDP(eps / 4),
    }[unit]
    statistic = pf.registry.create("statistic", "median" if mechanism == "exponential" else "mean")
    estimator = pp.MechanismEstimator(statistic, pf.registry.create("mechanism", mechanism), pf.Bounds(0.0, 1.0))
    if unit == "pure" and mechanism == "gaussian":
        with pytest.raises(pf.BudgetError):
            plan_budgets(budget, estimator, n=n, m=m, count=T, share=0.5, slack_share=0.5, composition="best")
        return
    plan = plan_budgets(budget, estimator, n=n, m=m, count=T, share=0.5, slack_share=0.5, composition="best")
    accountant = pf.registry.create("accountant", "gdp" if isinstance(budget, pf.GDP) else "approx-dp")
    spender = PrivacySpender(accountant, budget)  # refuses (BudgetError) an event that would not fit
    full_event, sub_event = (
        estimator.plan(n, plan.full_budget, label="full"),
        estimator.plan(m, plan.sub_budget, label="s"),
    )
    for event in plan.events(full_event, sub_event, n=n, m=m):
        spender.charge(event)
    ledger = spender.ledger()
    total = ledger.total
    assert total is not None
    assert [e.count for e in ledger.events] == [1, T]
    if isinstance(budget, pf.GDP):
        assert isinstance(total, pf.GDP)
        assert total.mu <= budget.mu * (1 + 1e-12)
        full, sub = ledger.events
        if isinstance(sub.budget, pf.PureDP):  # a pure estimator: amplified by subsampling, exactly
            from privframe.privacy.accounting import pure_dp_gdp_mu
            from privframe.privacy.amplification import subsampled_pure_gdp_mu

            assert isinstance(full.budget, pf.PureDP)
            group = (
                subsampled_pure_gdp_mu(sub.budget.epsilon, m / n, T)
                if m < n
                else math.sqrt(T) * pure_dp_gdp_mu(sub.budget.epsilon)
            )
            assert math.hypot(pure_dp_gdp_mu(full.budget.epsilon), group) == pytest.approx(total.mu, rel=1e-12)
        else:
            mus = [e.budget.mu for e in ledger.events]  # type: ignore[union-attr]
            assert math.sqrt(mus[0] ** 2 + T * mus[1] ** 2) == pytest.approx(total.mu, rel=1e-12)
    else:
        assert total.epsilon <= budget.epsilon * (1 + 1e-12)
        total_delta = getattr(total, "delta", 0.0)
        assert total_delta <= getattr(budget, "delta", 0.0) * (1 + 1e-12)


def test_accountant_pld_cross_check_of_a_privsub_ledger() -> None:
    """dp-accounting composes the same ledger (full call + T amplified pure calls) to no more epsilon."""
    cal = calibration.calibrate_subsampled(5.0, 1e-6, n=10_000, m=465, count=60)
    sub = pld.from_privacy_parameters(
        common.DifferentialPrivacyParameters(cal.epsilon_amplified, 0.0), value_discretization_interval=1e-4
    ).self_compose(60)
    full = pld.from_laplace_mechanism(1.0, sensitivity=cal.epsilon_full, value_discretization_interval=1e-4)
    numeric = full.compose(sub).get_epsilon_for_delta(1e-6)
    assert numeric <= 5.0 + 61 * 1e-4
