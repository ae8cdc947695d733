"""Input types at the front door: numpy integers are integers, budgets are numbers, settings are given once."""

from __future__ import annotations

import decimal
import fractions
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe import validators
from privframe.pipeline.parts import Part, load_json, same_setting
from privframe.pipeline.request import request
from privframe.resampling.sizes import check_size_rule, resolve_size

BASE: dict[str, Any] = {"method": "cr-gs", "budget": pf.GDP(1.0), "bounds": (0, 1)}


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pf.PrivacyWarning)
        yield


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(0).uniform(size=2000)


# ---- 1. numpy integers are integers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "reference"),
    [
        ({"B": np.int64(500)}, {"B": 500}),
        ({"B": np.int32(500)}, {"B": 500}),
        ({"sampler": {"name": "wor", "m": np.int64(50)}}, {"sampler": {"name": "wor", "m": 50}}),
        ({"sampler": {"name": "wor", "B": np.uint16(300)}}, {"sampler": {"name": "wor", "B": 300}}),
        ({"m": np.int64(50)}, {"m": 50}),
        ({"workers": np.int64(2)}, {"workers": 2}),
        ({"memory_budget": np.int64(2**28)}, {"memory_budget": 2**28}),
        (
            {"sampler": {"name": "wr", "rho": 0.1, "on_reject": "redraw", "max_redraws": np.int64(5)}},
            {"sampler": {"name": "wr", "rho": 0.1, "on_reject": "redraw", "max_redraws": 5}},
        ),
    ],
)
def test_numpy_integers_are_accepted_like_ints(
    x: np.ndarray, kwargs: dict[str, Any], reference: dict[str, Any]
) -> None:
    got = pf.confidence_interval(x, "mean", **BASE, **kwargs, rng=1)
    want = pf.confidence_interval(x, "mean", **BASE, **reference, rng=1)
    assert (got.low, got.high) == (want.low, want.high)
    json.dumps(got.to_dict())  # plain ints: serialisable


def test_numpy_integers_reach_method_options(x: np.ndarray) -> None:
    common: dict[str, Any] = {"budget": pf.GDP(1.0), "bounds": (0, 1), "rng": 1}
    got = pf.confidence_interval(x, "median", method="privsub", T=np.int64(50), **common)
    want = pf.confidence_interval(x, "median", method="privsub", T=50, **common)
    assert (got.low, got.high) == (want.low, want.high)
    got = pf.confidence_interval(x, "median", method="rank-quantile", grid_size=np.int64(1024), **common)
    want = pf.confidence_interval(x, "median", method="rank-quantile", grid_size=1024, **common)
    assert (got.low, got.high) == (want.low, want.high)


def test_numpy_integers_are_stored_as_python_ints() -> None:
    pipe = pf.Pipeline.build("mean", **BASE, B=np.int64(500), sampler={"name": "wor", "m": np.int64(50)})
    assert pipe.sampler is not None
    assert {key: type(value) for key, value in pipe.sampler.options.items()} == {"m": int, "B": int}
    json.dumps(pipe.to_dict())
    pipe = pf.Pipeline.build("mean", **BASE, workers=np.int64(2), memory_budget=np.int64(2**28))
    assert type(pipe.options.workers) is int
    assert type(pipe.options.memory_budget) is int
    assert type(Part("wor", {"B": np.int64(5)}).options["B"]) is int
    assert type(request("mean", method="cr-gs", budget=None, B=np.int64(5)).options["B"]) is int


def test_option_classes_convert_numpy_integers() -> None:
    reg = pf.registry
    sampler = reg.create("sampler", "wor", {"m": np.int64(50), "B": np.int64(500)}, path="sampler")
    assert (type(sampler.m), type(sampler.B)) == (int, int)
    wr = reg.create("sampler", "wr", {"max_redraws": np.int64(5)}, path="sampler")
    assert type(wr.max_redraws) is int
    for name, options in [
        ("privsub", {"T": np.int64(50)}),
        ("blbquant", {"R": np.int64(3), "min_block": np.int64(0)}),
        ("privboot", {"grid_size": np.int64(100), "df": np.int64(4)}),
    ]:
        method = reg.create("method", name, options, path="method")
        assert all(type(getattr(method, key)) is int for key in options)


@pytest.mark.parametrize("bad", [500.0, np.float64(500.0), True, np.True_, "500", None])
def test_non_integers_are_still_refused_as_counts(x: np.ndarray, bad: object) -> None:
    with pytest.raises(pf.ConfigError, match=r"^sampler\.B: must be an integer >= 1$"):
        pf.confidence_interval(x, "mean", **BASE, B=bad, rng=1)
    with pytest.raises(pf.ConfigError, match=r"^workers: must be an integer >= 1$"):
        pf.Pipeline.build("mean", **BASE, workers=bad if bad is not None else "x")


def test_the_validators_take_any_integral_but_a_bool() -> None:
    class Attribute:
        name = "k"

    check = validators.integer_at_least(2)
    for good in (2, np.int64(2), np.uint8(7)):
        check(None, Attribute, good)
    for bad in (True, np.True_, 2.0, "2", np.int64(1)):
        with pytest.raises(pf.ConfigError, match=r"^k: must be an integer >= 2$"):
            check(None, Attribute, bad)
    validators.positive(None, Attribute, np.int64(3))
    validators.finite(None, Attribute, np.int64(-3))
    assert type(validators.as_int(np.int64(3))) is int
    assert validators.as_int(np.int64(3)) == 3
    assert validators.as_int(True) is True
    assert validators.as_int(3.0) == 3.0


def test_size_rules_take_numpy_integers() -> None:
    check_size_rule("m", np.int64(50))
    assert type(resolve_size("m", np.int64(50), 1000)) is int  # type: ignore[arg-type]
    assert resolve_size("m", lambda n: np.int64(n // 10), 1000) == 100  # type: ignore[arg-type,return-value]
    for bad in (True, 50.0):
        with pytest.raises(pf.ConfigError, match=r"^m: expected"):
            check_size_rule("m", bad)
    with pytest.raises(pf.ConfigError, match=r"^m: must be >= 2$"):
        check_size_rule("m", np.int64(1))
    with pytest.raises(pf.ConfigError, match=r"^m: a size rule must return an integer$"):
        resolve_size("m", lambda n: n / 10, 1000)  # type: ignore[arg-type,return-value]


# ---- 2. budgets are numbers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["1", b"1", True, None, "inf", [1.0], 1j])
@pytest.mark.parametrize(
    ("make", "path"),
    [
        (lambda v: pf.PureDP(v), "epsilon"),
        (lambda v: pf.GDP(v), "mu"),
        (lambda v: pf.GDP(1.0, delta=v), "delta"),
        (lambda v: pf.ApproxDP(v, 1e-6), "epsilon"),
        (lambda v: pf.ApproxDP(1.0, v), "delta"),
    ],
)
def test_budgets_refuse_non_numbers(make: Callable[[object], object], path: str, bad: object) -> None:
    with pytest.raises(pf.BudgetError, match=rf"^{path}: must be a number") as info:
        make(bad)
    assert info.value.path == path


@pytest.mark.parametrize("good", [1, 1.0, np.int64(1), np.float32(1.0), np.float64(1.0), fractions.Fraction(1)])
def test_budgets_accept_real_numbers_as_floats(good: Any) -> None:
    for value in (pf.PureDP(good).epsilon, pf.GDP(good).mu, pf.ApproxDP(good, 0).epsilon):
        assert type(value) is float
        assert value == 1.0
    assert type(pf.ApproxDP(1.0, good / 100).delta) is float
    assert pf.GDP(decimal.Decimal("0.5")).mu == 0.5


def test_huge_integers_are_not_finite_budgets() -> None:
    with pytest.raises(pf.BudgetError, match=r"^mu: must be a finite number > 0$"):
        pf.GDP(10**400)


def test_conversions_refuse_a_string_delta() -> None:
    with pytest.raises(pf.BudgetError, match=r"^delta: must be a number"):
        pf.GDP(1.0).to_approx_dp("1e-5")  # type: ignore[arg-type]
    with pytest.raises(pf.BudgetError, match=r"^delta: must be a number"):
        pf.ApproxDP(1.0, 1e-6).to_approx_dp("1e-5")  # type: ignore[arg-type]
    with pytest.raises(pf.BudgetError, match=r"^delta: must be a number"):
        pf.PureDP(1.0).to_approx_dp("1e-5")  # type: ignore[arg-type]


@pytest.mark.parametrize("table", [[1], "gdp", 1.0, None])
def test_budget_from_table_refuses_a_non_table(table: object) -> None:
    with pytest.raises(pf.ConfigError, match=r"^budget: expected a table") as info:
        pf.budget_from_table(table)  # type: ignore[arg-type]
    assert info.value.path == "budget"
    with pytest.raises(pf.ConfigError, match=r"^pipeline.budget: expected a table"):
        pf.budget_from_table(table, "pipeline.budget")  # type: ignore[arg-type]


def test_budget_table_refuses_an_unhashable_unit_and_a_string_number() -> None:
    with pytest.raises(pf.ConfigError, match=r"^budget\.unit: expected one of"):
        pf.budget_from_table({"unit": ["gdp"], "mu": 1.0})
    with pytest.raises(pf.ConfigError, match=r"^budget\.mu: must be a number"):
        pf.budget_from_table({"unit": "gdp", "mu": "1"})
    assert pf.budget_from_table({"unit": "gdp", "mu": 1}) == pf.GDP(1.0)


def test_a_toml_pipeline_still_hands_numbers(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text(
        'method = "cr-gs"\nstatistic = "mean"\nbounds = [0, 1]\n'
        'budget = { unit = "approx-dp", epsilon = 1, delta = 1e-6 }\n',
        encoding="utf-8",
    )
    assert pf.Pipeline.from_config(config).budget == pf.ApproxDP(1.0, 1e-6)


# ---- 3. a setting is given once ----------------------------------------------------------------------------------


class Untouchable:
    """Data that fail the test if anything reads them."""

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("the data were read")

    def __len__(self) -> int:
        raise AssertionError("the data were read")


@pytest.mark.parametrize(
    ("kwargs", "path", "where"),
    [
        ({"sampler": {"name": "wor", "B": 500}, "B": 1000}, "B", "sampler"),
        ({"sampler": Part("wor", {"m": 50}), "m": 60}, "m", "sampler"),
        ({"sampler": {"name": "wor", "B": 500}, "B": 500.0}, "B", "sampler"),
        ({"method": {"name": "cr-gs", "radius": "paper"}, "radius": "noise-aware"}, "radius", "method"),
        ({"method": {"name": "cr-gs", "fpc": True}, "fpc": 1}, "fpc", "method"),
    ],
)
def test_a_setting_given_in_a_table_and_as_a_keyword_is_a_conflict(
    kwargs: dict[str, Any], path: str, where: str
) -> None:
    call = {**BASE, **kwargs}
    with pytest.raises(pf.ConfigError, match=rf"^{path}: given both in {where} and as {path}=") as info:
        pf.Pipeline.build("mean", **call)
    assert info.value.path == path
    with pytest.raises(pf.ConfigError, match=rf"^{path}: given both in {where} and as {path}="):
        pf.confidence_interval(Untouchable(), "mean", **call, rng=1)
    with pytest.raises(pf.ConfigError, match=rf"^{path}: given both in {where}"):
        pf.Session(pf.GDP(2.0)).confidence_interval(Untouchable(), "mean", **call)


def test_a_statistic_table_and_a_keyword_conflict_too() -> None:
    with pytest.raises(pf.ConfigError, match=r"^q: given both in statistic and as q="):
        pf.Pipeline.build({"name": "quantile", "q": 0.25}, method="auto", budget=pf.GDP(1.0), bounds=(0, 1), q=0.75)


def test_the_same_value_in_both_places_is_accepted(x: np.ndarray) -> None:
    pipe = pf.Pipeline.build("mean", **BASE, sampler={"name": "wor", "B": 500}, B=np.int64(500))
    assert pipe.sampler is not None
    assert pipe.sampler.options["B"] == 500
    res = pf.confidence_interval(
        x, "mean", **{**BASE, "method": {"name": "cr-gs", "radius": "paper"}}, radius="paper", rng=1
    )
    assert res.parameters["radius"] == "paper"


def test_same_setting() -> None:
    assert same_setting(500, np.int64(500))
    assert same_setting(0.5, np.float64(0.5))
    assert same_setting("paper", "paper")
    assert not same_setting(500, 500.0)
    assert not same_setting(1, True)
    assert not same_setting(np.arange(3), np.arange(3))
    assert not same_setting("paper", "noise-aware")


def test_json_refuses_a_key_given_twice_with_different_values() -> None:
    text = '{"pipeline": {"method": "cr-gs", "sampler": {"name": "wor", "B": 500, "B": 1000}}}'
    with pytest.raises(pf.ConfigError, match=r"^pipeline\.sampler\.B: given twice") as info:
        load_json(text)
    assert info.value.path == "pipeline.sampler.B"
    with pytest.raises(pf.ConfigError, match=r"^grid\.1\.n: given twice"):
        load_json('{"grid": [{"n": 1}, {"n": 2, "n": 3}]}')
    with pytest.raises(pf.ConfigError, match=r"^method: given twice"):
        load_json('{"method": "cr-gs", "method": "privsub"}')
    assert load_json('{"a": {"b": 1, "b": 1}, "c": [1, {"d": 2}]}') == {"a": {"b": 1}, "c": [1, {"d": 2}]}
    assert type(load_json('{"a": {"b": 1}}')["a"]) is dict
    with pytest.raises(json.JSONDecodeError):
        load_json("{")


def test_a_json_pipeline_file_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "p.json"
    config.write_text(
        '{"method": "cr-gs", "statistic": "mean", "bounds": [0, 1], "budget": {"unit": "gdp", "mu": 1.0},'
        ' "sampler": {"name": "wor", "B": 500, "B": 1000}}',
        encoding="utf-8",
    )
    with pytest.raises(pf.ConfigError, match=r"^sampler\.B: given twice"):
        pf.Pipeline.from_config(config)
