"""The record domain (issue 27, item 5; ``docs/concepts.md``, the record domain).

Records are finite reals, clipped to the public bounds. A finite value outside the bounds is a record whose
influence is that of a record at the bound: the release is bit-identical to the one with the record at the
bound. NaN and the infinities are not records: every method refuses the input with ``DataError`` before any
release, with a message that prints no value, and a session charges nothing for it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import privframe as pf

N = 1000
METHODS: list[tuple[str, str, dict[str, Any]]] = [
    ("cr-gs", "mean", {"budget": pf.GDP(1.0)}),
    ("cr-gs", "median", {"budget": pf.GDP(2.0)}),
    ("cr-ss", "median", {"budget": pf.GDP(1.0, delta=1e-6)}),
    ("privsub", "mean", {"budget": pf.ApproxDP(2.0, 1e-6)}),
    ("privsub", "quantile", {"budget": pf.PureDP(2.0), "q": 0.8}),
    ("blbquant", "median", {"budget": pf.PureDP(4.0), "min_block": 0}),
    ("dette-graw", "mean", {"budget": pf.GDP(1.0)}),
    ("privboot", "mean", {"budget": pf.ApproxDP(4.89, 1e-6), "B": 200, "ci": "standard"}),
]
IDS = [f"{method}-{statistic}" for method, statistic, _ in METHODS]


def _data() -> np.ndarray:
    return np.random.default_rng(27).beta(2.0, 5.0, size=N)


@pytest.mark.parametrize(("method", "statistic", "options"), METHODS, ids=IDS)
@pytest.mark.parametrize("far", [1.0 + 1e-9, 7.5, 1e300, -1e300])
def test_a_finite_value_outside_the_bounds_counts_as_the_bound(
    method: str, statistic: str, options: dict[str, Any], far: float
) -> None:
    x = _data()
    outside, at_bound = x.copy(), x.copy()
    outside[3] = far
    at_bound[3] = 1.0 if far > 1.0 else 0.0
    kw = {"method": method, "bounds": (0.0, 1.0), "rng": 11, **options}
    a = pf.confidence_interval(outside, statistic, **kw)
    b = pf.confidence_interval(at_bound, statistic, **kw)
    assert (a.low, a.high, a.center) == (b.low, b.high, b.center)


@pytest.mark.parametrize(("method", "statistic", "options"), METHODS, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_record_is_refused_before_any_release_and_its_neighbour_releases(
    method: str, statistic: str, options: dict[str, Any], bad: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    import privframe.plugin.context as context

    released: list[str] = []
    original = context.RunContext.release

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        released.append(self.method)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(context.RunContext, "release", counting)
    x = _data()
    x[10] = bad
    kw = {"method": method, "bounds": (0.0, 1.0), "rng": 3, **options}
    with pytest.raises(pf.DataError) as caught:
        pf.confidence_interval(x, statistic, **kw)
    assert str(caught.value) == "x: contains NaN or infinite values (they are never silently dropped)"  # no value
    assert released == []
    x[10] = 0.5  # a neighbour in the domain: it releases
    pf.confidence_interval(x, statistic, **kw)


def test_a_non_record_in_a_session_costs_nothing() -> None:
    session = pf.Session(pf.GDP(1.0))
    x = _data()
    x[0] = np.nan
    with pytest.raises(pf.DataError):
        session.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(0.8), bounds=(0, 1))
    assert session.spent is None
    assert not session.calls


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_table_or_vector_row_with_a_non_record_is_refused(bad: float) -> None:
    rows = np.random.default_rng(2).uniform(-0.5, 0.5, size=(500, 2))
    rows[7, 1] = bad
    with pytest.raises(pf.DataError, match=r"^x: contains NaN or infinite values"):
        pf.confidence_region(rows, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(1.0))


HUGE = float(np.finfo(np.float64).max)


@pytest.mark.parametrize("row", [(HUGE, HUGE), (-HUGE, -HUGE), (1e200, 3e199), (-HUGE, 0.0)])
def test_a_row_whose_norm_overflows_is_projected_onto_the_ball_without_a_warning(row: tuple[float, float]) -> None:
    """Such a row is a finite record far outside the ball: it lands on the sphere in its own direction. Its
    squares overflow, and a floating-point warning on some data and not on their neighbours would be a
    release (an exception under warnings-as-errors); it used to be projected to 0 with an overflow warning."""
    rows = np.zeros((20, 2))
    rows[0] = row
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        projected = pf.L2Ball(2.0).clip(rows)
    direction = np.array(row) / np.max(np.abs(row))
    np.testing.assert_allclose(projected[0], 2.0 * direction / np.linalg.norm(direction), rtol=1e-15)
    assert np.linalg.norm(projected[0]) <= 2.0 * (1 + 1e-15)
    assert not projected[1:].any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        region = pf.confidence_region(rows, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(2.0), rng=1)
    assert np.all(np.isfinite(region.center))
