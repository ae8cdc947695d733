"""``logistic-slope`` as people know it: features and a 0/1 label from a table, public ``feature_bounds``,
the slope per unit of the original feature (issue 16)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import privframe as pf
from privframe_std.statistics import LogisticSlope
from privframe_std.statistics.logistic_slope import DEFAULT_PENALTY, DEFAULT_PENALTY_SCALED

BOUNDS = [(0.0, 10.0), (0.0, 100.0)]


def _newton(A: np.ndarray, y01: np.ndarray) -> np.ndarray:
    """Unpenalised maximum likelihood by plain Newton (the reference statsmodels' Logit computes)."""
    b = np.zeros(A.shape[1])
    for _ in range(60):
        p = 1.0 / (1.0 + np.exp(-A @ b))
        b = b + np.linalg.solve((A * (p * (1 - p))[:, None]).T @ A, A.T @ (y01 - p))
    return b


def _data(n: int, seed: int = 5) -> np.ndarray:
    """Two features on different scales and a 0/1 label: logit = -1 + 0.3 x1 - 0.02 (x2 - 50)."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0.0, 10.0, n), rng.normal(50.0, 10.0, n)
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(-1.0 + 0.3 * x1 - 0.02 * (x2 - 50.0)))))
    return np.column_stack((x1, x2, y.astype(float)))


def _value(stat: LogisticSlope, x: np.ndarray) -> float:
    return float(stat.evaluate_batch(stat.prepare(x, None), np.arange(x.shape[0])[None])[0, 0])


@pytest.mark.parametrize("coef", [0, 1])
def test_slope_is_the_unpenalised_slope_less_the_penalty_shrinkage(coef: int) -> None:
    """At n = 100 000 and c = 1e-4 the released slope (per original unit) is the unpenalised maximum-likelihood
    slope shrunk towards 0 by what the penalty predicts to first order, ``b_c = (H + 2cI)^-1 H b_0`` on the
    scaled features (H the loss Hessian at b_0); the second-order rest is below 10% of the shrinkage."""
    x = _data(100_000)
    n, d = x.shape[0], 2
    mle = _newton(np.column_stack((np.ones(n), x[:, :2])), x[:, 2])
    low, high = np.array(BOUNDS).T
    z = np.column_stack((np.ones(n), (x[:, :2] - (low + high) / 2) / ((high - low) / 2))) / math.sqrt(d + 1)
    b0 = _newton(z, x[:, 2])
    p = 1.0 / (1.0 + np.exp(-z @ b0))
    hessian = (z * (p * (1 - p))[:, None]).T @ z / n
    c = 1e-4
    scale = (high[coef] - low[coef]) / 2 * math.sqrt(d + 1)
    predicted = np.linalg.solve(hessian + 2 * c * np.eye(d + 1), hessian @ b0)[1 + coef] / scale
    released = _value(LogisticSlope(penalty=c, feature_bounds=BOUNDS, coef=coef), x)
    shrinkage = mle[1 + coef] - predicted
    assert abs(released - predicted) < 0.1 * abs(shrinkage)
    assert 0 < released / mle[1 + coef] < 1  # towards 0, same sign
    assert released == pytest.approx(mle[1 + coef], rel=0.1)


def test_slope_matches_the_penalised_fit_written_on_the_original_scale() -> None:
    """The reported slope is the penalised minimiser re-expressed per original unit: minimising over
    (intercept, slopes) on the original scale with the penalty on the scaled coefficients gives it."""
    x = _data(3000, seed=1)
    n = x.shape[0]
    low, high = np.array(BOUNDS).T
    centre, half, root = (low + high) / 2, (high - low) / 2, math.sqrt(3)
    c, sign = 0.001, 2 * x[:, 2] - 1
    # b = M beta: the scaled coefficients of the original (intercept, slopes); the penalty is c |M beta|^2.
    M = root * np.array([[1.0, centre[0], centre[1]], [0.0, half[0], 0.0], [0.0, 0.0, half[1]]])
    A = np.column_stack((np.ones(n), x[:, :2]))
    beta = np.zeros(3)
    for _ in range(50):  # Newton on the original scale, objective mean log(1 + exp(-y a'beta)) + c |M beta|^2
        s = 1.0 / (1.0 + np.exp(sign * (A @ beta)))
        gradient = -A.T @ (s * sign) / n + 2 * c * M.T @ M @ beta
        hessian = (A * (s * (1 - s))[:, None]).T @ A / n + 2 * c * M.T @ M
        beta = beta - np.linalg.solve(hessian, gradient)
    for coef in (0, 1):
        stat = LogisticSlope(penalty=c, feature_bounds=BOUNDS, coef=coef)
        assert _value(stat, x) == pytest.approx(beta[1 + coef], rel=1e-9)


def test_label_codings_give_identical_intervals() -> None:
    x = _data(4000)
    plus_minus = x.copy()
    plus_minus[:, 2] = 2 * x[:, 2] - 1
    results = [
        pf.confidence_interval(data, "logistic-slope", feature_bounds=BOUNDS, method="cr-gs", budget=pf.GDP(1.0), rng=3)
        for data in (x, plus_minus)
    ]
    assert (results[0].low, results[0].high) == (results[1].low, results[1].high)


@pytest.mark.parametrize(("factor", "exact"), [(10.0, False), (8.0, True)])
def test_feature_bounds_scale_equivariance(factor: float, exact: bool) -> None:
    """Features and their bounds times a give the slope (and the whole interval) divided by a, with the same seed.

    Float noise (``exact=False``) is scaled draw for draw; exact (lattice) noise only for a power of two, whose
    lattice scales with it (``tests/test_equivariance.py`` explains why): a = 10 and a = 8 respectively.
    """
    x = _data(4000)
    scaled_x = x.copy()
    scaled_x[:, :2] *= factor
    scaled_bounds = [(factor * low, factor * high) for low, high in BOUNDS]
    for coef in (0, 1):
        base, scaled = (
            pf.confidence_interval(
                data,
                "logistic-slope",
                feature_bounds=b,
                coef=coef,
                method="cr-gs",
                budget=pf.GDP(1.0),
                rng=4,
                exact=exact,
            )
            for data, b in ((x, BOUNDS), (scaled_x, scaled_bounds))
        )
        assert scaled.low == pytest.approx(base.low / factor, rel=1e-9)
        assert scaled.high == pytest.approx(base.high / factor, rel=1e-9)
        assert scaled.center == pytest.approx(base.center / factor, rel=1e-9)


def test_default_penalty_and_sensitivity() -> None:
    assert LogisticSlope().c == DEFAULT_PENALTY
    stat = LogisticSlope(feature_bounds=[(5.0, 30.0)])
    assert stat.c == DEFAULT_PENALTY_SCALED
    # R = 1 after scaling; the release is per original unit, so the sensitivity is divided by (30-5)/2 sqrt(2).
    expected = (1 / (100 * 0.001) + (1e-10 + 2**-40) / 0.001) / (12.5 * math.sqrt(2))  # with the rounding margin
    assert stat.sensitivity(100, None) == pytest.approx(expected, rel=1e-12)


def test_a_table_with_a_label_column() -> None:
    pd = pytest.importorskip("pandas")
    x = _data(3000)
    frame = pd.DataFrame({"x2": x[:, 1], "malignant": x[:, 2].astype(int), "x1": x[:, 0]})
    res = pf.confidence_interval(
        frame,
        "logistic-slope",
        columns=["x1", "x2"],
        label="malignant",
        feature_bounds=BOUNDS,
        coef=0,
        method="cr-gs",
        budget=pf.GDP(1.0),
        rng=2,
    )
    ref = pf.confidence_interval(
        x, "logistic-slope", feature_bounds=BOUNDS, coef=0, method="cr-gs", budget=pf.GDP(1.0), rng=2
    )
    assert (res.low, res.high) == (ref.low, ref.high)
    # the label is named, never guessed from its position: a table without label= is refused, and naming
    # it puts it last whatever the column order (the features are the other columns, or columns=[...])
    with pytest.raises(
        pf.ConfigError, match=r"^statistic\.label: statistic 'logistic-slope' on a table needs its label"
    ):
        pf.confidence_interval(frame, "logistic-slope", columns=["malignant", "x1", "x2"], feature_bounds=BOUNDS,
                               method="cr-gs", budget=pf.GDP(1.0))  # fmt: skip
    every = pf.confidence_interval(
        frame[["x1", "malignant", "x2"]], "logistic-slope", label="malignant", feature_bounds=BOUNDS, coef=0,
        method="cr-gs", budget=pf.GDP(1.0), rng=2,
    )  # fmt: skip
    assert (every.low, every.high) == (ref.low, ref.high)
    assert "penalised logistic slope" in str(res)
    assert res.parameters["estimand"].startswith("penalised logistic slope of feature 0")
    with pytest.raises(pf.ConfigError, match=r"^statistic\.label: no column 'label' in the table"):
        pf.confidence_interval(frame, "logistic-slope", label="label", feature_bounds=BOUNDS, method="cr-gs",
                               budget=pf.GDP(1.0))  # fmt: skip
    frame["malignant"] = frame["malignant"].astype(bool)
    with pytest.raises(pf.DataError, match=r"^x: column 'malignant' is not numeric \(it is boolean: pass it as 0/1"):
        pf.confidence_interval(
            frame,
            "logistic-slope",
            columns=["x1"],
            label="malignant",
            feature_bounds=BOUNDS[:1],
            method="cr-gs",
            budget=pf.GDP(1.0),
        )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([(5.0, 30.0), (0.0, 1.0)], r"^statistic\.feature_bounds: gives 2 \(low, high\) pairs for d = 1 features"),
        ([(30.0, 5.0)], r"^statistic\.feature_bounds: entry 1: need low < high"),
        ([(5.0, 5.0)], r"^statistic\.feature_bounds: entry 1: need low < high"),
        ([(5.0, math.inf)], r"^statistic\.feature_bounds: entry 1: low and high must be finite"),
        ([(math.nan, 1.0)], r"^statistic\.feature_bounds: entry 1: low and high must be finite"),
        ([(5.0, 30.0, 1.0)], r"^statistic\.feature_bounds: entry 1 is not a \(low, high\) pair"),
        ((5.0, 30.0), r"^statistic\.feature_bounds: entry 1 is not a \(low, high\) pair"),
        ([("5", "30")], r"^statistic\.feature_bounds: entry 1: low and high must be real numbers"),
        ([(False, True)], r"^statistic\.feature_bounds: entry 1: low and high must be real numbers"),
        ([], r"^statistic\.feature_bounds: expected a list of \(low, high\) pairs"),
        ("5,30", r"^statistic\.feature_bounds: expected a list of \(low, high\) pairs"),
    ],
)
def test_bad_feature_bounds_are_config_errors_naming_it(value: object, message: str) -> None:
    x = _data(500)[:, 1:]
    with pytest.raises(pf.ConfigError, match=message):
        pf.confidence_interval(x, "logistic-slope", feature_bounds=value, method="cr-gs", budget=pf.GDP(1.0), rng=0)


def test_feature_bounds_with_a_norm_bound_or_a_bad_coef_are_refused() -> None:
    x = _data(500)
    with pytest.raises(pf.ConfigError, match=r"^bounds: logistic-slope with feature_bounds"):
        pf.confidence_interval(
            x, "logistic-slope", feature_bounds=BOUNDS, bounds=1.0, method="cr-gs", budget=pf.GDP(1.0), rng=0
        )
    with pytest.raises(pf.ConfigError, match=r"^statistic\.coef: must index one of the d = 2 features"):
        pf.confidence_interval(x, "logistic-slope", feature_bounds=BOUNDS, coef=2, method="cr-gs", budget=pf.GDP(1.0))
    population = type("Population", (), {"intercept": 0.0, "slope": 1.0, "low": -1.0, "high": 1.0})()
    with pytest.raises(pf.ConfigError, match=r"^feature_bounds: the population value is known"):
        LogisticSlope(feature_bounds=BOUNDS).population_value(population)


def test_cli_runs_the_slope_from_a_csv_with_feature_bounds_in_the_config(tmp_path: Path) -> None:
    x = _data(3000)
    csv = tmp_path / "cancer.csv"
    lines = ["x2,malignant,x1", *(f"{float(a)!r},{int(y)},{float(b)!r}" for b, a, y in x)]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "slope.toml"
    config.write_text(
        '[pipeline]\nmethod = "cr-gs"\nbudget = { unit = "gdp", mu = 1.0 }\n'
        '[pipeline.statistic]\nname = "logistic-slope"\ncoef = 0\nfeature_bounds = [[0.0, 10.0], [0.0, 100.0]]\n',
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "privframe.cli", "run", str(config), "--data", str(csv)]
    done = subprocess.run(
        [*command, "--columns", "x1,x2,malignant", "--seed", "2", "--json"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    ref = pf.confidence_interval(
        x, "logistic-slope", feature_bounds=BOUNDS, coef=0, method="cr-gs", budget=pf.GDP(1.0), rng=2
    )
    assert (out["low"], out["high"]) == pytest.approx((ref.low, ref.high), rel=1e-12)
    bad = config.read_text(encoding="utf-8").replace("[0.0, 100.0]", "[100.0, 0.0]")
    config.write_text(bad, encoding="utf-8")
    done = subprocess.run([*command, "--columns", "x1,x2,malignant"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "privframe: error: pipeline.statistic.feature_bounds: entry 2: need low < high (and a finite width)"
    ]


def test_the_logistic_slope_needs_public_feature_bounds_or_an_explicit_ball() -> None:
    """Without feature_bounds the raw features were projected onto the unit ball silently (breast-cancer radius:
    [-1.65, 0.61], the wrong sign): now a ConfigError at build, before any data, says what to give."""
    with pytest.raises(
        pf.ConfigError, match=r"^bounds: statistic 'logistic-slope' needs public bounds: give public feature_bounds"
    ):
        pf.Pipeline.build("logistic-slope", method="cr-gs", budget=pf.GDP(1.0))
    pf.Pipeline.build("logistic-slope", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0))  # explicit: fine
