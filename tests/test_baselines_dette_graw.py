"""Dette-Graw, the private m-out-of-n bootstrap (algorithms.md section 7), and the non-private bootstrap.

Dette-Graw is a baseline: it is implemented as specified and never tuned. Its ``"clt"`` calibration is
asymptotic and the ledger says so. Its coverage behaviour is pinned by measurement (see
``test_coverage_falls_to_the_bootstrap_as_n_grows``): on the privboot-mean data at mu = 1 the release
noise dominates at small n, so it over-covers there, and it approaches the non-private bootstrap as n grows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe_std.methods.dette_graw import dette_graw_mu0, inclusion_probability
from privframe_std.samplers import kappa_star


def _data(n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """The privboot-mean population: clip(N(0.5, 1), [0, 1]), mean 0.5."""
    return np.clip(np.random.default_rng(seed).normal(0.5, 1.0, size=n), 0.0, 1.0)


def test_calibration_formulas() -> None:
    n, m, B, mu_boot = 10_000, 1086, 1000, 1 / math.sqrt(2)
    p = inclusion_probability(n, m)
    assert p == pytest.approx(1 - (1 - 1 / n) ** m, rel=1e-12)
    assert dette_graw_mu0("clt", mu_boot, B, p, 7) == pytest.approx(math.sqrt(math.log(1 + mu_boot**2 / (p**2 * B))))
    assert dette_graw_mu0("composition", mu_boot, B, p, 7) == pytest.approx(mu_boot / (7 * math.sqrt(B)))
    with pytest.raises(pf.ConfigError, match=r"^calibration:"):
        dette_graw_mu0("rdp", mu_boot, B, p, 7)


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
    mu_0 = (
        math.sqrt(math.log(1 + mu_boot**2 / (p**2 * 1000)))
        if calibration == "clt"
        else mu_boot / (kappa * math.sqrt(1000))
    )
    assert d["mu_0"] == pytest.approx(mu_0, rel=1e-12)
    assert d["center_noise"] == pytest.approx((1 / n) / mu_c, rel=1e-12)
    assert d["release_noise"] == pytest.approx((1 / m) / mu_0, rel=1e-12)
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
    else:
        assert boot.budget.mu == pytest.approx(kappa * mu_0)  # group privacy: kappa copies of the record
        assert boot.count == 1000
        assert boot.asymptotic is False
    assert res.privacy.total.mu == pytest.approx(mu, rel=1e-12)
    assert res.privacy.accountant == "gdp"


def test_basic_interval_formula_with_negligible_noise() -> None:
    """With mu huge the noise vanishes and the interval is the non-private basic m-out-of-n interval.

    Uses the "composition" calibration: under "clt", mu_0 = sqrt(ln(1 + mu_boot^2 / (p^2 B))) grows only
    logarithmically in mu, so the release noise never becomes negligible. The resamples are re-drawn from
    the same (first) spawned stream the method uses.
    """
    n, seed = 3000, 11
    x = _data(n, 2)
    res = pf.confidence_interval(
        x, "mean", method="dette-graw", budget=pf.GDP(1e9), bounds=(0, 1), calibration="composition", rng=seed
    )
    sample_rng = pf.spawn_generators(np.random.SeedSequence(seed), 3)[0]
    sampler = pf.registry.create("sampler", "wr", {"m": "n/log(n)", "B": 1000})
    index = pf.resampling.draw(sampler, n, sample_rng).matrix()
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
        res = pf.confidence_interval(x, "mean", method="dette-graw", budget=pf.GDP(mu), bounds=(0, 1), rng=seed)
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
    assert res.parameters["mu"] == pytest.approx(pf.accounting.gdp_mu_for(2.0, 1e-6))
    with pytest.raises(pf.BudgetError, match="pure"):
        pf.confidence_interval(x, "mean", budget=pf.PureDP(1.0), **kw)
    with pytest.raises(pf.BudgetError):
        pf.confidence_interval(x, "mean", budget=pf.GDP(1.0), mechanism="laplace", **kw)
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


def _coverage(n: int, trials: int, seed: int, mu: float = 1.0) -> tuple[float, float, float]:
    """Coverage of Dette-Graw, its mean width, and the mean width of the non-private bootstrap on the same data."""
    hits, widths, ref_widths = 0, [], []
    for s in np.random.SeedSequence(seed).spawn(trials):
        data_seed, run_seed = s.spawn(2)
        x = _data(n, data_seed)
        res = pf.confidence_interval(x, "mean", method="dette-graw", budget=pf.GDP(mu), bounds=(0, 1), rng=run_seed)
        ref = pf.confidence_interval(x, "mean", method="bootstrap", budget=None, bounds=(0, 1), B=200, rng=run_seed)
        hits += res.contains(0.5)
        widths.append(res.width)
        ref_widths.append(ref.width)
    return hits / trials, float(np.mean(widths)), float(np.mean(ref_widths))


def test_small_n_over_covers_and_the_width_ratio_falls() -> None:
    """Pinned behaviour on the privboot-mean data at mu = 1 (nominal 0.90), 100 trials per n.

    At n = 200 the release noise (Delta_m / mu_0 ~ 2x the resample spread) dominates the spread of the
    releases: the interval is ~3x as wide as the non-private bootstrap (measured 3.1) and covers almost
    always (measured 1.00 over 150 trials; the bound 0.95 fails only if the true coverage is below ~0.98).
    At n = 2000 the ratio is ~1.27 (and ~1.10 at n = 5000). Width ratios are low-variance: the SE of a
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
