"""PrivSub (algorithms.md 4): front door, calibration in the result, noise scales, the noise drawn, the ECDF
and intervals, user-declared estimators, errors, and coverage."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.privacy import accounting
from privframe_std.methods.privsub import SubsampleECDF, calibration

TRUNC = stats.truncnorm(a=-3, b=2, scale=2)  # experiments.md seed1/seed2 median data, bounds (-6, 4)
MEDIAN_TRUTH = -0.0536489
KS_TRUTH = 0.0967900


def _lattice(actual: float, expected: float, parameter: float) -> None:
    """The exact lattice noise scale: at least the continuous one, at most ``max_scale_ratio`` above it."""
    assert expected <= actual <= expected * pp.noise.max_scale_ratio(parameter)


def _options(statistic: str) -> dict[str, object]:
    if statistic in ("median", "mean"):
        return {"bounds": (-6, 4)}
    if statistic == "ks":
        return {"reference": stats.norm(0, 1.5)}
    return {"bounds": pf.L2Ball(1.0)}  # the logistic generator's features lie on the unit ball


def _data(statistic: str, n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if statistic in ("median", "mean"):
        return np.asarray(TRUNC.rvs(n, random_state=rng))
    if statistic == "ks":
        return rng.normal(size=n)
    from privframe.experiments.generators import Logistic

    return Logistic().sample(n, rng)


# ---------------------------------------------------------------------------------------------------------
# The front door and what the result carries


@pytest.mark.parametrize("statistic", ["median", "mean", "ks", "logistic-slope"])
def test_front_door_result_carries_interval_ecdf_ledger_and_calibration(statistic: str) -> None:
    n = 10_000
    budget = pf.ApproxDP(1, 1e-6)
    res = pf.confidence_interval(
        _data(statistic, n, 1), statistic, method="privsub", budget=budget, rng=1, **_options(statistic)
    )
    assert isinstance(res, pf.IntervalResult)
    assert res.low < res.high
    m = math.ceil(n ** (2 / 3))
    assert (res.parameters["n"], res.parameters["m"], res.parameters["T"]) == (n, m, 60)
    ecdf = res.diagnostics["ecdf"]
    assert ecdf.count == 60
    # read off the ECDF (which reports the data's own coordinates; the mean and median run on data shifted by
    # the public lower bound, so the two agree to rounding)
    assert (res.low, res.high) == pytest.approx(ecdf.interval(0.9), rel=1e-12, abs=1e-12)
    assert ecdf.center == pytest.approx(res.center, rel=1e-12, abs=1e-12)
    # the ledger: one full-data call and T subsample calls, amplified and composed within the budget by the
    # registered accountant
    ledger = res.privacy
    assert [(e.label, e.count) for e in ledger.events] == [("full", 1), ("subsample", 60)]
    assert ledger.accountant == "approx-dp"
    assert ledger.total.epsilon <= 1.0 * (1 + 1e-12)
    assert ledger.total.delta <= 1e-6 * (1 + 1e-12)
    accountant = pf.registry.create("accountant", "approx-dp")
    assert ledger.total == accountant.compose(ledger.events, budget)
    # the per-call budgets in the diagnostics are the calibration's
    cal = calibration.calibrate_subsampled(1.0, 1e-6, n=n, m=m, count=60, per_call_delta=False)
    d = res.diagnostics
    assert d["epsilon_full"] == cal.epsilon_full == 0.5
    assert d["epsilon_sub"] == cal.epsilon_call
    assert d["epsilon_sub_amplified"] == pytest.approx(math.log1p(m / n * math.expm1(cal.epsilon_call)), rel=1e-14)
    assert d["composition"] == "optimal"
    sub = ledger.events[1]
    assert sub.budget == pf.PureDP(cal.epsilon_call)  # per call, on its own m records
    assert sub.subsample == pp.Subsample(n=n, m=m)  # which the accountant amplifies
    assert sub.details["sampling_rate"] == m / n
    assert "amplified by subsampling without replacement" in sub.note


def test_noise_scales_follow_the_calibration() -> None:
    n, a, b = 5000, -6.0, 4.0
    x = _data("mean", n, 2)
    res = pf.confidence_interval(x, "mean", method="privsub", budget=pf.ApproxDP(2, 1e-6), bounds=(a, b), rng=2)
    d, m = res.diagnostics, res.parameters["m"]
    assert res.parameters["estimator"] == "mean+laplace"
    assert d["sensitivity_full"] == pytest.approx((b - a) / n, rel=1e-15)
    _lattice(d["noise_scale_full"], (b - a) / n / d["epsilon_full"], d["epsilon_full"])
    _lattice(d["noise_scale_sub"], (b - a) / m / d["epsilon_sub"], d["epsilon_sub"])
    # Gaussian under GDP: mu_full = sqrt(share) mu, mu_sub = mu sqrt((1 - share) / T); exact composition to mu
    g = pf.confidence_interval(x, "mean", method="privsub", budget=pf.GDP(1.0), bounds=(a, b), rng=2)
    gd = g.diagnostics
    assert g.parameters["estimator"] == "mean+gaussian"
    assert gd["mu_full"] == pytest.approx(math.sqrt(0.5))
    assert gd["mu_sub"] == pytest.approx(math.sqrt(0.5 / 60))
    _lattice(gd["noise_scale_full"], (b - a) / n / gd["mu_full"], gd["mu_full"])
    _lattice(gd["noise_scale_sub"], (b - a) / m / gd["mu_sub"], gd["mu_sub"])
    assert g.privacy.accountant == "gdp"
    assert g.privacy.total.mu == pytest.approx(1.0, rel=1e-12)
    assert [e.budget for e in g.privacy.events] == [pf.GDP(gd["mu_full"]), pf.GDP(gd["mu_sub"])]
    # Gaussian under (eps, delta): per-call delta from the remaining half of delta
    ga = pf.confidence_interval(
        x, "mean", method="privsub", budget=pf.ApproxDP(2, 1e-6), bounds=(a, b), mechanism="gaussian", rng=2
    )
    gad = ga.diagnostics
    assert gad["delta_full"] == pytest.approx(0.25e-6)
    mu_sub = accounting.gdp_mu_for(gad["epsilon_sub"], gad["delta_sub"])
    _lattice(gad["noise_scale_sub"], (b - a) / m / mu_sub, mu_sub)
    assert ga.privacy.total.delta <= 1e-6 * (1 + 1e-12)


@pytest.mark.parametrize("statistic", ["ks", "logistic-slope"])
def test_sensitivities_of_ks_and_logistic(statistic: str) -> None:
    res = pf.confidence_interval(
        _data(statistic, 4000, 3), statistic, method="privsub", budget=pf.PureDP(3.0), rng=3, **_options(statistic)
    )
    d, n, m = res.diagnostics, 4000, res.parameters["m"]
    if statistic == "ks":
        assert (d["sensitivity_full"], d["sensitivity_sub"]) == (1 / n + 2**-50, 1 / m + 2**-50)  # rounding charged
    else:
        assert d["sensitivity_sub"] == pytest.approx(1 / (m * 0.01) + (1e-10 + 2**-40) / 0.01, rel=1e-15)
    _lattice(d["noise_scale_sub"], d["sensitivity_sub"] / d["epsilon_sub"], d["epsilon_sub"])
    assert res.privacy.total == pf.PureDP(res.privacy.total.epsilon)
    assert res.privacy.total.epsilon <= 3.0


def test_the_noise_drawn_has_the_claimed_scale() -> None:
    """Constant data make every subsample mean exact, so the spread of the Z_t is the rescaled noise alone:
    ``sd(Z) = sqrt(m / n) * sqrt(2) * b_sub`` for Laplace noise of scale b_sub. With T = 4000 the sample SD
    has relative SE sqrt((kurtosis - 1) / (4 T)) = sqrt(5 / 16000) = 1.8% (Laplace kurtosis 6); 4 SE is 7%.
    Half the noise would be 50% off."""
    n, T = 4000, 4000
    x = np.full(n, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = pf.confidence_interval(x, "mean", method="privsub", budget=pf.PureDP(2.0), bounds=(0, 1), T=T, rng=4)
    d, m = res.diagnostics, res.parameters["m"]
    spread = np.std(d["ecdf"].values, ddof=1)
    expected = math.sqrt(m / n) * math.sqrt(2) * d["noise_scale_sub"]
    assert spread == pytest.approx(expected, rel=4 * math.sqrt(5 / (4 * T)))


def test_estimator_release_batch_noise_per_row() -> None:
    """The estimator draws independent noise per row: on constant data the T values are i.i.d. Laplace and
    Gaussian draws of the planned scale (SD within 4 SE: 7% for Laplace, 4.5% for Gaussian, T = 4000)."""
    mean = pf.registry.create("statistic", "mean")
    x = np.full(1000, 0.5)
    index = np.tile(np.arange(100), (4000, 1))
    rng = np.random.default_rng(6)
    for name, budget, factor, rel in (
        ("laplace", pf.PureDP(0.5), math.sqrt(2), 4 * math.sqrt(5 / 16000)),
        ("gaussian", pf.GDP(0.5), 1.0, 4 * math.sqrt(1 / 8000)),
    ):
        est = pp.MechanismEstimator(mean, pf.registry.create("mechanism", name), pf.Bounds(0, 1))
        values, event = est.release_batch(x, index, budget, rng)
        _lattice(event.noise_scale, 0.01 / 0.5, 0.5)
        assert np.std(values - 0.5, ddof=1) == pytest.approx(factor * event.noise_scale, rel=rel)


def test_z_values_and_both_intervals_from_a_deterministic_estimator() -> None:
    """A (declared) estimator that returns the exact subset mean: Z_t = theta_n + sqrt(m/n)(theta_t - theta_n),
    the percentile interval reads its quantiles, and 'basic' (the default) reflects them about theta_n."""
    seen: list[np.ndarray] = []

    def exact_mean(x: np.ndarray, index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        seen.append(index.copy())
        return x[index].mean(axis=1)

    est = pp.CallableEstimator(exact_mean, pf.PureDP(0.01), name="exact-mean", batched=True)
    x = _data("mean", 3000, 7)
    res = pf.confidence_interval(
        x, "mean", method="privsub", budget=pf.PureDP(5.0), bounds=(-6, 4), estimator=est, interval="percentile", rng=7
    )
    full, sub = seen
    assert full.shape == (1, 3000)
    m = res.parameters["m"]
    assert sub.shape == (60, m)
    assert all(len(set(row)) == m for row in sub)  # without replacement
    theta_n = x.mean()
    z = theta_n + math.sqrt(m / 3000) * (x[sub].mean(axis=1) - theta_n)
    assert np.allclose(res.diagnostics["ecdf"].values, np.sort(z))
    low, high = np.quantile(z, [0.05, 0.95], method="weibull")
    assert (res.low, res.high) == pytest.approx((low, high))
    basic = pf.confidence_interval(
        x, "mean", method="privsub", budget=pf.PureDP(5.0), bounds=(-6, 4), estimator=est, rng=7
    )
    assert basic.parameters["interval"] == "basic"
    assert (basic.low, basic.high) == pytest.approx((2 * theta_n - high, 2 * theta_n - low))
    # other levels come free from the same ECDF, read the way the method released its interval
    ecdf = res.diagnostics["ecdf"]
    quartiles = np.quantile(z, [0.25, 0.75], method="weibull")
    assert ecdf.interval(0.5) == pytest.approx(tuple(quartiles))
    assert basic.diagnostics["ecdf"].interval(0.5) == pytest.approx(
        (2 * theta_n - quartiles[1], 2 * theta_n - quartiles[0])
    )
    assert ecdf.interval(0.5, "basic") == basic.diagnostics["ecdf"].interval(0.5)
    assert ecdf.cdf(np.inf) == 1.0
    assert ecdf.cdf(ecdf.values[9]) == pytest.approx(10 / 60)


def test_declared_estimator_is_accounted_and_refused_when_it_does_not_fit() -> None:
    calls: list[int] = []

    def noisy_median(subset: np.ndarray, rng: np.random.Generator) -> float:
        calls.append(subset.size)
        return float(np.median(subset) + rng.laplace(0, 0.01))

    x = _data("median", 2000, 8)
    est = pp.CallableEstimator(noisy_median, pf.PureDP(0.5))
    res = pf.confidence_interval(
        x, "median", method="privsub", budget=pf.ApproxDP(4.0, 1e-6), bounds=(-6, 4), estimator=est, rng=8
    )
    m = res.parameters["m"]
    assert calls == [2000] + [m] * 60
    expected = calibration.compose_subsampled(0.5, 0.0, 0.5, 0.0, n=2000, m=m, count=60, target_delta=1e-6)
    assert res.privacy.total.epsilon == pytest.approx(expected.epsilon_total, rel=1e-12)
    assert res.privacy.events[0].budget == pf.PureDP(0.5)
    calls.clear()
    with pytest.raises(pf.BudgetError, match=r"^budget: releasing 'subsample' would spend .* nothing was released"):
        pf.confidence_interval(x, "median", method="privsub", budget=pf.PureDP(1.0), bounds=(-6, 4), estimator=est)
    assert calls == []  # refused before anything ran on the data


def test_reproducible_with_a_seed() -> None:
    x = _data("median", 3000, 9)

    def run(seed: int) -> tuple[float, float]:
        res = pf.confidence_interval(
            x, "median", method="privsub", budget=pf.ApproxDP(1, 1e-6), bounds=(-6, 4), rng=seed
        )
        return res.low, res.high

    assert run(1) == run(1)
    assert run(1) != run(2)


# ---------------------------------------------------------------------------------------------------------
# Options and errors


def test_options_and_errors() -> None:
    x = _data("mean", 2000, 10)

    def ci(**kw: object) -> pf.IntervalResult:
        options: dict[str, object] = {"budget": pf.ApproxDP(1, 1e-6), "bounds": (-6, 4), "rng": 1, **kw}
        return pf.confidence_interval(x, "mean", method="privsub", **options)  # type: ignore[arg-type]

    default = ci()
    assert default.parameters["interval"] == default.diagnostics["ecdf"].kind == "basic"
    assert ci(T=30).parameters["T"] == 30
    assert ci(m=100).parameters["m"] == 100
    assert ci(share=0.8).diagnostics["epsilon_full"] == pytest.approx(0.8)
    assert ci(composition="advanced").diagnostics["composition"] == "advanced"
    with pytest.raises(pf.ConfigError, match=r"^T: conflicts with the sampler's B"):
        ci(T=30, B=100)
    with pytest.raises(pf.ConfigError, match=r"^method.interval:"):
        ci(interval="student")
    with pytest.raises(pf.ConfigError, match=r"^interval: must be one of basic, percentile"):
        SubsampleECDF([0.0, 1.0], 0.5, kind="student")
    with pytest.raises(pf.ConfigError, match=r"^interval: must be one of basic, percentile"):
        default.diagnostics["ecdf"].interval(0.9, "student")
    with pytest.raises(pf.ConfigError, match=r"^method.share:"):
        ci(share=1.0)
    with pytest.raises(pf.ConfigError, match=r"^sampler: privsub needs subsamples drawn without replacement"):
        ci(sampler="wr", on_reject="redraw")
    needs = r"\(it needs a Mechanism or SelectionMechanism\)"
    with pytest.raises(pf.ConfigError, match=rf"^mechanism: method 'privsub' cannot use mechanism 'ptr-gdp' {needs}"):
        ci(mechanism="ptr-gdp")
    with pytest.raises(pf.ConfigError, match=r"^mechanism: method 'privsub' does not use a mechanism"):
        ci(mechanism="laplace", estimator=pp.CallableEstimator(lambda s, r: 0.0, pf.PureDP(0.1)))
    with pytest.raises(pf.ConfigError, match=r"^method.estimator:"):
        ci(estimator="laplace")
    with pytest.raises(pf.BudgetError, match=r"^budget: estimator 'mean\+gaussian' cannot give pure"):
        ci(budget=pf.PureDP(1.0), mechanism="gaussian")
    with pytest.raises(pf.BudgetError):
        ci(budget=None)
    with pytest.raises(pf.ConfigError, match=r"^tau: no part"):
        ci(tau=3)
    with pytest.warns(UserWarning, match=r"^T: m \* T = 200 < n = 2000"):
        ci(m=20, T=10)
    X = np.random.default_rng(0).normal(0, 0.1, size=(500, 2))
    with pytest.raises(pf.ConfigError, match=r"^statistic: 'mean' is not scalar here"):
        pf.confidence_interval(X, "mean", method="privsub", budget=pf.PureDP(1.0), bounds=pf.L2Ball(1.0))


def test_errors_never_contain_data_values() -> None:
    secret = 123.456789
    x = np.array([secret, 1.0, 2.0] * 100)
    y = np.column_stack((x, x, np.full(300, 1.0)))
    y[1, 1] = np.inf  # invalid labels are mapped, not refused (issue 16); a non-finite feature is refused
    with pytest.raises(pf.PrivframeError) as info:
        pf.confidence_interval(y, "logistic-slope", method="privsub", budget=pf.PureDP(1.0), bounds=pf.L2Ball(1.0))
    assert "123.4" not in str(info.value)


# ---------------------------------------------------------------------------------------------------------
# Coverage (issue acceptance): n = 10000, (eps, delta) = (5, 1e-6), 400 seeded trials, SE = 0.015


def _coverage(statistic: str, truth: float, eps: float, trials: int, n: int = 10_000, **kw: object) -> float:
    hits = 0
    for seed in np.random.SeedSequence(20240).spawn(trials):
        data_seed, run_seed = seed.spawn(2)
        res = pf.confidence_interval(
            _data(statistic, n, data_seed),
            statistic,
            method="privsub",
            budget=pf.ApproxDP(eps, 1e-6),
            rng=run_seed,
            **_options(statistic),
            **kw,  # type: ignore[arg-type]
        )
        hits += res.contains(truth)
    return hits / trials


def test_coverage_median_n10000_eps5() -> None:
    """Issue acceptance, default (basic) interval: within 3 SE (0.045) of 0.90. Measured 0.880 (the PrivSub
    page's table: width 0.0839, against 0.0779 for non-private subsampling with the same m and B = 60)."""
    coverage = _coverage("median", MEDIAN_TRUTH, 5.0, 400)
    assert abs(coverage - 0.90) <= 3 * math.sqrt(0.9 * 0.1 / 400)


@pytest.mark.slow
def test_coverage_median_n10000_eps5_percentile_interval() -> None:
    """The paper's percentile interval (``interval="percentile"``), for reproduction: within 3 SE of 0.90;
    measured 0.9125. Both intervals have the same width (one reflects the other about theta_n)."""
    coverage = _coverage("median", MEDIAN_TRUTH, 5.0, 400, interval="percentile")
    assert abs(coverage - 0.90) <= 3 * math.sqrt(0.9 * 0.1 / 400)


def test_coverage_ks_n10000_eps5() -> None:
    """Issue acceptance for KS with the default (basic) interval: within 3 SE of 0.90; measured 0.890.

    The KS limit law is not centred (sqrt(m)(D_m - D) tends to the maximum of two correlated normals, which
    has a positive mean), so the subsample releases sit above D by a bias of order 1/sqrt(m). The basic
    interval subtracts that bias; the paper's percentile interval adds it - see the next test."""
    coverage = _coverage("ks", KS_TRUTH, 5.0, 400)
    assert abs(coverage - 0.90) <= 3 * math.sqrt(0.9 * 0.1 / 400)


def test_ks_percentile_interval_undercovers_documented() -> None:
    """The documented shortfall of the percentile interval (``interval="percentile"``, the paper's, no
    longer the default) for KS: measured 0.130 over the 400 trials of the test above (0.12 over these 100).
    Cause: the non-centred limit law (see above); the default "basic" interval covers."""
    assert _coverage("ks", KS_TRUTH, 5.0, 100, interval="percentile") < 0.5


def test_coverage_logistic_n10000_eps5() -> None:
    """Issue acceptance for the logistic slope: not below 0.90 - 3 SE. Measured 1.000: the interval is
    conservative, with width 0.260 against 0.095 for non-private subsampling.

    Cause: each subsample release carries Laplace noise of scale 1 / (m c eps_sub) = 0.227 (m = 465,
    c = 0.01, eps_sub = 0.947), i.e. SD 0.32, against a sampling SD of the subsample slope of about 0.14.
    PrivSub's ECDF does not separate noise from sampling spread, so the noise (rescaled by sqrt(m / n) like
    everything else) dominates the interval. The output-perturbation sensitivity 1 / (m c) is large for the
    default penalty c = 0.01; the over-coverage shrinks as n (and m) grow.
    """
    from privframe.experiments.generators import Logistic

    truth = pf.registry.create("statistic", "logistic-slope").population_value(Logistic())
    coverage = _coverage("logistic-slope", truth, 5.0, 400)
    assert coverage >= 0.90 - 3 * math.sqrt(0.9 * 0.1 / 400)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("statistic", "kw"),
    [
        ("median", {}),
        ("ks", {}),
        ("mean", {}),
        ("logistic-slope", {}),
        ("median", {"interval": "percentile"}),
        ("mean", {"interval": "percentile"}),
    ],
)
def test_coverage_n10000_eps1_not_below_nominal(statistic: str, kw: dict[str, object]) -> None:
    """(1, 1e-6): the noise is a larger share of the subsample spread, so the intervals are conservative.
    Measured (400 trials), default (basic) interval: median 0.940, ks 0.940, mean 0.985, logistic 1.000;
    percentile interval: median 0.9475, mean 0.985."""
    from privframe.experiments.generators import Logistic

    truths = {"median": MEDIAN_TRUTH, "ks": KS_TRUTH, "mean": float(TRUNC.mean())}
    truth = truths.get(statistic) or pf.registry.create("statistic", "logistic-slope").population_value(Logistic())
    coverage = _coverage(statistic, truth, 1.0, 400, **kw)
    assert coverage >= 0.90 - 3 * math.sqrt(0.9 * 0.1 / 400)
