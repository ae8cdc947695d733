"""Bad input gets the right PrivframeError subclass, names the parameter, and never echoes a data value."""

from __future__ import annotations

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
    ("pure budget for GDP method", {"budget": pf.PureDP(1.0)}, pf.BudgetError, "budget"),
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
