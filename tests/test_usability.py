"""Usability items of issue 16: meaningless deltas, a quantile without its level, the missing-PNG note, the
docs extra."""

from __future__ import annotations

import io
import logging
import math
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import privframe as pf
from privframe.resampling import blocks

ROOT = Path(__file__).resolve().parents[1]
X = np.random.default_rng(0).uniform(size=2000)

# -- delta ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda d: pf.ApproxDP(1.0, d), lambda d: pf.GDP(1.0, delta=d)])
def test_delta_above_max_delta_is_refused_naming_delta(make) -> None:  # type: ignore[no-untyped-def]
    assert pf.MAX_DELTA == 0.1
    make(pf.MAX_DELTA)  # the boundary itself is accepted (ApproxDP(0.1, 0.1) runs, see test_bad_input)
    for delta in (0.5, math.nextafter(pf.MAX_DELTA, 1.0), 0.99):
        with pytest.raises(pf.BudgetError, match=r"^delta: must satisfy 0 <= delta <= 0\.1 \(delta should be far"):
            make(delta)


def test_delta_rule_applies_to_conversions_and_config_tables() -> None:
    with pytest.raises(pf.BudgetError, match=r"^delta: must satisfy 0 < delta <= 0\.1"):
        pf.GDP(1.0).to_approx_dp(0.5)
    with pytest.raises(pf.ConfigError, match=r"^budget\.delta: must satisfy 0 <= delta <= 0\.1"):
        pf.budget_from_table({"unit": "approx-dp", "epsilon": 1.0, "delta": 0.5})


def test_cli_refuses_a_meaningless_delta(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "privframe.cli", "budget", "--epsilon", "1", "--delta", "0.5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("privframe: error: --delta: must satisfy 0 <= delta <= 0.1")


# -- quantile without q ---------------------------------------------------------------------------------------


def test_quantile_needs_its_level() -> None:
    with pytest.raises(pf.ConfigError, match=r"^statistic\.q: the quantile statistic needs its level q in \(0, 1\)"):
        pf.confidence_interval(X, "quantile", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1))
    with pytest.raises(pf.ConfigError, match=r"^pipeline\.statistic\.q: the quantile statistic needs its level"):
        pf.Pipeline.from_dict(
            {
                "pipeline": {
                    "method": "cr-gs",
                    "statistic": "quantile",
                    "bounds": [0, 1],
                    "budget": {"unit": "gdp", "mu": 1},
                }
            }
        )
    with pytest.raises(pf.ConfigError, match=r"^statistic\.q: must be a number in \(0, 1\)"):
        pf.confidence_interval(X, "quantile", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), q=1.5)
    with_q = pf.confidence_interval(X, "quantile", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), q=0.5, rng=1)
    median = pf.confidence_interval(X, "median", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)
    assert (with_q.low, with_q.high) == (median.low, median.high)  # the median needs no level and is unchanged


def test_cli_quantile_without_q_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "q.toml"
    config.write_text(
        '[pipeline]\nmethod = "cr-gs"\nstatistic = "quantile"\nbounds = [0, 1]\nbudget = { unit = "gdp", mu = 1.0 }\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "privframe.cli", "run", str(config), "--demo"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "privframe: error: pipeline.statistic.q: the quantile statistic needs its level q in (0, 1); "
        "use 'median' for q = 0.5"
    ]


# -- the missing PNG ------------------------------------------------------------------------------------------


def test_quick_experiment_says_when_no_png_was_written(tmp_path: Path) -> None:
    """matplotlib made unimportable in a real subprocess (``sys.modules["matplotlib"] = None``)."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from privframe.cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    argv = ["experiment", "seed1-mean", "--trials", "2", "--n", "200", "--methods", "privsub"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv, "--out", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (
        "privframe: no seed1-mean.png written: plots need the plot extra "
        "(pip install 'privframe[plot]', which installs matplotlib)"
    ) in done.stderr.splitlines()
    assert "(results.json, results.csv)" in done.stdout
    assert not list(tmp_path.rglob("*.png"))


# -- the docs extra -------------------------------------------------------------------------------------------


def test_docs_extra_installs_the_theme_and_the_site_loads_nothing_from_the_network() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    docs = project["optional-dependencies"]["docs"]
    for package in ("mkdocs", "mkdocs-material", "pymdown-extensions"):
        assert any(re.match(rf"{package}\b", requirement) for requirement in docs), package
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^theme:\n\s+name: material", config, re.MULTILINE)
    # Math is typeset by the KaTeX vendored under docs/, never fetched: the site works offline.
    for remote in ("http://", "https://cdn", "unpkg"):
        assert remote not in config, remote
    for asset in ("javascripts/katex/katex.min.js", "javascripts/katex/katex.min.css"):
        assert asset in config, asset
        assert (ROOT / "docs" / asset).is_file(), asset


# -- progress on long calls, and the cost of large blbquant runs ------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _mean_interval(**options: object) -> tuple[float, float]:
    x = np.random.default_rng(3).uniform(size=4000)
    res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=2, **options)
    return res.low, res.high


def test_a_call_draws_a_progress_bar_on_a_terminal_only_and_it_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = _mean_interval(progress=False)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert _mean_interval(progress=True) == plain
    line = terminal.getvalue().rsplit("\r", 1)[-1]
    assert "1000 resamples of" in line
    assert "blocks" in line
    assert line.endswith("\n")
    assert "/" in line
    assert _mean_interval(workers=2, progress=True) == plain  # threads advance one bar
    terminal.seek(0)
    terminal.truncate()
    assert _mean_interval() == plain  # by default only calls of PROGRESS_INDICES indices or more
    assert terminal.getvalue() == ""
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    assert _mean_interval(progress=True) == plain  # never drawn when standard error is not a terminal
    assert piped.getvalue() == ""


def test_a_long_blbquant_call_draws_its_bar_over_the_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """R n = 2e8 draws (n = 20 000, R = 10 000): the default draws the bar on a terminal, one step a block."""
    x = np.random.default_rng(5).uniform(size=20_000)
    kwargs: dict[str, object] = {"method": "blbquant", "budget": pf.PureDP(8.0), "bounds": (0, 1), "rng": 3}
    plain = pf.confidence_interval(x, "mean", R=10_000, progress=False, **kwargs)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    drawn = pf.confidence_interval(x, "mean", R=10_000, **kwargs)
    assert (drawn.low, drawn.high) == (plain.low, plain.high)
    line = terminal.getvalue().rsplit("\r", 1)[-1]
    assert "blbquant: 10000 little bootstraps a block" in line
    assert f"{plain.parameters['s']}/{plain.parameters['s']}" in line
    terminal.seek(0)
    terminal.truncate()
    pf.confidence_interval(x, "mean", R=100, **kwargs)  # R n = 2e6: no bar by default
    assert terminal.getvalue() == ""


def test_progress_must_be_a_boolean() -> None:
    with pytest.raises(pf.ConfigError, match=r"^progress: "):
        _mean_interval(progress="yes")


def test_a_large_blbquant_run_announces_its_cost(caplog: pytest.LogCaptureFixture) -> None:
    from privframe_std.methods.blbquant import method as blbquant

    # The rule against measured calls (2-core machine): the median at n = 20 000, eps = 1 (s = 199 blocks of
    # b = 100, R = 1428) took 0.54-0.83 s; at n = 200 000, eps = 8 (s = 31, b = 6451, R = 10 000) 14.1 s.
    assert blbquant.blbquant_seconds(20_000, 199, 100, 1428, False, True) == pytest.approx(0.7, rel=0.3)
    assert blbquant.blbquant_cost_note(20_000, 199, 100, 1428, False, True) is None
    assert blbquant.blbquant_seconds(200_000, 31, 6451, 10_000, False, True) == pytest.approx(14.1, rel=0.2)
    note = blbquant.blbquant_cost_note(200_000, 31, 6451, 10_000, False, True)
    assert note is not None
    assert "s = 31 blocks of b = 6451 records" in note
    assert "expect about 14 s" in note
    x = np.random.default_rng(4).uniform(size=2000)
    with caplog.at_level(logging.WARNING):
        pf.confidence_interval(
            x, "mean", method="blbquant", budget=pf.PureDP(8.0), bounds=(0, 1), min_block=0, R=100, rng=1
        )
    assert not caplog.records  # well under a second: nothing to announce


def test_experiment_trials_draw_no_bar_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the harness draws its bar of cells; the calls inside the trials stay silent."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(blocks, "PROGRESS_INDICES", 1)  # every call would otherwise draw one
    pf.experiments.run("seed1-mean", trials=1, n=[400], methods=["cr-gs-wor"], budgets=["mu=1"], progress=True)
    assert "cells" in terminal.getvalue()
    assert "resamples of" not in terminal.getvalue()


def test_the_front_doors_carry_their_public_names_in_help_and_in_argument_errors() -> None:
    """``help(pf.confidence_interval)`` and a forgotten argument name the function the user called, not the
    private template behind it (``request()``, ``_interval``)."""
    assert (pf.confidence_interval.__name__, pf.confidence_region.__name__) == (
        "confidence_interval",
        "confidence_region",
    )
    assert pf.Pipeline.build.__qualname__ == "Pipeline.build"
    with pytest.raises(
        TypeError, match=r"^confidence_interval\(\) missing 2 required keyword-only arguments: 'method'"
    ):
        pf.confidence_interval([0.5], "mean")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^build\(\) missing 2 required keyword-only arguments"):
        pf.Pipeline.build("mean")  # type: ignore[call-arg]
