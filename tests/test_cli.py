"""The privframe command line, run in-process through ``main(argv)`` and once as a real console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privframe.cli import DEMO_TRUTH, demo_data, main
from privframe.data.arrays import load_data
from privframe.privacy import accounting

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


def test_run_with_npy_and_the_demo_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    npy = tmp_path / "x.npy"
    np.save(npy, np.random.default_rng(1).uniform(size=300))
    assert main(["run", str(config), "--data", str(npy), "--seed", "1"]) == 0
    assert main(["run", str(config), "--demo", "--seed", "1", "--json"]) == 0
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


def test_audit_exit_status_says_pass_fail_or_inconclusive(capsys: pytest.CaptureFixture[str]) -> None:
    """0 passed, 1 failed, 3 inconclusive (a claim the sample size cannot refute); --json says which."""
    assert main(["audit", "gaussian", "--mu", "1", "--samples", "5000", "--seed", "1"]) == 0
    assert main(["audit", "gaussian", "--mu", "9", "--samples", "5000", "--seed", "1"]) == 3
    assert "INCONCLUSIVE" in capsys.readouterr().out
    assert main(["audit", "gaussian", "--mu", "1", "--samples", "5000", "--seed", "1", "--option", "exact=false"]) == 0


def test_audit_inconclusive_json_names_the_samples_needed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "gaussian", "--mu", "9", "--samples", "5000", "--seed", "1", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "inconclusive"
    assert out["detectable_limit"] < 9
    assert out["samples_needed"] > 5000


def test_audit_takes_mechanism_options_dimension_and_sensitivity(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", "gaussian", "--mu", "1", "--samples", "5000", "--seed", "2", "--json"]
    assert main([*argv, "--option", "exact=false", "--dimension", "3", "--sensitivity", "2.5"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--gamma", "0.5"], "gamma: only smooth-bound"),
        (["--option", "nope=1"], "unknown option"),
        (["--option", "exact"], "--option: expected KEY=VALUE"),
        (["--option", "exact=false", "--option", "exact=true"], "--option: 'exact' is given twice"),
        (["--option", "exact=false", "--option", " exact=false"], "--option: 'exact' is given twice"),
    ],
)
def test_audit_refuses_settings_the_mechanism_does_not_use(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "gaussian", "--mu", "1", "--samples", "1000", *extra]) == 2
    assert message in capsys.readouterr().err


def test_run_never_guesses_the_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --data the command refuses instead of silently running on the demo data."""
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    assert main(["run", str(config), "--seed", "1"]) == 2
    assert "data: give the data" in capsys.readouterr().err
    assert main(["run", str(config), "--demo", "--data", str(config)]) == 2
    assert "demo: give either --data or --demo" in capsys.readouterr().err


def test_run_data_errors_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    assert main(["run", str(config), "--data", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    semicolons = tmp_path / "semi.csv"
    semicolons.write_text("age;bmi\n50;26,5\n61;31,0\n", encoding="utf-8")
    assert main(["run", str(config), "--data", str(semicolons), "--column", "bmi"]) == 2
    err = capsys.readouterr().err
    assert "its header has 1 column: 'age;bmi'" in err
    assert "separated by semicolons" in err
    assert "26,5" not in err
    commas = tmp_path / "two.csv"
    rows = "".join(f"{20 + i % 50},{60 + i % 30}\n" for i in range(400))
    commas.write_text("\ufeffage,weight\n" + rows, encoding="utf-8")  # a byte-order mark is not a name
    assert main(["run", str(config), "--data", str(commas), "--column", "bmi"]) == 2
    assert "2 columns: 'age', 'weight'" in capsys.readouterr().err
    assert main(["run", str(config), "--data", str(commas), "--column", "age", "--seed", "1"]) == 0


@pytest.mark.skipif(shutil.which("privframe") is None, reason="console script not installed")
def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``privframe run ... | head -1``: no BrokenPipeError traceback."""
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    command = f"privframe run {config} --demo --seed 1 | head -c 1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stderr
    assert "BrokenPipe" not in done.stderr


def test_run_reads_several_csv_columns_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "xy.csv"
    rows = "".join(f"{0.1 * (i % 7)},{0.05 * (i % 11)},{i}\n" for i in range(300))
    data.write_text("a,b,id\n" + rows, encoding="utf-8")
    loaded = load_data(data, columns=["b", "a"])
    assert loaded.shape == (300, 2)
    assert loaded[3].tolist() == [0.05 * 3, 0.1 * 3]
    config = tmp_path / "ball.toml"
    config.write_text(
        '[pipeline]\nmethod = "cr-gs"\nstatistic = "mean"\nbounds = { radius = 1.5 }\n'
        'budget = { unit = "gdp", mu = 1.0 }\n',
        encoding="utf-8",
    )
    assert main(["run", str(config), "--data", str(data), "--columns", "a,b", "--seed", "1", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["center"]) == 2
    assert main(["run", str(config), "--data", str(data), "--columns", "a,zz"]) == 2
    assert "columns: no column named 'zz'" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("privframe") is None, reason="console script not installed")
def test_the_installed_command_reports_each_input_error_on_one_line_with_status_2(tmp_path: Path) -> None:
    """The CLI items of the usability issue through the real console script: exit status 2, one line on
    standard error naming the problem, no traceback, no data value."""
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    (tmp_path / "semi.csv").write_text("age;bmi\n50;26,5\n61;31,0\n", encoding="utf-8")
    (tmp_path / "bom.csv").write_text("\ufeffage,weight\n" + "".join(f"{i % 50},{i % 30}\n" for i in range(99)))
    (tmp_path / "latin1.csv").write_bytes("age,name\n50,Jos\xe9\n".encode("latin-1"))
    (tmp_path / "digits.csv").write_text("age\n1_000\n2\n", encoding="utf-8")
    cases = [
        ([], "data: give the data"),
        (["--data", str(tmp_path)], "is a directory"),
        (["--data", str(tmp_path / "semi.csv"), "--column", "bmi"], "separated by semicolons"),
        (["--data", str(tmp_path / "bom.csv"), "--column", "bmi"], "2 columns: 'age', 'weight'"),
        (["--data", str(tmp_path / "latin1.csv"), "--column", "age"], "UTF-8"),
        (["--data", str(tmp_path / "digits.csv"), "--column", "age"], "non-numeric or missing cell in column 'age'"),
        (["--demo", "--columns", "a,b"], "columns: only meaningful with --data"),
    ]
    for extra, expected in cases:
        done = subprocess.run(
            ["privframe", "run", str(config), "--seed", "1", *extra], capture_output=True, text=True, timeout=120
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (extra, done.stderr)
        assert len(lines) == 1, (extra, done.stderr)
        assert lines[0].startswith("privframe: error: "), (extra, lines)
        assert expected in lines[0], (extra, lines)
        assert "Traceback" not in done.stderr
        assert "26,5" not in done.stderr
        assert "1_000" not in done.stderr


# -- pure budgets, and errors in the command line's terms (issue 30, CLI) -------------------------------------


def test_budget_converts_a_pure_epsilon_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "--epsilon", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"epsilon": 5.0, "delta": 0.0, "mu": pytest.approx(accounting.pure_dp_gdp_mu(5.0), rel=1e-12)}
    assert main(["budget", "--epsilon", "1"]) == 0
    assert capsys.readouterr().out == "every 1-DP mechanism is 1.23204-GDP, and (1, delta)-DP for every delta\n"
    # the earlier forms are unchanged
    main(["budget", "--epsilon", "1", "--delta", "1e-5", "--json"])
    assert set(json.loads(capsys.readouterr().out)) == {"epsilon", "delta", "mu"}
    assert main(["budget", "--epsilon", "-1"]) == 2
    assert capsys.readouterr().err.startswith("privframe: error: --epsilon: must be a finite number > 0")


PYTHON_SPELLINGS = ("pf.", "budget=", "bounds=", "=None", "=True", "=False", "(...)", "privframe.privacy")


def _pipeline_file(
    directory: Path, name: str, body: str, *, statistic: str = "mean", bounds: str = "[0.0, 1.0]"
) -> str:
    path = directory / f"{name}.toml"
    path.write_text(f'[pipeline]\nstatistic = "{statistic}"\nbounds = {bounds}\n{body}\n', encoding="utf-8")
    return str(path)


def _cli_error_cases(d: Path) -> list[tuple[list[str], str]]:
    """(argv, the start of its error line after "privframe: error: ") for errors raised below the CLI."""
    gdp = '[pipeline.budget]\nunit = "gdp"\nmu = 1.0'
    pure = '[pipeline.budget]\nunit = "pure-dp"\nepsilon = 1.0'
    approx = '[pipeline.budget]\nunit = "approx-dp"\nepsilon = 1.0\ndelta = 1e-7'
    return [
        (
            ["audit", "laplace", "--mu", "1"],
            "--mu: the Laplace mechanism is calibrated in epsilon; give --epsilon E [--delta D]",
        ),
        (
            ["audit", "exponential", "--mu", "1"],
            "--mu: the exponential mechanism is calibrated in epsilon; give --epsilon E",
        ),
        (["audit", "gaussian", "--epsilon", "1", "--delta", "0.5"], "--delta: must satisfy 0 <= delta <= 0.1"),
        (["audit", "ptr-gdp", "--mu", "1"], "--delta: ptr-gdp needs delta > 0"),
        (["audit", "gaussian", "--mu", "1", "--option", "foo=1"], "--option foo: unknown option"),
        (
            ["audit", "exponential", "--epsilon", "1", "--statistic", "quantile", "--statistic-option", "q=2"],
            "--statistic-option q: must be a number in (0, 1)",
        ),
        (
            [
                *("audit", "exponential", "--epsilon", "1", "--statistic", "quantile"),
                *("--statistic-option", "q=0.9", "--statistic-option", "q=0.1"),
            ],
            "--statistic-option: 'q' is given twice; give each option once",
        ),
        (["audit", "gausian", "--mu", "1"], "MECHANISM: unknown mechanism 'gausian'"),
        (["audit", "gaussian"], "--mu/--epsilon: give the claimed budget"),
        (["budget", "--mu", "1", "--gdp-delta", "0.5"], "--gdp-delta: must satisfy 0 <= delta <= 0.1"),
        (["budget", "--mu", "1", "--delta", "2"], "--delta: must satisfy 0 < delta <= 0.1"),
        (["budget"], "--mu/--epsilon: give --mu"),
        (["demo", "--mu", "0"], "--mu: must be a finite number > 0"),
        (["plugins", "--explain", "nosuch"], "--explain: unknown statistic 'nosuch'"),
        (["run", str(d / "missing.toml"), "--demo"], "CONFIG: cannot read"),
        (["run", _pipeline_file(d, "a", f'method = "cr-gs"\n{gdp}'), "--demo", "--column", "x"], "--column: only"),
        (
            ["run", _pipeline_file(d, "b", f'method = "subsampling"\n{gdp}'), "--demo"],
            "pipeline.budget: method 'subsampling' is a non-private reference; "
            "leave the budget out of the pipeline file",
        ),
        (
            ["run", _pipeline_file(d, "c", f'method = "cr-ss"\n{gdp}', statistic="median"), "--demo"],
            'pipeline.budget: cr-ss gives (mu, delta)-GDP, not pure mu-GDP; pass { unit = "gdp", mu = M, delta = D }',
        ),
        (
            ["run", _pipeline_file(d, "e", f'method = "privboot"\n{pure}'), "--demo"],
            "pipeline.budget: a GDP method cannot honour pure epsilon-DP; "
            'give { unit = "approx-dp", epsilon = E, delta = D }',
        ),
        (
            ["run", _pipeline_file(d, "g", f'method = "privboot"\n{gdp}'), "--demo"],
            "pipeline.budget: privboot's exact accounting proves an (epsilon, delta) guarantee",
        ),
        (
            ["run", _pipeline_file(d, "f", f'method = "blbquant"\n{gdp}', statistic="median"), "--demo"],
            'pipeline.budget: blbquant is pure epsilon-DP and takes { unit = "pure-dp", epsilon = E }',
        ),
        (
            ["run", _pipeline_file(d, "h", f'method = "cr-gs"\n{gdp}', bounds='"x"'), "--demo"],
            "pipeline.bounds: expected [low, high], { low = L, high = H } or { radius = R }",
        ),
        (
            [
                "run",
                _pipeline_file(d, "i", f'method = "cr-gs"\n{approx}'),
                "--demo",
                "--session",
                str(d / "s.json"),
                "--session-budget",
                "mu=3",
            ],
            "pipeline.budget: an (epsilon, delta) call cannot be charged to a GDP session; "
            "use a session file whose --session-budget is epsilon=E,delta=D",
        ),
        (
            [
                "run",
                _pipeline_file(d, "k", f'method = {{ name = "privboot", accounting = "asymptotic" }}\n{gdp}'),
                "--demo",
                "--session",
                str(d / "t.json"),
                "--session-budget",
                "mu=3",
            ],
            "pipeline.method: this pipeline's guarantee holds only asymptotically",
        ),
        (
            ["run", str(d / "a.toml"), "--demo", "--session", str(d / "u.json"), "--session-budget", "mu=-1"],
            "--session-budget mu: must be",
        ),
    ]


def test_every_error_below_the_cli_names_the_flag_and_gives_cli_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, start in _cli_error_cases(tmp_path):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"privframe: error: {start}"), (argv, err)
        assert not [word for word in PYTHON_SPELLINGS if word in err], (argv, err)


def test_an_asymptotic_pipeline_is_admitted_to_a_session_only_with_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _pipeline_file(
        tmp_path,
        "k",
        'method = { name = "privboot", accounting = "asymptotic" }\n[pipeline.budget]\nunit = "gdp"\nmu = 1.0',
    )
    session = str(tmp_path / "s.json")
    args = ["run", config, "--demo", "--seed", "1", "--session", session, "--session-budget", "mu=3"]
    assert main(args) == 2
    assert "--session-allow-asymptotic" in capsys.readouterr().err
    assert main([*args, "--session-allow-asymptotic"]) == 0
    assert "1 call spent 1-GDP of 3-GDP" in capsys.readouterr().out
    assert main(["run", config, "--demo", "--session-allow-asymptotic"]) == 2
    assert capsys.readouterr().err.startswith(
        "privframe: error: --session-allow-asymptotic: only meaningful with --session"
    )


@pytest.mark.skipif(shutil.which("privframe") is None, reason="console script not installed")
def test_the_installed_command_speaks_cli(tmp_path: Path) -> None:
    cases = _cli_error_cases(tmp_path)
    chosen = [cases[0], cases[2], cases[8], cases[15], cases[17]]  # audit, a delta, budget, run: two budgets
    for argv, start in chosen:
        done = subprocess.run(["privframe", *argv], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.startswith(f"privframe: error: {start}"), (argv, done.stderr)
        assert not [word for word in PYTHON_SPELLINGS if word in done.stderr], (argv, done.stderr)
    done = subprocess.run(["privframe", "budget", "--epsilon", "5"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("every 5-DP mechanism is 4.94668-GDP")
