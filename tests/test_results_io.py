"""Results you can show and save (issue 30.1): the JSON schema, repr, notebook HTML, plots, summary table."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

import privframe as pf
from privframe.cli import DEMO_TRUTH, demo_data, main
from privframe.errors import MissingExtraError
from privframe.results import RESULT_SCHEMA, load_result

X = np.random.default_rng(0).beta(2, 5, size=2000)
METHODS: dict[str, dict[str, Any]] = {
    "cr-gs": {"statistic": "mean", "method": "cr-gs", "budget": pf.GDP(1.0)},
    "cr-ss": {"statistic": "median", "method": "cr-ss", "budget": pf.GDP(1.0, delta=1e-6)},
    "privsub": {"statistic": "median", "method": "privsub", "budget": pf.ApproxDP(1.0, 1e-6)},
    "blbquant": {"statistic": "mean", "method": "blbquant", "budget": pf.PureDP(8.0), "min_block": 0},
    "dette-graw": {"statistic": "mean", "method": "dette-graw", "budget": pf.GDP(1.0)},
    "privboot": {"statistic": "mean", "method": "privboot", "budget": pf.ApproxDP(2.0, 1e-6)},
    "rank-quantile": {"statistic": "median", "method": "rank-quantile", "budget": pf.PureDP(1.0)},
    "private-variance": {"statistic": "mean", "method": "private-variance", "budget": pf.PureDP(1.0)},
    "auto": {"statistic": "mean", "method": "auto", "budget": pf.GDP(1.0)},
    "bootstrap": {"statistic": "mean", "method": "bootstrap", "budget": None},
}


@pytest.fixture(scope="module")
def results() -> dict[str, pf.IntervalResult | pf.RegionResult]:
    out: dict[str, pf.IntervalResult | pf.RegionResult] = {}
    for name, options in METHODS.items():
        kwargs = dict(options)
        statistic = kwargs.pop("statistic")
        out[name] = pf.confidence_interval(X, statistic, bounds=(0, 1), rng=1, **kwargs)
    ball = np.random.default_rng(1).normal(0.0, 0.2, size=(2000, 3))
    out["region"] = pf.confidence_region(ball, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0), rng=7)
    return out


def _plain(value: Any) -> Any:
    """A value with its sequences as tuples and its objects as (class, table), to compare what JSON keeps."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "to_dict") and not isinstance(value, pf.GDP | pf.ApproxDP | pf.PureDP):
        return (type(value), _plain(value.to_dict()))
    return value


def _assert_same(back: pf.IntervalResult | pf.RegionResult, res: pf.IntervalResult | pf.RegionResult) -> None:
    assert type(back) is type(res)
    for field in attrs.fields(type(res)):
        got, want = getattr(back, field.name), getattr(res, field.name)
        if field.name == "center" and isinstance(res, pf.RegionResult):
            assert np.array_equal(got, want), field.name
        elif field.name in ("parameters", "diagnostics"):
            assert list(got) == list(want), field.name
            assert _plain(got) == _plain(want), field.name
            for key, value in want.items():  # objects come back as objects of their class
                if isinstance(value, Mapping):
                    assert isinstance(got[key], Mapping), key
                else:
                    assert type(got[key]) is (tuple if isinstance(value, list | np.ndarray) else type(value)), key
        else:
            assert got == want, field.name


@pytest.mark.parametrize("name", [*METHODS, "region"])
def test_every_field_round_trips_through_json(name: str, results: dict[str, Any]) -> None:
    res = results[name]
    text = res.to_json()
    table = json.loads(text)
    assert table["schema"] == RESULT_SCHEMA == "privframe-result/1"
    assert table["omitted"] == []
    back = type(res).from_json(text)
    _assert_same(back, res)
    _assert_same(load_result(text), res)
    assert back.to_dict() == res.to_dict()


def test_privsub_keeps_its_ecdf_and_auto_its_reasons(results: dict[str, Any]) -> None:
    back = pf.IntervalResult.from_json(results["privsub"].to_json())
    ecdf, original = back.diagnostics["ecdf"], results["privsub"].diagnostics["ecdf"]
    assert type(ecdf).__name__ == "SubsampleECDF"
    assert np.array_equal(ecdf.values, original.values)
    assert ecdf.interval(0.8) == original.interval(0.8)  # it reads other levels, as the original does
    table = json.loads(results["privsub"].to_json())["diagnostics"]["ecdf"]
    assert table["$type"] == "privframe_std.methods.privsub.ecdf:SubsampleECDF"
    auto = pf.IntervalResult.from_json(results["auto"].to_json()).diagnostics["auto"]
    assert auto["chosen"] == results["auto"].method


def test_numpy_values_non_finite_numbers_and_budgets_round_trip(tmp_path: Path) -> None:
    ledger = pf.Ledger([pf.PrivacyEvent("center", "gaussian", pf.GDP(1.0))], pf.GDP(1.0), "gdp")
    diagnostics = {
        "scale": np.float64(1.5),
        "count": np.int64(7),
        "flag": np.bool_(True),
        "grid": np.arange(3.0),
        "far": math.inf,
        "near": -math.inf,
        "nested": {"pair": (1, 2.5), "budget": pf.ApproxDP(1.0, 1e-6)},
        "label": "a<b>&c",
    }
    res = pf.IntervalResult(0.1, 0.3, 0.2, 0.9, "cr-gs", {"statistic": "mean", "n": np.int64(10)}, diagnostics, ledger)
    path = tmp_path / "res.json"
    res.to_json(path)
    table = json.loads(path.read_text(encoding="utf-8"))  # strict JSON: no NaN or Infinity literals
    assert table["diagnostics"]["grid"] == [0.0, 1.0, 2.0]
    assert table["diagnostics"]["far"] == "inf"
    assert table["diagnostics"]["scale"] == 1.5
    assert type(table["diagnostics"]["count"]) is int
    back = pf.IntervalResult.from_json(path)
    assert back.diagnostics["grid"] == (0.0, 1.0, 2.0)
    assert back.diagnostics["far"] == math.inf
    assert back.diagnostics["near"] == -math.inf
    assert back.diagnostics["flag"] is True
    assert back.diagnostics["count"] == 7
    assert back.diagnostics["nested"] == {"pair": (1, 2.5), "budget": pf.ApproxDP(1.0, 1e-6)}
    assert back.parameters == {"statistic": "mean", "n": 10}
    assert back.privacy == ledger
    assert isinstance(load_result(path), pf.IntervalResult)


def test_an_object_without_a_json_spelling_is_listed_as_omitted() -> None:
    ledger = pf.Ledger([], None, "")
    diagnostics = {"kept": 1, "odd": object(), "list": [object()]}
    res = pf.IntervalResult(0.0, 1.0, 0.5, 0.9, "bootstrap", {}, diagnostics, ledger)
    table = res.to_dict()
    assert table["omitted"] == ["diagnostics.odd", "diagnostics.list[0]"]
    assert table["diagnostics"] == {"kept": 1, "list": [None]}


def test_a_type_outside_privframe_and_its_plugins_is_never_imported() -> None:
    table = pf.IntervalResult(0.0, 1.0, 0.5, 0.9, "x", {}, {}, pf.Ledger([], None, "")).to_dict()
    table["diagnostics"] = {"evil": {"$type": "antigravity:Thing", "value": {"a": 1}}}
    assert "antigravity" not in sys.modules
    back = pf.IntervalResult.from_dict(table)
    assert back.diagnostics["evil"] == {"a": 1}
    assert "antigravity" not in sys.modules


def test_bad_documents_raise_typed_errors_that_name_the_key(results: dict[str, Any]) -> None:
    good = results["cr-gs"].to_dict()
    with pytest.raises(pf.ConfigError, match=r"^schema: this privframe reads 'privframe-result/1', not") as info:
        pf.IntervalResult.from_dict({**good, "schema": "privframe-result/2"})
    assert info.value.path == "schema"
    with pytest.raises(pf.ConfigError, match=r"^schema: not a saved privframe result"):
        pf.IntervalResult.from_dict({k: v for k, v in good.items() if k != "schema"})
    with pytest.raises(pf.ConfigError, match=r"^kind: expected 'region'.*pf.IntervalResult.from_dict"):
        pf.RegionResult.from_dict(good)
    with pytest.raises(pf.ConfigError, match=r"^low: expected a number"):
        pf.IntervalResult.from_dict({**good, "low": "0.5"})
    with pytest.raises(pf.ConfigError, match=r"^privacy.total.unit"):
        pf.IntervalResult.from_dict({**good, "privacy": {**good["privacy"], "total": {"unit": "dp"}}})
    with pytest.raises(pf.ConfigError, match=r"^source: not JSON"):
        pf.IntervalResult.from_json("{not json")
    with pytest.raises(pf.ConfigError, match=r"^source: cannot read the result file"):
        pf.IntervalResult.from_json("/nonexistent/result.json")
    region = results["region"].to_dict()
    with pytest.raises(pf.ConfigError, match=r"^center: expected a list of numbers"):
        pf.RegionResult.from_dict({**region, "center": "0.1"})


def test_the_cli_json_is_the_python_json_for_the_same_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3", "--json"]) == 0
    printed = capsys.readouterr().out
    pipe = pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0.0, 1.0), confidence=0.9)
    res = pipe.run(demo_data(), rng=3)
    assert printed == res.to_json() + "\n"
    back = pf.IntervalResult.from_json(printed)
    _assert_same(back, res)
    assert back.low < DEMO_TRUTH < back.high


def test_cli_run_json_is_the_same_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(
        '[pipeline]\nmethod = "privsub"\nstatistic = "median"\nbounds = [0.0, 1.0]\n'
        'budget = { unit = "approx-dp", epsilon = 1.0, delta = 1e-6 }\n',
        encoding="utf-8",
    )
    npy = tmp_path / "x.npy"
    np.save(npy, X)
    assert main(["run", str(config), "--data", str(npy), "--seed", "5", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    res = pf.Pipeline.from_config(config).run(X, rng=5)
    assert printed == res.to_dict()
    assert isinstance(load_result(printed), pf.IntervalResult)


@pytest.mark.parametrize("name", [*METHODS, "region"])
def test_repr_is_one_short_line_with_interval_method_and_guarantee(name: str, results: dict[str, Any]) -> None:
    res = results[name]
    text = repr(res)
    assert len(text) < 200
    assert "\n" not in text
    assert res.method in text
    guarantee = "non-private" if res.privacy.total is None else str(res.privacy.total)
    assert guarantee in text
    if isinstance(res, pf.IntervalResult):
        assert f"[{res.low:.6g}, {res.high:.6g}]" in text
    assert str(res) != text  # str stays the readable report


def test_repr_stays_short_for_long_names_and_many_dimensions() -> None:
    ledger = pf.Ledger([], None, "")
    long = pf.IntervalResult(0.0, 1.0, 0.5, 0.9, "m" * 300, {}, {"whole_range": True, "one_sided": True}, ledger)
    assert len(repr(long)) < 200
    ball = pf.RegionResult(np.zeros(500), 1.0, 0.9, "cr-gs", {}, {}, ledger)
    assert len(repr(ball)) < 200
    assert "500 dimensions" in repr(ball)


def test_html_view_is_a_small_escaped_table(results: dict[str, Any]) -> None:
    res = results["cr-gs"]
    page = res._repr_html_()
    for key in ("interval", "centre", "confidence", "method", "guarantee"):
        assert f">{key}</th>" in page
    assert f"[{res.low:.6g}, {res.high:.6g}]" in page
    assert res.privacy.summary() in page
    odd = pf.IntervalResult(0.0, 1.0, 0.5, 0.9, "<script>x</script>", {}, {}, pf.Ledger([], None, ""))
    assert "<script>" not in odd._repr_html_()
    assert "&lt;script&gt;" in odd._repr_html_()
    assert ">centre</th>" in results["region"]._repr_html_()


def test_a_forest_plot_of_three_results_renders_to_png(tmp_path: Path, results: dict[str, Any]) -> None:
    import matplotlib  # the plot extra, part of the README's test install: this test never skips

    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot as plt

    three = [results["cr-gs"], results["privsub"], results["bootstrap"]]
    ax = pf.forest_plot(three, labels=["a", "b", "c"], reference=float(np.mean(X)))
    assert [t.get_text().split(" (")[0] for t in ax.get_yticklabels()] == ["a", "b", "c"]
    path = tmp_path / "forest.png"
    figure: Any = ax.figure
    figure.savefig(path, dpi=100)
    image = matplotlib.image.imread(path)
    width, height = figure.get_size_inches() * 100
    assert image.shape[:2] == (round(height), round(width))
    assert image.shape[0] > 100
    assert float(image[..., :3].std()) > 0.01  # something was drawn
    single = pf.plot_result(results["region"], reference=np.zeros(3))
    assert len(single.get_yticklabels()) == 3
    plt.close("all")


def test_plot_inputs_are_checked_by_name(results: dict[str, Any]) -> None:
    with pytest.raises(pf.ConfigError, match=r"^labels: expected 2 labels"):
        pf.forest_plot([results["cr-gs"], results["privsub"]], labels=["a"])
    with pytest.raises(pf.ConfigError, match=r"^results\[1\]: a region of dimension > 1"):
        pf.forest_plot([results["cr-gs"], results["region"]])
    with pytest.raises(pf.ConfigError, match=r"^results\[0\]: expected an IntervalResult"):
        pf.forest_plot([0.5])  # type: ignore[list-item]
    with pytest.raises(pf.ConfigError, match=r"^reference: expected 1 or 3 numbers"):
        pf.plot_result(results["region"], reference=[0.0, 0.0])


def test_a_missing_extra_is_a_typed_error_naming_it(monkeypatch: pytest.MonkeyPatch, results: dict[str, Any]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    expected = r'forest_plot needs matplotlib: pip install "privframe\[plot\]"'
    with pytest.raises(MissingExtraError, match=expected) as info:
        pf.forest_plot([results["cr-gs"]])
    assert info.value.extra == "plot"
    assert isinstance(info.value, ImportError | pf.ConfigError)
    with pytest.raises(MissingExtraError, match=r"privframe\[plot\]"):
        pf.plot_result(results["cr-gs"])
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"privframe\[tables\]"):
        pf.summary_table([results["cr-gs"]])


def test_summary_table_has_one_row_per_result(results: dict[str, Any]) -> None:
    chosen = [results["cr-gs"], results["rank-quantile"], results["bootstrap"], results["region"]]
    table = pf.summary_table(chosen)
    assert list(table.columns) == [
        "label", "method", "statistic", "low", "high", "centre", "width", "confidence", "guarantee"
    ]  # fmt: skip
    assert list(table["label"]) == ["mean, cr-gs", "median, rank-quantile", "mean, bootstrap", "mean, cr-gs"]
    first = table.iloc[0]
    res = results["cr-gs"]
    assert (first["low"], first["high"], first["centre"], first["width"]) == (res.low, res.high, res.center, res.width)
    assert first["guarantee"] == res.privacy.summary()
    assert table.iloc[2]["guarantee"] == "non-private"
    region = table.iloc[3]
    assert math.isnan(region["low"])
    assert region["centre"] == tuple(results["region"].center)
    assert region["width"] == 2 * results["region"].radius
    assert list(pf.summary_table(chosen[:2], labels=["x", "y"])["label"]) == ["x", "y"]
    with pytest.raises(pf.ConfigError, match=r"^labels: expected 2 labels"):
        pf.summary_table(chosen[:2], labels=["x"])
    with pytest.raises(pf.ConfigError, match=r"^results: expected at least one result"):
        pf.summary_table([])


def test_the_plot_helpers_are_public_and_lazy() -> None:
    assert {"summary_table", "forest_plot", "plot_result"} <= set(pf.__all__)
    assert len(pf.__all__) <= 40
    code = "import sys, privframe; print(sorted(m for m in ('matplotlib', 'pandas') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
