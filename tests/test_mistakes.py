"""Mistakes caught before they mislead (issue 30, item 2): a confidence below 0.5, a delta at or above 1/n,
a logistic slope without public feature bounds or with an unnamed label column (tests/test_logistic_table.py),
and auto at small n (tests/test_small_n.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _support import Untouchable

import privframe as pf


@pytest.mark.parametrize("confidence", [0.05, 0.1, 0.499])
def test_a_confidence_below_one_half_is_refused_naming_alpha(confidence: float) -> None:
    with pytest.raises(pf.ConfigError, match=rf"^confidence: must be at least 0.5: .*confidence={1 - confidence:g}"):
        pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), confidence=confidence)
    pf.Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), confidence=0.5)  # allowed


@pytest.mark.parametrize(
    ("budget", "method"),
    [(pf.ApproxDP(1.0, 1e-3), "cr-gs"), (pf.GDP(1.0, delta=2e-3), "cr-ss"), (pf.ApproxDP(1.0, 0.05), "privsub")],
)
def test_a_delta_at_or_above_one_over_n_is_refused_before_the_data_are_read(budget: Any, method: str) -> None:
    statistic = "median" if method == "cr-ss" else "mean"
    with pytest.raises(pf.BudgetError, match=r"^budget: delta = .* is at least 1/n = 0.001 for n = 1000 records"):
        pf.confidence_interval(Untouchable(1000), statistic, method=method, budget=budget, bounds=(0, 1))  # type: ignore[arg-type]
    session = pf.Session(pf.ApproxDP(5.0, 0.1))
    with pytest.raises(pf.BudgetError, match="at least 1/n"):
        session.confidence_interval(np.zeros(1000), statistic, method=method, budget=budget, bounds=(0, 1))
    assert session.spent is None  # refused before it was admitted


def test_a_delta_below_one_over_n_runs() -> None:
    x = np.random.default_rng(0).uniform(size=1000)
    res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.ApproxDP(1.0, 9e-4), bounds=(0, 1), rng=1)
    assert res.low < res.high
