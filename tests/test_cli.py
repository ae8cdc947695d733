"""The privframe command line, run in-process through ``main(argv)`` and once as a real console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privframe import accounting
from privframe.cli import DEMO_TRUTH, demo_data, main

CONFIG = """
[pipeline]
method = "cr-gs"
statistic = "mean"
bounds = [0.0, 1.0]
confidence = 0.9

[pipeline.budget]
unit = "gdp"
mu = 1.0

[pipeline.sampler]
name = "wor"
B = 300
"""


def test_demo_prints_interval_and_privacy_spend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "90% confidence interval" in out
    assert "1-GDP" in out
    assert "1e-06)-DP" in out


def test_demo_json_is_reproducible_with_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    main(["demo", "--seed", "3", "--json"])
    first = json.loads(capsys.readouterr().out)
    main(["demo", "--seed", "3", "--json"])
    second = json.loads(capsys.readouterr().out)
    assert first == second
    assert first["low"] < DEMO_TRUTH < first["high"] or first["width"] > 0
    assert first["privacy"]["approx_dp"]["epsilon"] == pytest.approx(accounting.gdp_epsilon(1e-6, 1.0), rel=1e-6)


def test_budget_conversions(capsys: pytest.CaptureFixture[str]) -> None:
    main(["budget", "--mu", "1", "--delta", "1e-5", "--json"])
    assert json.loads(capsys.readouterr().out)["epsilon"] == pytest.approx(4.377178, abs=1e-6)
    main(["budget", "--mu", "1", "--epsilon", "1", "--json"])
    assert json.loads(capsys.readouterr().out)["delta"] == pytest.approx(0.1269367, abs=1e-7)
    main(["budget", "--epsilon", "4.377178", "--delta", "1e-5", "--json"])
    assert json.loads(capsys.readouterr().out)["mu"] == pytest.approx(1.0, abs=1e-5)
    main(["budget", "--mu", "1", "--delta", "1e-5"])
    assert "4.37718" in capsys.readouterr().out


def test_budget_bad_input_exits_2_naming_the_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--mu", "-1"]) == 2
    assert "mu:" in capsys.readouterr().err
    assert main(["budget"]) == 2


def test_plugins_lists_kind_and_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plugins", "--json"])
    rows = json.loads(capsys.readouterr().out)
    by_name = {(r["kind"], r["name"]): r for r in rows}
    assert by_name[("method", "cr-gs")]["distribution"].startswith("privframe ")
    assert by_name[("mechanism", "gaussian")]["privacy"] == "asserted by plugin"
    main(["plugins"])
    assert "cr-gs" in capsys.readouterr().out


def test_run_with_csv_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    data = tmp_path / "data.csv"
    values = np.random.default_rng(0).uniform(size=500)
    data.write_text("id,value\n" + "".join(f"{i},{float(v)!r}\n" for i, v in enumerate(values)))
    assert main(["run", str(config), "--data", str(data), "--column", "value", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["n"] == 500
    assert out["parameters"]["B"] == 300


def test_run_with_npy_and_default_demo_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    npy = tmp_path / "x.npy"
    np.save(npy, np.random.default_rng(1).uniform(size=300))
    assert main(["run", str(config), "--data", str(npy), "--seed", "1"]) == 0
    assert main(["run", str(config), "--seed", "1", "--json"]) == 0
    outputs = capsys.readouterr().out
    assert f'"n": {demo_data().shape[0]}' in outputs


def test_run_rejects_non_numeric_cells_without_echoing_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    data = tmp_path / "data.csv"
    data.write_text("value\n0.5\nSECRET-42\n0.25\n")
    assert main(["run", str(config), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err
    assert "'value'" in err
    assert "SECRET" not in err


def test_run_config_errors_name_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG.replace("B = 300", "B = 300\nmm = 4"))
    assert main(["run", str(config), "--seed", "1"]) == 2
    assert "pipeline.sampler.mm" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("privframe") is None, reason="console script not installed")
def test_console_script_runs_the_demo() -> None:
    proc = subprocess.run(["privframe", "demo", "--seed", "5"], capture_output=True, text=True, check=True, timeout=120)
    assert "confidence interval" in proc.stdout


def test_budget_gdp_delta_needs_mu_and_an_explicit_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--gdp-delta", "1e-7", "--epsilon", "1", "--delta", "1e-5"]) == 2
    assert "gdp-delta:" in capsys.readouterr().err
    assert main(["budget", "--mu", "1", "--gdp-delta", "1e-7"]) == 2
    assert "delta:" in capsys.readouterr().err
    assert main(["budget", "--mu", "1", "--gdp-delta", "1e-7", "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] == pytest.approx(accounting.gdp_epsilon(1e-5 - 1e-7, 1.0), rel=1e-12)


@pytest.mark.parametrize(
    ("method", "budget", "expected"),
    [
        ("cr-ss", '{ unit = "gdp", mu = 8.0, delta = 1e-6 }', "center: ptr-gdp, (5.65685, 5e-07)-GDP"),
        ("privsub", '{ unit = "approx-dp", epsilon = 1.0, delta = 1e-6 }', "subsample: exponential"),
    ],
)
def test_run_prints_mechanisms_without_a_fixed_noise_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str, budget: str, expected: str
) -> None:
    """PTR-GDP and the exponential mechanism have no fixed noise scale; the report must still print."""
    config = tmp_path / "p.toml"
    config.write_text(f'[pipeline]\nmethod = "{method}"\nstatistic = "median"\nbounds = [-6, 4]\nbudget = {budget}\n')
    data = tmp_path / "d.npy"
    np.save(data, np.random.default_rng(1).normal(0, 2, 3000))
    assert main(["run", str(config), "--data", str(data), "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert expected in out
    assert "noise scale None" not in out
