"""Bad input gets the right PrivframeError subclass, names the parameter, and never echoes a data value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privframe as pf

SENTINEL = 0.123456789  # a data value that must never appear in a message
SENTINEL_TEXT = "123456"


def _data(n: int = 200) -> np.ndarray:
    x = np.random.default_rng(0).uniform(0, 1, size=n)
    x[7] = SENTINEL
    return x


def _call(x: Any = None, **overrides: Any) -> pf.IntervalResult:
    kwargs: dict[str, Any] = {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": (0.0, 1.0), "rng": 0}
    kwargs.update(overrides)
    return pf.confidence_interval(_data() if x is None else x, "mean", **kwargs)


def _with(value: float, index: int = 3) -> np.ndarray:
    x = _data()
    x[index] = value
    return x


CASES: list[tuple[str, dict[str, Any], type[pf.PrivframeError], str]] = [
    ("nan", {"x": _with(np.nan)}, pf.DataError, "x:"),
    ("inf", {"x": _with(np.inf)}, pf.DataError, "x:"),
    ("-inf", {"x": _with(-np.inf)}, pf.DataError, "x:"),
    ("empty", {"x": np.array([])}, pf.DataError, "x:"),
    ("scalar", {"x": SENTINEL}, pf.DataError, "x:"),
    ("3-d", {"x": np.zeros((4, 3, 2))}, pf.DataError, "x:"),
    ("strings", {"x": ["a", "b", str(SENTINEL)]}, pf.DataError, "x:"),
    ("bounds reversed", {"bounds": (1.0, 0.0)}, pf.ConfigError, "bounds"),
    ("bounds equal", {"bounds": (0.5, 0.5)}, pf.ConfigError, "bounds"),
    ("bounds infinite", {"bounds": (0.0, np.inf)}, pf.ConfigError, "bounds"),
    ("bounds missing", {"bounds": None}, pf.ConfigError, "bounds"),
    ("confidence 0", {"confidence": 0.0}, pf.ConfigError, "confidence"),
    ("confidence 1", {"confidence": 1.0}, pf.ConfigError, "confidence"),
    ("confidence > 1", {"confidence": 1.5}, pf.ConfigError, "confidence"),
    ("confidence nan", {"confidence": float("nan")}, pf.ConfigError, "confidence"),
    ("m >= n", {"m": 200}, pf.ConfigError, "sampler.m"),
    ("m < 2", {"m": 1}, pf.ConfigError, "sampler.m"),
    ("B < 1", {"B": 0}, pf.ConfigError, "sampler.B"),
    ("unknown option", {"BB": 3}, pf.ConfigError, "BB"),
    ("unknown method", {"method": "cr-xx"}, pf.ConfigError, "method"),
    ("unknown sampler", {"sampler": "wqr"}, pf.ConfigError, "sampler"),
    ("unknown mechanism", {"mechanism": "gauss"}, pf.ConfigError, "mechanism"),
    ("budget missing", {"budget": None}, pf.BudgetError, "budget"),
    ("pure budget for a GDP method", {"budget": pf.PureDP(1.0), "method": "privboot"}, pf.BudgetError, "budget"),
    ("bad rng", {"rng": -1}, pf.ConfigError, "rng"),
]


@pytest.mark.parametrize(("overrides", "error", "name"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_matrix(overrides: dict[str, Any], error: type[pf.PrivframeError], name: str) -> None:
    with pytest.raises(error) as info:
        _call(**overrides)
    message = str(info.value)
    assert message.startswith(name) or f"{name}:" in message or f"{name}." in message
    assert SENTINEL_TEXT not in message


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: pf.GDP(0.0), "mu:"),
        (lambda: pf.GDP(-1.0), "mu:"),
        (lambda: pf.GDP(float("nan")), "mu:"),
        (lambda: pf.GDP(1.0, delta=1.0), "delta:"),
        (lambda: pf.ApproxDP(1.0, 1.5), "delta:"),
        (lambda: pf.ApproxDP(0.0, 1e-6), "epsilon:"),
        (lambda: pf.PureDP(-2.0), "epsilon:"),
    ],
)
def test_bad_budgets(make: Any, name: str) -> None:
    with pytest.raises(pf.BudgetError, match=f"^{name}"):
        make()


def test_unknown_statistic_suggests_the_close_name() -> None:
    with pytest.raises(pf.ConfigError, match="did you mean 'mean'"):
        pf.confidence_interval(_data(), "maen", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))


def test_data_outside_bounds_is_clipped_not_rejected() -> None:
    """Documented behaviour: values outside the public bounds are clipped before the statistic."""
    x = np.concatenate([np.full(100, 5.0), np.full(100, -5.0)])
    res = pf.confidence_interval(x, "mean", method="subsampling", budget=None, bounds=(0, 1), rng=0)
    assert res.center == pytest.approx(0.5)


def test_errors_are_value_errors_for_generic_handlers() -> None:
    with pytest.raises(ValueError, match="x:"):
        _call(x=_with(np.nan))


# ---------------------------------------------------------------------------------------------------------
# Inputs that numpy or float() would coerce silently (issue 16)


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.ma.array([0.1, 0.2, 0.3], mask=[False, True, False]), "masked array"),
        (np.array(["0.1", "0.2"]), "got str"),
        (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), "got datetime64"),
        (np.array([0.1, "0.2"], dtype=object), "got object"),
    ],
)
def test_data_numpy_would_coerce_is_refused(x: object, message: str) -> None:
    with pytest.raises(pf.DataError, match=message):
        pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))  # type: ignore[arg-type]


def test_a_masked_array_without_masked_entries_is_its_values() -> None:
    x = np.random.default_rng(0).uniform(size=500)
    plain = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)
    masked = pf.confidence_interval(np.ma.array(x), "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)
    assert (masked.low, masked.high) == (plain.low, plain.high)


@pytest.mark.parametrize("bounds", [(False, True), ("0", "1"), (0, "1")])
def test_bounds_must_be_real_numbers_as_written(bounds: tuple[object, object]) -> None:
    with pytest.raises(pf.ConfigError, match=r"^bounds: expected real numbers"):
        pf.Bounds(*bounds)  # type: ignore[arg-type]


def test_a_csv_number_with_digit_separators_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "x.csv"
    data.write_text("v\n0.5\n1_000\n", encoding="utf-8")
    with pytest.raises(pf.DataError, match="line 3") as info:
        pf.data.load_data(data, "v")
    assert "1_000" not in str(info.value)


# Settings that used to crash with OverflowError, MemoryError or RecursionError (issue 16)

_X = np.random.default_rng(0).uniform(size=500)


@pytest.mark.parametrize(
    ("method", "budget", "options", "path"),
    [
        ("blbquant", pf.PureDP(5.0), {"bin_width": 1e-300, "min_block": 0}, "bin_width"),
        ("blbquant", pf.PureDP(5.0), {"R": 10**12, "min_block": 0}, "R"),
        ("privboot", pf.ApproxDP(4.89, 1e-6), {"grid_size": 10**12}, "grid_size"),
        ("privsub", pf.ApproxDP(1.0, 1e-6), {"T": 10**12}, "sampler.B"),
        ("cr-gs", pf.GDP(1.0), {"B": 10**9}, "sampler.B"),
    ],
)
def test_sizes_beyond_memory_are_config_errors(
    method: str, budget: pf.Budget, options: dict[str, Any], path: str
) -> None:
    with pytest.raises(pf.ConfigError, match=rf"^{path}: "):
        pf.confidence_interval(_X, "median" if method == "blbquant" else "mean", method=method, budget=budget,
                               bounds=(0, 1), rng=1, **options)  # fmt: skip


@pytest.mark.parametrize(
    ("suffix", "text"), [(".json", "[" * 100_000 + "]" * 100_000), (".toml", "a = " + "[" * 100_000 + "]" * 100_000)]
)
def test_a_config_nested_too_deeply_is_a_config_error(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(pf.ConfigError, match="nested too deeply"):
        pf.Pipeline.from_config(path)


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "a/b", "..", ""])
def test_an_experiment_name_cannot_leave_the_output_folder(name: str) -> None:
    from privframe.experiments.config import parse_experiment

    config = {
        "experiment": {
            "name": name, "trials": 2, "seed": 1, "data": {"generator": "uniform", "low": 0, "high": 1},
            "grid": {"n": [100], "budgets": [{"label": "a", "gdp": {"unit": "gdp", "mu": 1.0}}]},
            "defaults": {"statistic": "mean", "bounds": [0, 1]}, "methods": {"m": {"method": "cr-gs", "budget": "gdp"}},
        }
    }  # fmt: skip
    with pytest.raises(pf.ConfigError, match=r"^experiment\.name: "):
        parse_experiment(config)


def test_a_loose_approx_budget_converts_instead_of_failing_on_a_zero_epsilon() -> None:
    """ApproxDP(0.1, 0.1) is met by a tiny mu whose curve gives epsilon 0 at delta 0.1: it used to fail with
    'epsilon: must be a finite number > 0' from inside the accountant. Five records keep delta below 1/n."""
    res = pf.confidence_interval(_X[:5], "mean", method="cr-gs", budget=pf.ApproxDP(0.1, 0.1), bounds=(0, 1), rng=1)
    assert res.privacy.as_approx_dp(0.1).epsilon <= 0.1 * (1 + 1e-9)


def test_a_huge_mu_names_privboots_default_b_as_the_cause() -> None:
    with pytest.raises(pf.ConfigError, match=r"default B = max\(2000 mu\^2, 2 / alpha\) at mu = 50"):
        pf.confidence_interval(
            _X, "mean", method="privboot", budget=pf.GDP(50.0).to_approx_dp(1e-6), bounds=(0, 1), rng=1
        )
