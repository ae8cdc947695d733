"""The private-variance study scripts: ``private_variance_local_inflation.py`` (the inflation one variance needs
on its own), ``private_variance_rare_atom.py`` (a rare far atom, against NoisyVar) and ``plan_search_time.py``
(the plan search's time, against another tree)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from _support import load_file

import privframe as pf
from privframe_std.methods.private_variance import calibration, core

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _load(name: str) -> ModuleType:
    return load_file(SCRIPTS / f"{name}.py")


def test_local_inflation_is_the_smallest_that_covers_that_variance() -> None:
    """At n = 2000, PureDP(5), sd = W/10 the variance needs a small part of the plan's k (0.16 of 1.59):
    coverage at sigma^2 alone reaches the target at the returned k and not 0.05 below it, and k=0 does not."""
    script = _load("private_variance_local_inflation")
    n, confidence, sigma2 = 2000, 0.9, 0.01
    plan = core.plan(n, (0.0, 1.0), pf.PureDP(5.0), confidence)
    model = core._model(n, confidence, plan.mean, plan.second_moment, 1.0)
    local = script.local_inflation(sigma2, plan.inflation, model)
    target = confidence - calibration.CALIBRATION_SLACK

    def worst(k: float) -> float:
        return float(calibration._worst_at(np.array([sigma2]), k, model, calibration.FULL_RANGE)[0])

    assert 0.0 < local < 0.5 * plan.inflation
    assert worst(local) >= target > worst(local - 0.05)


def test_budget_spelling_of_the_local_inflation_script() -> None:
    script = _load("private_variance_local_inflation")
    assert script.parse_budget("pure=5") == pf.PureDP(5.0)
    assert script.parse_budget("gdp=4") == pf.GDP(4.0)
    with pytest.raises(SystemExit, match="neither"):
        script.parse_budget("approx=1")


def test_rare_atom_script_prints_a_row_per_probability(capsys: pytest.CaptureFixture[str]) -> None:
    _load("private_variance_rare_atom").main(["--n", "200", "--p", "0.05,0.1", "--trials", "3", "--sd", "0.1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0.")]
    assert [row.split(" | ")[0] for row in rows] == ["| 0.05", "| 0.1"]
    assert all(len(row.strip("|").split("|")) == 10 for row in rows)  # with the non-private t interval's columns


def test_rare_atom_script_t_interval_is_the_textbook_one(capsys: pytest.CaptureFixture[str]) -> None:
    """At p = 0.5 and n = 400 the law is symmetric and the t interval covers near its nominal 0.9 (within 3 SE,
    0.064 at 200 trials), with the width 2 t s / sqrt(n) = 2 * 1.6487 * 0.1 / 20 within rounding."""
    _load("private_variance_rare_atom").main(["--n", "400", "--p", "0.5", "--trials", "200", "--sd", "0.1"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0.5"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert abs(float(cells[7]) - 0.9) < 0.064
    assert abs(float(cells[8]) - 2 * 1.6487 * 0.1 / 20) < 0.0005


def test_rare_atom_script_refuses_an_atom_outside_the_bounds() -> None:
    with pytest.raises(SystemExit, match="outside"):
        _load("private_variance_rare_atom").main(["--n", "200", "--p", "0.001", "--trials", "1", "--sd", "0.1"])


def test_plan_search_time_compares_two_trees_and_their_plans(capsys: pytest.CaptureFixture[str]) -> None:
    """The same tree timed against itself: one row per (n, budget), a ratio, and the plans the same."""
    script = _load("plan_search_time")
    root = SCRIPTS.parent
    script.main(["--n", "20", "--budgets", "GDP(1.0)", "--rounds", "1", "--against", str(root)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| n | budget | this (s) | against (s) | this / against | plans |"
    assert lines[1] == "|---" * 6 + "|"
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells[:2] == ["20", "GDP(1.0)"]
    assert cells[-1] == "same"
    assert all(float(value) > 0 for value in cells[2:5])


def test_plan_search_time_refuses_a_folder_that_is_not_a_checkout(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        _load("plan_search_time").main(["--against", str(tmp_path)])
