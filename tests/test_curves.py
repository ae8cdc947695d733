"""Privacy curves of budgets and events, checked against brute force and dp-accounting (issue 18).

Each check would fail if a curve's formula, its inverse, or an accountant's composition were too
optimistic: the pure curve against randomized response's hockey-stick divergence computed by hand, the
Gaussian curve and compositions against dp-accounting's (pessimistic) privacy-loss distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privframe as pf
from privframe.privacy.accounting import pure_dp_gdp_mu

pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
common = pytest.importorskip("dp_accounting.pld.common")

EPSILONS = [0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0]


def _hockey_stick(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """``sum max(P - e^eps Q, 0)``: the delta of the pair (P, Q) at eps, by brute force."""
    return float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())


@pytest.mark.parametrize("pure", [0.2, 1.0, 3.0])
def test_the_pure_curve_is_randomized_responses_hockey_stick(pure: float) -> None:
    keep = math.exp(pure) / (1 + math.exp(pure))
    p, q = np.array([keep, 1 - keep]), np.array([1 - keep, keep])
    curve = pf.privacy_curve(pf.PureDP(pure))
    for eps in EPSILONS:
        assert curve.delta(eps) == pytest.approx(_hockey_stick(p, q, eps), abs=1e-15)


@pytest.mark.parametrize(("pure", "delta0"), [(0.5, 1e-6), (1.0, 1e-3), (2.0, 0.05)])
def test_the_approx_curve_is_the_dominating_pair_and_matches_dp_accounting(pure: float, delta0: float) -> None:
    keep = (1 - delta0) * math.exp(pure) / (1 + math.exp(pure))
    p = np.array([delta0, keep, 1 - delta0 - keep, 0.0])
    q = np.array([0.0, 1 - delta0 - keep, keep, delta0])
    curve = pf.privacy_curve(pf.ApproxDP(pure, delta0))
    reference = pld_module.from_privacy_parameters(common.DifferentialPrivacyParameters(pure, delta0))
    for eps in EPSILONS:
        assert curve.delta(eps) == pytest.approx(_hockey_stick(p, q, eps), abs=1e-15)
        assert curve.delta(eps) == pytest.approx(reference.get_delta_for_epsilon(eps), rel=1e-3, abs=1e-9)


@pytest.mark.parametrize("mu", [0.3, 1.0, 4.0])
def test_the_gaussian_curve_matches_dp_accounting_from_below(mu: float) -> None:
    curve = pf.privacy_curve(pf.GDP(mu))
    reference = pld_module.from_gaussian_mechanism(standard_deviation=1 / mu, sensitivity=1.0)
    for eps in EPSILONS:
        ours, theirs = curve.delta(eps), reference.get_delta_for_epsilon(eps)
        assert ours <= theirs * (1 + 1e-9) + 1e-12  # dp-accounting's PLD is pessimistic
        assert ours == pytest.approx(theirs, rel=2e-3, abs=1e-9)
    assert pf.privacy_curve(pf.GDP(mu, delta=1e-4)).delta(1.0) == pytest.approx(1e-4 + curve.delta(1.0))


@pytest.mark.parametrize(
    "budget", [pf.GDP(0.5), pf.GDP(2.0, delta=1e-7), pf.PureDP(0.7), pf.ApproxDP(1.5, 1e-6), pf.PureDP(8.0)]
)
def test_epsilon_inverts_delta_and_never_reports_too_small_an_epsilon(budget: pf.Budget) -> None:
    curve = pf.privacy_curve(budget)
    for delta in (1e-9, 1e-6, 1e-3, 0.05):
        base = getattr(budget, "delta", 0.0)
        # a GDP curve reaches its delta only as eps grows without bound; an (eps, delta) curve at eps
        if delta < base or (isinstance(budget, pf.GDP) and delta == base):
            with pytest.raises(pf.BudgetError):
                curve.epsilon(delta)
            continue
        eps = curve.epsilon(delta)
        assert curve.delta(eps) <= delta
        if eps > 0:
            assert curve.delta(eps * (1 - 1e-6)) > delta


def test_gdp_and_pure_views() -> None:
    assert pf.privacy_curve(pf.GDP(1.5)).gdp_mu == 1.5
    assert pf.privacy_curve(pf.GDP(1.5)).pure_epsilon is None
    assert pf.privacy_curve(pf.GDP(1.5, delta=1e-6)).gdp_mu is None
    assert pf.privacy_curve(pf.ApproxDP(1.0, 1e-6)).gdp_mu is None
    pure = pf.privacy_curve(pf.PureDP(1.0))
    assert pure.pure_epsilon == 1.0
    assert pure.gdp_mu == pure_dp_gdp_mu(1.0)
    # the pure curve lies under the Gaussian curve of its mu everywhere, and touches it (tight)
    gauss = pf.privacy_curve(pf.GDP(pure.gdp_mu))
    grid = np.linspace(0, 2, 201)
    gaps = [gauss.delta(e) - pure.delta(e) for e in grid]
    assert min(gaps) >= -1e-12
    smaller = pf.privacy_curve(pf.GDP(0.99 * pure.gdp_mu))
    assert any(smaller.delta(e) < pure.delta(e) for e in grid)


def test_events_carry_their_curve_and_refuse_junk() -> None:
    event = pf.PrivacyEvent("center", "laplace", pf.PureDP(0.5), count=3)
    assert event.curve == pf.privacy_curve(pf.PureDP(0.5))
    with pytest.raises(pf.ConfigError, match=r"^budget: "):
        pf.privacy_curve(1.0)  # type: ignore[arg-type]


def test_an_event_pld_composes_its_count() -> None:
    event = pf.PrivacyEvent("bootstrap", "gaussian", pf.GDP(0.1), count=100)
    eps = pf.event_pld(event).get_epsilon_for_delta(1e-5)
    exact = pf.GDP(1.0).to_approx_dp(1e-5).epsilon
    assert exact <= eps <= exact * 1.01


def test_a_ptr_event_has_no_pld() -> None:
    event = pf.PrivacyEvent("radius", "ptr-gdp", pf.GDP(1.0, delta=1e-6))
    with pytest.raises(pf.ConfigError, match=r"^event\.budget: .*'gdp' accountant"):
        pf.event_pld(event)


def test_a_ledger_total_is_never_below_dp_accountings_composition_of_its_events() -> None:
    """cr-gs's two Laplace releases under (2, 1e-6)-DP: our total against the PLD of the same events."""
    x = np.random.default_rng(0).uniform(size=400)
    ledger = pf.confidence_interval(
        x, "mean", method="cr-gs", mechanism="laplace", accountant="approx-dp", budget=pf.ApproxDP(2.0, 1e-6),
        bounds=(0, 1), rng=1,
    ).privacy  # fmt: skip
    first, second = (pf.event_pld(event) for event in ledger.events)
    composed = first.compose(second)
    total = ledger.as_approx_dp(1e-6)
    assert total.epsilon >= composed.get_epsilon_for_delta(1e-6) * (1 - 1e-3)
    assert composed.get_delta_for_epsilon(total.epsilon) <= 1e-6


@pytest.mark.parametrize("k", [2, 10, 50])
def test_homogeneous_pure_compositions_agree_with_dp_accounting(k: int) -> None:
    """Optimal composition of k eps-DP releases (ours) against the PLD of k randomized responses."""
    accountant = pf.registry.create("accountant", "approx-dp", composition="optimal")
    event = pf.PrivacyEvent("x", "laplace", pf.PureDP(0.3), count=k)
    ours = accountant.compose([event], pf.ApproxDP(100.0, 1e-6))
    theirs = pf.event_pld(event).get_epsilon_for_delta(ours.delta)
    assert ours.epsilon >= theirs * (1 - 2e-3)  # never more optimistic than the numerical composition
    assert ours.epsilon <= theirs * 1.02 + 1e-3  # and tight (optimal composition is exact)


@pytest.mark.parametrize("k", [1, 4, 25])
def test_the_gdp_accountants_pure_events_are_sound_against_dp_accounting(k: int) -> None:
    """k eps-DP events composed as GDP(sqrt(k) mu(eps)): the PLD's delta never exceeds the GDP curve's."""
    accountant = pf.registry.create("accountant", "gdp")
    event = pf.PrivacyEvent("x", "laplace", pf.PureDP(0.5), count=k)
    total = accountant.compose([event])
    pld = pf.event_pld(event, discretization=1e-5)
    for eps in EPSILONS:
        assert pld.get_delta_for_epsilon(eps) <= pf.privacy_curve(total).delta(eps) + 1e-4
