"""Dette-Graw, the private m-out-of-n bootstrap (algorithms.md section 7), and the non-private bootstrap.

Dette-Graw is a baseline: it is implemented as specified and never tuned. Its ``"clt"`` calibration is
asymptotic and the ledger says so. Its coverage behaviour is pinned by measurement (see
``test_coverage_falls_to_the_bootstrap_as_n_grows``): on the privboot-mean data at mu = 1 the release
noise dominates at small n, so it over-covers there, and it approaches the non-private bootstrap as n grows.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe._rng import spawn_generators
from privframe.resampling.blocks import draw
from privframe_std.methods.dette_graw import (
    dette_graw_mu0,
    effective_rate,
    inclusion_probability,
    multiplicity_chi_square,
    multiplicity_pmf,
)
from privframe_std.methods.privboot.accounting import mixture_log_ratio, resample_mixture, resample_pld
from privframe_std.samplers import kappa_star


def _data(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """The privboot-mean population: clip(N(0.5, 1), [0, 1]), mean 0.5."""
    return np.clip(np.random.default_rng(seed).normal(0.5, 1.0, size=n), 0.0, 1.0)


def _poisson_mu0(mu_boot: float, B: int, p: float) -> float:
    """The calibration "clt" used before multiplicities were counted: ``sqrt(ln(1 + mu_boot^2 / (p^2 B)))``."""
    return math.sqrt(math.log1p(mu_boot**2 / (p**2 * B)))


def test_calibration_formulas() -> None:
    """Calibration "clt" solves ``mu_boot^2 = B (E[exp(K K' mu_0^2)] - 1)``; the expectation by brute force."""
    n, m, B, mu_boot = 10_000, 1086, 1000, 1 / math.sqrt(2)
    p = inclusion_probability(n, m)
    assert p == pytest.approx(1 - (1 - 1 / n) ** m, rel=1e-12)
    mu_0 = dette_graw_mu0("clt", mu_boot, B, n, m, 7)
    assert B * multiplicity_chi_square(mu_0, n, m) == pytest.approx(mu_boot**2, rel=1e-10)
    k = np.arange(60)  # P(K >= 60) < 1e-90: nothing the brute force could resolve
    pmf = stats.binom.pmf(k, m, 1 / n)
    brute = pmf @ np.exp(np.outer(k, k) * mu_0**2) @ pmf - 1
    assert multiplicity_chi_square(mu_0, n, m) == pytest.approx(brute, rel=1e-9)
    assert effective_rate(mu_0, n, m) == pytest.approx(math.sqrt(brute / math.expm1(mu_0**2)), rel=1e-9)
    # Counting copies raises the per-release leakage, so mu_0 is below the Poisson formula's.
    assert mu_0 < _poisson_mu0(mu_boot, B, p)
    assert effective_rate(mu_0, n, m) > p
    assert dette_graw_mu0("composition", mu_boot, B, n, m, 7) == pytest.approx(mu_boot / (7 * math.sqrt(B)))
    with pytest.raises(pf.ConfigError, match=r"^calibration:"):
        dette_graw_mu0("rdp", mu_boot, B, n, m, 7)


def test_multiplicity_truncation() -> None:
    """K is cut at the first k with P(K > k) < 1e-300, and that cut is what keeps chi^2 meaningful.

    Without it, E[exp(K K' mu_0^2)] at n = 20000, m = 2020 is dominated by the resample made of m copies of
    one record (probability n^-m, weight exp(m^2 mu_0^2)), and the calibrated mu_0 would halve.
    """
    n, m = 20_000, 2020
    k, log_pmf = multiplicity_pmf(n, m)
    k_max = int(k[-1])
    assert stats.binom.logsf(k_max, m, 1 / n) < math.log(1e-300) <= stats.binom.logsf(k_max - 1, m, 1 / n)
    assert log_pmf == pytest.approx(stats.binom.logpmf(k, m, 1 / n), rel=1e-12)
    mu_0 = dette_graw_mu0("clt", 1 / math.sqrt(2), 1000, n, m, 1)
    log_term = 2 * stats.binom.logpmf(m, m, 1 / n) + m * m * mu_0**2  # the term K = K' = m, left out
    assert log_term > 1000  # the untruncated expectation is astronomically large
    assert multiplicity_chi_square(mu_0, n, m) == pytest.approx(0.5 / 1000, rel=1e-10)


def test_clt_reduces_to_the_poisson_formula() -> None:
    """With one copy at most (m = 1) the new calibration is the old one; as m/n -> 0 it tends to it.

    The per-release GDP parameter is held near 0.1 (B = 50 / p^2) so that only the multiplicities change;
    the relative difference is about m / (2n).
    """
    n, mu_boot = 1_000_000, 1 / math.sqrt(2)
    assert dette_graw_mu0("clt", mu_boot, 10**9, n, 1, 1) == pytest.approx(
        _poisson_mu0(mu_boot, 10**9, 1 / n), rel=1e-12
    )
    gaps = []
    for m in (10, 100, 1000, 10_000):
        p = inclusion_probability(n, m)
        B = round(50 / p**2)
        gap = 1 - dette_graw_mu0("clt", mu_boot, B, n, m, 1) / _poisson_mu0(mu_boot, B, p)
        assert 0 < gap < m / n
        assert effective_rate(dette_graw_mu0("clt", mu_boot, B, n, m, 1), n, m) / p - 1 < m / n
        gaps.append(gap)
    assert all(later > 5 * earlier for earlier, later in itertools.pairwise(gaps))


@pytest.mark.parametrize(("n", "m"), [(3000, 375), (20_000, 2020)])
def test_the_forward_order_has_the_larger_chi_square(n: int, m: int) -> None:
    """chi^2(P || Q) >= chi^2(Q || P), so "clt" calibrates on the forward order (the smaller mu_0).

    P = sum_k P(K = k) N(k mu_0, 1), Q = N(0, 1). To second order in t = mu_0^2 the difference is
    ``chi^2(Q || P) - chi^2(P || Q) = -3 t^2 E[K]^2 Var(K) <= 0``, and since ``P >= (1 - p) Q`` the reverse
    one never exceeds ``p / (1 - p)`` while the forward one grows without bound; checked by quadrature at the
    calibrated mu_0 and across larger ones.
    """
    mixture = resample_mixture(n, m)
    p = mixture[2]
    x = np.linspace(-12.0, 20.0, 20_001)
    dx = x[1] - x[0]
    log_q = -x * x / 2 - 0.5 * math.log(2 * math.pi)
    mu_0 = dette_graw_mu0("clt", 1 / math.sqrt(2), 1000, n, m, 1)
    for mu in (mu_0, 0.05, 0.4, 1.5):
        loss = mixture_log_ratio(x, mu, mixture)
        reverse = float(np.sum(np.exp(log_q - loss)) * dx - 1)  # int Q^2 / P - 1
        forward = multiplicity_chi_square(mu, n, m)
        assert reverse < forward
        assert reverse <= p / (1 - p)
        if mu == mu_0:
            assert forward == pytest.approx(float(np.sum(np.exp(log_q + 2 * loss)) * dx - 1), rel=1e-6)
            t, lam = mu_0**2, m / n
            assert forward - reverse == pytest.approx(3 * t**2 * lam**2 * lam * (1 - 1 / n), rel=0.1)


# ---------------------------------------------------------------------------------------------------------
# The exact worst case: B-fold composition of the multiplicity mixture against N(0, 1), both orders
#
# The comparison is at delta = 1e-6: the delta privframe uses wherever a GDP budget meets an (eps, delta)
# statement (PrivBoot's exact accounting, the experiments' levels), far below 1/n, and on the demanding
# side (the composed curve is skewed: its effective mu grows as delta shrinks).
#
# The accountant is pessimistic (connect-the-dots: every delta it reports is at least the true one), and
# its own error is small: halving its default step moves these effective mu by less than 1e-5.
#
# The CLT is asymptotic in B, so "clt" meets mu_boot exactly only in the limit. At B = 1000 the exact
# effective mu of the new calibration is 1.0% (n = 3000) and 1.3% (n = 20000) above mu_boot, and the
# excess shrinks like 1/B (0.25% at B = 4000, 0.06% at B = 16000). The Poisson formula is 7-8% above at
# B = 1000 and stays about 6.4% above as B grows: it converges to the wrong limit (mu_boot m / (n p)).

DELTA = 1e-6
FINITE_B = 0.015
"""Allowed excess of the exact effective mu over mu_boot at B = 1000: the CLT's finite-B error (measured
1.0% and 1.3%), not the accountant's (< 1e-5, pessimistic)."""


def test_exact_worst_case_n3000() -> None:
    """The review's setting: n = 3000, m = 375, B = 1000, mu = 1 with share 0.5 (mu_boot = 0.7071).

    Measured: old mu_0 = 0.18858 (p = 0.11752) -> exact 0.7621; new mu_0 = 0.17711 (effective rate
    0.12526) -> exact 0.7144. The review reported 0.716 for the old formula; both this accountant and
    dp-accounting's mixture-of-Gaussians PLD give 0.762.
    """
    n, m, B, mu_boot = 3000, 375, 1000, 1 / math.sqrt(2)
    old = _poisson_mu0(mu_boot, B, inclusion_probability(n, m))
    new = dette_graw_mu0("clt", mu_boot, B, n, m, 1)
    assert effective_rate(new, n, m) == pytest.approx(0.12526, abs=1e-5)
    old_exact = resample_pld(old, n, m, B).mu_effective(DELTA)
    new_pld = resample_pld(new, n, m, B)
    new_exact = new_pld.mu_effective(DELTA)
    assert old_exact > 1.07 * mu_boot  # measured 0.7621: the old formula understates the cost by 7.8%
    assert mu_boot < new_exact <= (1 + FINITE_B) * mu_boot  # measured 0.7144
    # The forward order (mixture against N(0, 1)) is the binding one, as the chi^2 comparison says.
    assert new_pld.reverse.epsilon(DELTA) < new_pld.forward.epsilon(DELTA)
    assert new_pld.reverse.mu_effective(DELTA) < mu_boot  # measured 0.6956


def test_exact_worst_case_default_m_at_n20000() -> None:
    """n = 20000, m = ceil(n / ln n) = 2020, B = 1000: old 0.7556, new 0.7162 (mu_boot = 0.7071)."""
    n, B, mu_boot = 20_000, 1000, 1 / math.sqrt(2)
    m = math.ceil(n / math.log(n))
    old = _poisson_mu0(mu_boot, B, inclusion_probability(n, m))
    new = dette_graw_mu0("clt", mu_boot, B, n, m, 1)
    assert resample_pld(old, n, m, B).mu_effective(DELTA) > 1.06 * mu_boot
    assert mu_boot < resample_pld(new, n, m, B).mu_effective(DELTA) <= (1 + FINITE_B) * mu_boot


@pytest.mark.parametrize(("B", "bound"), [(4000, 0.004), pytest.param(16_000, 0.001, marks=pytest.mark.slow)])
def test_clt_calibration_converges_and_the_old_one_does_not(B: int, bound: float) -> None:
    """As B grows the new calibration's exact cost tends to mu_boot; the old one's stays ~6.4% above.

    Measured at n = 3000, m = 375: new 0.7089 (B = 4000), 0.70756 (16000); old 0.7546, 0.7527.
    """
    n, m, mu_boot = 3000, 375, 1 / math.sqrt(2)
    new = resample_pld(dette_graw_mu0("clt", mu_boot, B, n, m, 1), n, m, B).mu_effective(DELTA)
    old = resample_pld(_poisson_mu0(mu_boot, B, inclusion_probability(n, m)), n, m, B).mu_effective(DELTA)
    assert mu_boot <= new <= (1 + bound) * mu_boot
    assert old > 1.06 * mu_boot


def test_exact_accountant_reproduces_gdp_when_every_release_holds_m_copies() -> None:
    """n = 1: K = m always, so B releases are exactly ``m mu_0 sqrt(B)``-GDP (here 0.5), in both orders.

    The discretisation is pessimistic: delta is never below the truth, and within 1e-3 relative.
    """
    pld = resample_pld(0.01, 1, 5, 100)
    for eps in (0.0, 0.5, 1.0, 3.0):
        exact = pp.accounting.gdp_delta(eps, 0.5)
        for order in (pld.forward, pld.reverse):
            assert exact <= order.delta(eps) <= exact * (1 + 1e-3)
    assert pld.mu_effective(DELTA) == pytest.approx(0.5, rel=1e-5)


def test_exact_accountant_matches_dp_accounting() -> None:
    """The mixture-pair accountant against dp-accounting's mixture-of-Gaussians PLD (both orders, B = 1000)."""
    dp_pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    if not hasattr(dp_pld, "from_mixture_gaussian_mechanism"):
        pytest.skip("this dp-accounting has no mixture-of-Gaussians PLD")
    n, m, B = 3000, 375, 1000
    mu_0 = dette_graw_mu0("clt", 1 / math.sqrt(2), B, n, m, 1)
    k, w, p = resample_mixture(n, m)
    keep = p * w > 1e-30
    reference = dp_pld.from_mixture_gaussian_mechanism(
        1.0,
        [0.0, *(k[keep] * mu_0)],
        [1 - p, *(p * w[keep] / np.sum(w[keep]))],
        value_discretization_interval=1e-4,
    ).self_compose(B)
    ours = resample_pld(mu_0, n, m, B)
    for delta in (1e-3, DELTA):
        assert ours.epsilon(delta) == pytest.approx(reference.get_epsilon_for_delta(delta), rel=2e-4)


@pytest.mark.parametrize("calibration", ["clt", "composition"])
def test_noise_scales_and_ledger(calibration: str) -> None:
    n, mu = 10_000, 1.0
    res = pf.confidence_interval(
        _data(n, 0), "mean", method="dette-graw", budget=pf.GDP(mu), bounds=(0, 1), calibration=calibration, rng=1
    )
    m = math.ceil(n / math.log(n))
    kappa = kappa_star(n, m, 1000, 1 / n)
    d = res.diagnostics
    assert (res.parameters["m"], res.parameters["B"], res.parameters["kappa"]) == (m, 1000, kappa)
    mu_c = mu_boot = mu / math.sqrt(2)
    p = 1 - (1 - 1 / n) ** m
    if calibration == "clt":
        mu_0 = dette_graw_mu0("clt", mu_boot, 1000, n, m, kappa)
        assert 1000 * multiplicity_chi_square(mu_0, n, m) == pytest.approx(mu_boot**2, rel=1e-10)
    else:
        mu_0 = mu_boot / (kappa * math.sqrt(1000))
    assert d["mu_0"] == pytest.approx(mu_0, rel=1e-12)
    assert d["p"] == pytest.approx(p, rel=1e-12)
    # The noise is Delta / mu, or a hair above it (about a relative 2^-20 / mu, mu the event's) where the
    # mechanism releases on a grid.
    release_mu = mu_0 if calibration == "clt" else kappa * mu_0
    assert d["center_noise"] == pytest.approx((1 / n) / mu_c, rel=2.0**-18 / mu_c)
    assert d["release_noise"] == pytest.approx((1 / m) / mu_0, rel=2.0**-18 / release_mu)
    center, boot = res.privacy.events
    assert isinstance(center.budget, pf.GDP)
    assert isinstance(boot.budget, pf.GDP)
    assert isinstance(res.privacy.total, pf.GDP)
    assert center.budget.mu == pytest.approx(mu_c, rel=1e-15)
    assert center.asymptotic is False
    if calibration == "clt":
        assert boot.budget.mu == pytest.approx(mu_boot, rel=1e-15)
        assert boot.count == 1
        assert boot.asymptotic is True
        assert boot.details["effective_rate"] == pytest.approx(effective_rate(mu_0, n, m), rel=1e-12)
        assert boot.details["effective_rate"] > boot.details["p"] == pytest.approx(p, rel=1e-12)
        assert "E[exp(K K' mu_0^2)]" in boot.note
        assert "asymptotic" in boot.note
    else:
        assert boot.budget.mu == pytest.approx(kappa * mu_0)  # group privacy: kappa copies of the record
        assert boot.count == 1000
        assert boot.asymptotic is False
    assert res.privacy.total.mu == pytest.approx(mu, rel=1e-12)
    assert res.privacy.accountant == "gdp"


def test_basic_interval_formula_with_negligible_noise() -> None:
    """With mu huge the noise vanishes and the interval is the non-private basic m-out-of-n interval.

    Uses the "composition" calibration: under "clt", mu_0 solves mu_boot^2 = B (E[exp(K K' mu_0^2)] - 1) and
    grows only logarithmically in mu (or slower), so the release noise never becomes negligible. The
    resamples are re-drawn from the same (first) spawned stream the method uses.
    """
    n, seed = 3000, 11
    x = _data(n, 2)
    res = pf.confidence_interval(
        x, "mean", method="dette-graw", budget=pf.GDP(1e9), bounds=(0, 1), calibration="composition", rng=seed
    )
    sample_rng = spawn_generators(np.random.SeedSequence(seed), 3)[0]
    sampler = pf.registry.create("sampler", "wr", {"m": "n/log(n)", "B": 1000})
    index = draw(sampler, n, sample_rng).matrix()
    theta_star = x[index].mean(axis=1)
    m = index.shape[1]
    roots = math.sqrt(m) * (theta_star - x.mean())
    q_low, q_high = np.quantile(roots, [0.05, 0.95], method="inverted_cdf")
    assert res.low == pytest.approx(x.mean() - q_high / math.sqrt(n), abs=1e-7)
    assert res.high == pytest.approx(x.mean() - q_low / math.sqrt(n), abs=1e-7)


def test_the_noise_drawn_has_the_claimed_scales() -> None:
    """Constant data: the centre is pure noise, and the interval width is the spread of the release noise.

    Centre: SD Delta_n / mu_c; 250 runs give a relative SE of 1/sqrt(500) = 4.5%; 5 SE = 22%.
    Width: ``sqrt(m/n) (q_95 - q_05)`` of B = 1000 N(0, release_noise^2) draws, 3.29 release_noise sqrt(m/n) in
    expectation; one run's width has relative SE ~2.9%, the mean of 250 runs ~0.2%; 1% allows for the
    inverted-CDF quantiles' O(1/B) bias. Half the release noise would be 50% off.
    """
    n, mu, runs = 400, 1.0, 250
    x = np.full(n, 0.25)
    centers, widths = [], []
    for seed in np.random.SeedSequence(3).spawn(runs):
        res = pf.confidence_interval(
            x, "mean", method="dette-graw", budget=pf.GDP(mu), bounds=(0, 1), rng=seed, calibration="clt"
        )
        centers.append(res.center)
        widths.append(res.width)
    d = res.diagnostics
    m = res.parameters["m"]
    assert np.std(np.array(centers) - 0.25, ddof=1) == pytest.approx(d["center_noise"], rel=5 / math.sqrt(2 * runs))
    expected = 2 * 1.6448536 * d["release_noise"] * math.sqrt(m / n)
    assert np.mean(widths) == pytest.approx(expected, rel=0.01)


def test_budgets_and_parts() -> None:
    x = _data(1000, 4)
    kw: dict[str, Any] = {"method": "dette-graw", "bounds": (0, 1)}
    res = pf.confidence_interval(x, "mean", budget=pf.ApproxDP(2.0, 1e-6), rng=1, **kw)
    assert res.parameters["mu"] == pytest.approx(pp.accounting.gdp_mu_for(2.0, 1e-6))
    with pytest.raises(pf.ConfigError, match=r"^calibration: .*calibration='composition'"):
        pf.confidence_interval(x, "mean", budget=pf.PureDP(1.0), calibration="clt", **kw)
    pure = pf.confidence_interval(x, "mean", budget=pf.PureDP(1.0), rng=1, **kw)  # the default: composition
    assert pure.privacy.total == pf.PureDP(1.0)
    assert pure.parameters["calibration"] == "composition"
    with pytest.raises(pf.ConfigError, match=r"^mechanism: mechanism 'laplace' accepts .* hands it GDP budgets"):
        pf.Pipeline.build("mean", budget=pf.GDP(1.0), mechanism="laplace", **kw)  # refused before any data
    with pytest.raises(pf.ConfigError, match=r"share"):
        pf.confidence_interval(x, "mean", budget=pf.GDP(1.0), share=1.0, **kw)
    with pytest.raises(pf.ConfigError, match=r"^calibration:"):
        pf.confidence_interval(
            x, "mean", budget=pf.GDP(1.0), sampler="bootstrap", B=10, calibration="composition", **kw
        )
    wor = pf.confidence_interval(x, "mean", budget=pf.GDP(1.0), sampler="wor", calibration="composition", rng=1, **kw)
    assert wor.parameters["kappa"] == 1
    assert (res.low, res.high) == (
        (again := pf.confidence_interval(x, "mean", budget=pf.ApproxDP(2.0, 1e-6), rng=1, **kw)).low,
        again.high,
    )


def test_a_pure_budget_is_split_in_epsilon_through_the_accountant() -> None:
    """Under PureDP(2): Laplace noise, eps = 1 on the centre, and B = 200 releases of eps = 1 / 200 each,
    each calibrated to kappa Delta_m; the ledger composes them back to exactly 2-DP."""
    x = _data(1000, 4)
    res = pf.confidence_interval(
        x, "mean", method="dette-graw", budget=pf.PureDP(2.0), calibration="composition", B=200, bounds=(0, 1),
        rng=1,
    )  # fmt: skip
    center, boot = res.privacy.events
    assert (center.mechanism, center.budget, center.count) == ("laplace", pf.PureDP(1.0), 1)
    assert (boot.mechanism, boot.count) == ("laplace", 200)
    assert boot.budget == pf.PureDP(1.0 / 200)
    kappa, delta_m = res.parameters["kappa"], res.diagnostics["delta_m"]
    assert boot.sensitivity == pytest.approx(kappa * delta_m)
    # Laplace scale = sensitivity / eps, the sensitivity charged with the exact sampler's grid rounding
    assert kappa * delta_m * 200 <= boot.noise_scale <= kappa * delta_m * 200 * (1 + 1e-3)
    assert res.privacy.total == pf.PureDP(2.0)
    assert res.low < res.high


def test_the_gdp_composition_split_is_unchanged_by_going_through_the_accountant() -> None:
    """GDP(1), share 0.5: mu_c = mu_boot = 1 / sqrt 2 and each of the B releases is (mu_boot / sqrt B)-GDP."""
    x = _data(1000, 4)
    res = pf.confidence_interval(
        x, "mean", method="dette-graw", budget=pf.GDP(1.0), calibration="composition", B=100, bounds=(0, 1), rng=1
    )
    center, boot = res.privacy.events
    assert center.budget.mu == pytest.approx(math.sqrt(0.5))  # type: ignore[union-attr]
    assert boot.budget.mu == pytest.approx(math.sqrt(0.5) / 10)  # type: ignore[union-attr]
    assert res.diagnostics["mu_0"] == pytest.approx(math.sqrt(0.5) / (10 * res.parameters["kappa"]))
    assert res.privacy.total.mu == pytest.approx(1.0)  # type: ignore[union-attr]


def test_nonprivate_bootstrap_reference() -> None:
    x = _data(2000, 5)
    ref = pf.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=(0, 1), rng=6)
    assert ref.center == pytest.approx(x.mean())
    assert ref.parameters["B"] == 1000
    assert ref.privacy.total is None
    assert not ref.privacy.private
    # The percentile interval of the bootstrap means: 90% width ~ 2 * 1.645 * sd / sqrt(n); sd is ~0.42.
    assert ref.width == pytest.approx(2 * 1.6449 * x.std() / math.sqrt(2000), rel=0.1)
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", method="bootstrap", budget=pf.GDP(1.0), bounds=(0, 1))


def _coverage(n: int, trials: int, seed: int, mu: float = 1.0, calibration: str = "clt") -> tuple[float, float, float]:
    """Coverage of Dette-Graw, its mean width, and the mean width of the non-private bootstrap on the same data."""
    hits, widths, ref_widths = 0, [], []
    for s in np.random.SeedSequence(seed).spawn(trials):
        data_seed, run_seed = s.spawn(2)
        x = _data(n, data_seed)
        res = pf.confidence_interval(
            x, "mean", method="dette-graw", budget=pf.GDP(mu), bounds=(0, 1), rng=run_seed, calibration=calibration
        )
        ref = pf.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=(0, 1), B=200, rng=run_seed)
        hits += res.contains(0.5)
        widths.append(res.width)
        ref_widths.append(ref.width)
    return hits / trials, float(np.mean(widths)), float(np.mean(ref_widths))


def test_small_n_over_covers_and_the_width_ratio_falls() -> None:
    """Pinned behaviour of the paper's 'clt' calibration on the privboot-mean data at mu = 1 (nominal 0.90),
    100 trials per n.

    At n = 200 the release noise (Delta_m / mu_0 ~ 2x the resample spread) dominates the spread of the
    releases: the interval is ~3x as wide as the non-private bootstrap (measured 3.4) and covers almost
    always (measured 1.00 over 150 trials; the bound 0.95 fails only if the true coverage is below ~0.98).
    At n = 2000 the ratio is ~1.32 (and ~1.12 at n = 5000). Width ratios are low-variance: the SE of a
    mean width over 100 trials is below 1%.
    """
    cov_small, width_small, ref_small = _coverage(200, 100, 7)
    _, width_large, ref_large = _coverage(2000, 100, 8)
    assert cov_small >= 0.95
    assert width_small / ref_small > 2.5
    assert width_large / ref_large < 1.5


@pytest.mark.slow
def test_coverage_falls_to_nominal_as_n_grows() -> None:
    """Coverage against n on the privboot-mean data at mu = 1, 300 trials per n (SE <= 0.017 near 0.9).

    Dette-Graw is asymptotic: its coverage is far from nominal at small n (here above it, because the
    release noise inflates the bootstrap spread) and approaches the bootstrap's as n grows. The assertions
    guard the shape (a drop of more than 3 SE from n = 200 to n = 10^4) and against a gross error at
    n = 10^4 (coverage below 0.80 is > 5 SE under nominal); the measured values go in the closing note.
    """
    results = {n: _coverage(n, 300, 100 + n) for n in (200, 1000, 5000, 10_000)}
    cov = {n: r[0] for n, r in results.items()}
    for n, (c, width, ref) in results.items():  # reported in the closing note (run with -s)
        print(f"dette-graw n={n}: coverage {c:.3f}, width {width:.5f}, bootstrap width {ref:.5f}")
    se = math.sqrt(0.9 * 0.1 / 300)
    assert cov[200] - cov[10_000] > 3 * se
    assert cov[10_000] >= 0.80
    assert results[10_000][1] / results[10_000][2] < 1.2
