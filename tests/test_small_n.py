"""Small n honestly (issue 29, item 5): ``auto`` below the method map's smallest n warns with a typed
``CoverageWarning``, and a whole-range interval is flagged in the result and its string."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privframe as pf
from privframe.pipeline.methodmap import MethodMap


def _smallest_n(statistic: str) -> int:
    return min(cell.n for cell in MethodMap.shipped().cells if cell.statistic == statistic)


def test_auto_below_the_maps_smallest_n_warns_once_per_call_with_a_typed_warning() -> None:
    n = _smallest_n("mean") // 5
    x = np.random.default_rng(0).uniform(12, 60, size=n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pf.confidence_interval(x, "mean", method="auto", budget=pf.ApproxDP(1.0, 1e-6), bounds=(12, 60), rng=1)
    coverage = [w for w in caught if issubclass(w.category, pf.CoverageWarning)]
    assert len(coverage) == 1
    message = str(coverage[0].message)
    assert f"n = {n}" in message
    assert "private-variance" in message  # names what holds in finite samples
    assert coverage[0].filename.endswith("test_small_n.py")  # points at the caller


def _largest_n(statistic: str) -> int:
    return max(cell.n for cell in MethodMap.shipped().cells if cell.statistic == statistic)


def test_auto_above_the_maps_largest_n_warns_too() -> None:
    """Outside the measured range on either side the choice is an extrapolation, and says so."""
    n = _largest_n("median") * 3
    x = np.random.default_rng(2).uniform(size=n)
    with pytest.warns(pf.CoverageWarning, match=rf"n = {n} extrapolates .* largest n for 'median' is"):
        pf.confidence_interval(x, "median", method="auto", budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)


def test_auto_inside_the_map_does_not_warn() -> None:
    n = _smallest_n("mean")
    x = np.random.default_rng(1).uniform(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pf.CoverageWarning)
        pf.confidence_interval(x, "mean", method="auto", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)


def test_a_whole_range_interval_is_flagged() -> None:
    """n = 20 at GDP(1) on bounds (12, 60): cr-gs's interval is the whole bounds."""
    x = np.random.default_rng(0).uniform(12, 60, size=20)
    res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(12, 60), rng=1)
    assert (res.low, res.high) == (12.0, 60.0)
    assert res.diagnostics["whole_range"] is True
    assert "[the whole range: no information]" in str(res)
    narrow = pf.confidence_interval(
        np.random.default_rng(2).uniform(size=5000), "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1
    )
    assert "whole_range" not in narrow.diagnostics
    assert "whole range" not in str(narrow)


@pytest.mark.parametrize("method", ["private-variance", "rank-quantile"])
def test_the_finite_sample_methods_are_informative_at_n_20(method: str) -> None:
    """Where auto extrapolates, the methods it names give informative intervals (n = 20, PureDP(5))."""
    x = np.random.default_rng(3).uniform(12, 60, size=20)
    statistic = "mean" if method == "private-variance" else "median"
    res = pf.confidence_interval(x, statistic, method=method, budget=pf.PureDP(5.0), bounds=(12, 60), rng=4)
    assert res.width < 48.0
