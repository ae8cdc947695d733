"""Statistics whose rounding stays inside the guarantee, on bounds far from 0 (issue 27, item 1).

A float sum of values near ``2^50`` rounds at ``0.25`` per addition, while one of n = 1000 records moves the
mean by ``0.001``: the computed means of neighbours differed by 250 times the charged sensitivity, and the
exact noise (about 2^20 grid steps) vanished when added to a centre of about 2^80 steps. Now an equivariant
statistic runs on the data shifted by the public lower bound, the mean's sums are exact, the remaining
roundings are charged in the sensitivities, and bounds whose doubles are coarser than one record's influence
are refused before a value is read.

Checked here: an adversarial search over neighbours on bounds far from 0 for every statistic (the change of
the value each method computes, in the coordinates it computes it, never exceeds the charged sensitivity),
the refusals, and an empirical audit of the released centre at the claimed budget.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.pipeline.build import Pipeline

FAR = (2.0**36, 2.0**20)
"""Lower bounds far from 0 (width 1) that can still be released: at n = 1000 a record moves the mean by 1e-3,
64 times the doubles' spacing at 2^36."""


def _context(statistic: str, x: np.ndarray, bounds: Any, **options: Any) -> pp.RunContext[Any]:
    """The run context cr-gs (or privsub for KS-free methods) would compute in, on data ``x``."""
    method = "privsub" if statistic == "ks" else "cr-gs"
    pipe = Pipeline.build(statistic, method=method, budget=pf.GDP(1.0), bounds=bounds, **options)
    return pipe.resolve().context(pipe.prepare(x), np.random.SeedSequence(0))


def _adversarial(low: float, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Datasets that make float sums round the most: values at both bounds, the doubles just inside them,
    alternating, and uniform; each of n records."""
    high = low + 1.0
    inside = (np.nextafter(low, high), np.nextafter(high, low))
    return [
        np.where(np.arange(n) % 2 == 0, low, high),
        np.where(np.arange(n) % 3 == 0, inside[0], inside[1]),
        low + rng.uniform(size=n),
        np.full(n, high),
        np.concatenate([np.full(n // 2, low), low + rng.uniform(size=n - n // 2)]),
    ]


def _worst_change(ctx_of: Any, datasets: list[np.ndarray], low: float) -> tuple[float, float]:
    """The largest change of the computed value over replace-one neighbours (each record set to either bound),
    and the charged sensitivity."""
    worst, charged = 0.0, 0.0
    for x in datasets:
        base_ctx = ctx_of(x)
        base = base_ctx.evaluate()
        charged = base_ctx.sensitivity(x.shape[0])
        for i, value in itertools.product((0, 1, x.shape[0] // 2, x.shape[0] - 1), (low, low + 1.0)):
            neighbour = x.copy()
            neighbour[i] = value
            worst = max(worst, float(np.max(np.abs(ctx_of(neighbour).evaluate() - base))))
    return worst, charged


@pytest.mark.parametrize("low", FAR)
@pytest.mark.parametrize(
    ("statistic", "options"),
    [("mean", {}), ("median", {}), ("quantile", {"q": 0.8}), ("u-statistic", {}), ("winsorized-mean", {"trim": 0.1})],
)
def test_no_neighbour_moves_a_statistic_beyond_its_charged_sensitivity(
    low: float, statistic: str, options: dict[str, Any]
) -> None:
    rng = np.random.default_rng(36)
    bounds = (low, low + 1.0)
    worst, charged = _worst_change(
        lambda x: _context(statistic, x, bounds, **options), _adversarial(low, 1000, rng), low
    )
    assert worst <= charged, (statistic, worst, charged)
    assert worst > 0.0  # the search does move the statistic


def test_the_mean_of_values_far_from_0_is_exact() -> None:
    """At 2^36 the shifted, rounded, exactly summed mean equals the mean computed in exact arithmetic."""
    from fractions import Fraction

    low = 2.0**36
    x = low + np.random.default_rng(1).uniform(size=5000)
    ctx = _context("mean", x, (low, low + 1.0))
    exact = sum(Fraction(float(v)) for v in ctx.data) / len(ctx.data)  # the records as the mean sees them
    assert ctx.coordinates.offset == low
    assert Fraction(float(ctx.evaluate()[0])) - exact <= Fraction(2.0**-52)  # one final rounding, in [0, 1]


def test_vector_and_unbounded_statistics_far_from_0() -> None:
    """KS (no bounds, values in [0, 1]) and the logistic slope (public feature bounds, centred by them) on
    features far from 0: the same adversarial search."""
    rng = np.random.default_rng(3)
    low = 2.0**36
    reference = stats.uniform(loc=low, scale=1.0)
    worst, charged = _worst_change(
        lambda x: _context("ks", x, None, reference=reference), _adversarial(low, 500, rng), low
    )
    assert worst <= charged

    def table(x: np.ndarray) -> np.ndarray:
        labels = (np.arange(x.shape[0]) % 3 == 0).astype(float)
        return np.column_stack([x, labels])

    def logistic(x: np.ndarray) -> pp.RunContext[Any]:
        return _context("logistic-slope", table(x), None, feature_bounds=[[low, low + 1.0]])

    worst, charged = _worst_change(logistic, _adversarial(low, 400, rng), low)
    assert worst <= charged


@pytest.mark.parametrize("statistic", ["mean", "median", "quantile"])
def test_bounds_whose_doubles_are_coarser_than_a_record_are_refused_before_a_value_is_read(statistic: str) -> None:
    options = {"q": 0.8} if statistic == "quantile" else {}

    class Untouchable:
        shape = (1000,)
        dtype = np.dtype(float)  # a numeric array's public metadata: its length is known without a value

        def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
            raise AssertionError("the data were read")

    with pytest.raises(pf.ConfigError, match=r"^bounds: the bounds are so far from 0 .* subtract a public offset"):
        pf.confidence_interval(
            Untouchable(), statistic, method="cr-gs", budget=pf.GDP(1.0), bounds=(2.0**50, 2.0**50 + 1), **options
        )  # type: ignore[arg-type]
    # relative to a public offset, the same data and bounds work
    x = np.random.default_rng(4).uniform(size=1000)
    res = pf.confidence_interval(x, statistic, method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1, **options)
    assert 0.0 <= res.low < res.high <= 1.0


def _centre_release(low: float) -> Any:
    """One cr-gs centre per call on one of two neighbouring datasets at bounds (low, low + 1), n = 1000."""
    n = 1000
    base = np.where(np.arange(n) % 2 == 0, low, low + 1.0)
    neighbour = base.copy()
    neighbour[1] = low  # one record from the top bound to the bottom one: the mean moves by 1 / n
    pipe = Pipeline.build("mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(low, low + 1.0), B=20)

    def release(which: float, rng: np.random.Generator) -> float:
        data = neighbour if which else base
        return pipe.run(data, rng=rng).center - low  # subtracting the public offset is post-processing

    return release


@pytest.mark.parametrize("low", FAR)
def test_an_audit_of_the_released_centre_passes_at_the_claimed_budget(low: float) -> None:
    """1500 releases on each of two neighbours: threshold tests cannot beat the centre's own claim,
    ``mu / sqrt(2)``-GDP. (Before this change, at 2^50 they separated the two with no error: mu >= 5.6.)"""
    mu_center = 1.0 / np.sqrt(2.0)
    result = pf.audit.audit_mechanism(_centre_release(low), 0.0, 1.0, pf.GDP(mu_center), n_samples=1500, rng=27)
    assert result.passed, str(result)
    assert result.empirical_lower_bound <= mu_center


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_the_mean_rounds_in_place_on_its_own_copy_with_the_same_bits(dtype: Any) -> None:
    """``Mean.prepare`` rounds the clipped copy in place (at n = 1e8 each temporary was 800 MB, and three
    were alive at once): the user's array is untouched, the dtype is float64, and the values are those of
    the formula ``clip(rint(clip(x) / h) * h)`` bit for bit."""
    from privframe_std.statistics.mean import Mean, grid_step, magnitude

    rng = np.random.default_rng(3)
    bounds = pp.Bounds(-3.0, 1000.5)
    x = (rng.normal(size=10_000) * 400).astype(dtype)
    before = x.copy()
    prepared = Mean().prepare(x, bounds)
    step = grid_step(magnitude(bounds))
    expected = np.clip(np.rint(np.clip(x, -3.0, 1000.5) / step) * step, -3.0, 1000.5)
    assert np.array_equal(x, before)
    assert prepared.dtype == np.float64
    assert prepared is not x
    assert np.array_equal(prepared.view(np.int64), expected.astype(np.float64).view(np.int64))


def test_bounds_below_the_doubles_spacing_give_a_typed_answer_on_every_method() -> None:
    """Bounds of width 1e-300 (found by the data-dependent-raise audit): the U-statistic's exact row sums
    overflowed 2^p (cr-ss raised a PluginError) and PrivBoot divided by a noise sd that underflows to 0."""
    x = np.zeros(8)
    region = pf.confidence_interval(
        x, "u-statistic", method="cr-ss", budget=pf.GDP(1.0, delta=1e-6), bounds=(0, 1e-300), rng=1
    )
    assert region.low <= 0.0 <= region.high
    standard = pf.confidence_interval(
        x, "u-statistic", method="privboot", budget=pf.ApproxDP(1.0, 1e-6), bounds=(0, 1e-300), ci="standard", rng=1
    )
    assert standard.low <= 0.0 <= standard.high
    with pytest.raises(pf.ConfigError, match=r"^bounds: are so narrow .* use ci='standard'"):
        pf.confidence_interval(
            x, "u-statistic", method="privboot", budget=pf.ApproxDP(1.0, 1e-6), bounds=(0, 1e-300), rng=1
        )
