"""``MethodMap.shipped_for``: the shipped map read one statistic at a time gives ``method="auto"`` the same
answers as the whole map (it reads a fraction of the file on a process's first auto call)."""

from __future__ import annotations

import itertools

import pytest

import privframe as pf
from privframe.pipeline.methodmap import MethodMap

WHOLE = MethodMap.shipped()
BUDGETS = [pf.PureDP(1.0), pf.PureDP(3.0), pf.ApproxDP(1.0, 1e-6), pf.ApproxDP(5.0, 1e-6), pf.GDP(1.0), pf.GDP(4.0)]
SIZES = [20, 100, 300, 2000, 50_000, 10**6]
QUERIES = sorted({(str(t["name"]), t.get("quantile")) for t in WHOLE.statistics.values()}, key=repr)


def test_every_statistic_of_the_map_is_queried() -> None:
    assert {"mean", "median", "quantile", "u-statistic", "logistic-slope"} <= {name for name, _ in QUERIES}


@pytest.mark.parametrize(("name", "level"), QUERIES, ids=[f"{n}-{q}" for n, q in QUERIES])
def test_the_same_answers_as_the_whole_map(name: str, level: float | None) -> None:
    part = MethodMap.shipped_for(name, level is not None)
    assert part.source == WHOLE.source
    assert part.statistics == WHOLE.statistics
    assert len(part.cells) < len(WHOLE.cells)
    for bounds in (None, "interval", "ball", "none"):
        assert part.statistic_keys(name, bounds, level) == WHOLE.statistic_keys(name, bounds, level)
        assert part.methods_for(name, bounds, level) == WHOLE.methods_for(name, bounds, level)
    options = next(dict(t.get("options", {})) for t in WHOLE.statistics.values() if t["name"] == name)
    for n, budget in itertools.product(SIZES, BUDGETS):
        ours, theirs = (
            part.locate(name, options, n, budget, None, level),
            WHOLE.locate(name, options, n, budget, None, level),
        )
        assert ours == theirs
        if theirs is not None:
            assert [c.n for c in part.cells if c.statistic == theirs.cell.statistic] == [
                c.n for c in WHOLE.cells if c.statistic == theirs.cell.statistic
            ]


def test_a_statistic_the_map_lacks_has_no_cells() -> None:
    part = MethodMap.shipped_for("no-such-statistic")
    assert part.cells == ()
    assert part.statistic_keys("no-such-statistic") == WHOLE.statistic_keys("no-such-statistic") == ()
    assert part.statistic_names() == WHOLE.statistic_names()  # what auto's refusal lists
    assert part.locate("no-such-statistic", {}, 100, pf.PureDP(1.0)) is None
