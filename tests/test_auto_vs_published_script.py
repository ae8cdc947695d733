"""``scripts/auto_vs_published.py``: which shapes ``--shapes-over`` lists and what it prints for them; what
``--sim-draws`` hands to the NoisyVar baseline."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from _support import load_file

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "auto_vs_published.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_file(SCRIPT)


def _row(variant: str, auto: float | None, baseline: float, matched: float | None = None) -> dict[str, Any]:
    return {
        "variant": variant,
        "auto_coverage": None if auto is None else 0.9,
        "auto_width": auto,
        "baseline_coverage": 0.8,
        "baseline_width": baseline,
        "matched_width": matched,
        "range": 1.0,
    }


def test_lists_only_the_shapes_over_the_ratio(script: ModuleType) -> None:
    cell = SimpleNamespace(statistic="mean", n=100, budget="eps=5")
    rows = [_row("wide", 1.5, 1.0, 1.2), _row("equal", 1.15, 1.0), _row("narrow", 0.9, 1.0)]
    rows.append(_row("unmeasured", None, 1.0))
    lines = list(script.wide_shapes([{"cell": cell, "rows": rows}], 1.15))
    body = [line for line in lines if line.startswith("| mean")]
    assert body == ["| mean | 100 | eps=5 | wide | 0.900 | 0.800 | 1.5 | 1 | 1.50 | 1.2 |"]
    assert "more than 1.15x" in lines[0]


def test_a_shape_without_a_matched_width_prints_a_dash(script: ModuleType) -> None:
    cell = SimpleNamespace(statistic="median", n=500, budget="mu=1")
    (line,) = [x for x in script.wide_shapes([{"cell": cell, "rows": [_row("t3-w3", 2.0, 1.0)]}], 1.0) if "t3-w3" in x]
    assert line.endswith("| 2.00 | - |")


def test_sim_draws_reach_the_noisyvar_baseline(script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def spy(*args: Any, draws: int) -> tuple[np.ndarray, np.ndarray]:
        seen.append(draws)
        return np.zeros(1), np.ones(1)

    monkeypatch.setattr(script, "noisyvar_interval", spy)
    data, budget = np.full((1, 10), 0.5), script.pf.PureDP(1.0)
    script.baseline("mean", data, (0.0, 1.0), budget, math.nan, 0.9, 0)
    script.baseline("mean", data, (0.0, 1.0), budget, math.nan, 0.9, 0, 20_000)
    assert seen == [1000, 20_000]


def test_sim_draws_below_two_are_refused(script: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.main(["--sim-draws", "1"])
    assert "--sim-draws must be at least 2" in capsys.readouterr().err
