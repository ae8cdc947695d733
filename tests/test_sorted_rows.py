"""Sorted resamples handed out by the sampler: ``wor`` marks each drawn record's rank and reads the data sorted
once (``pp.SortingSampler``), and the order statistics take ascending rows (``pp.SortedSmoothStatistic`` for
CR-SS, ``pp.SortedStatistic`` for the plain evaluation of CR-GS and the references), so no index row is
written, gathered or sorted. The rows, the statistics and the intervals are those of the index rows, bit for
bit."""

from __future__ import annotations

import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.resampling.ranked import RankedData, rankable
from privframe_std.samplers import _blocks, _kernels
from privframe_std.samplers.wor import WithoutReplacement
from privframe_std.statistics.order import Median, Quantile


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled paths whatever this process loaded before (a small first call takes numpy's)."""
    monkeypatch.setattr(_kernels, "_takes_numpy_path", lambda *args: False)


def _tied(n: int, seed: int) -> np.ndarray:
    """Heavy ties (a few dozen distinct values) beside continuous values."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.5, rng.integers(0, 30, n).astype(float), rng.normal(10.0, 5.0, n))


def test_ranked_data_sorts_once_and_ranks_every_record() -> None:
    x = _tied(5000, 1)
    ranked = RankedData(x)
    assert ranked._sorted is None  # nothing sorted until a sampler asks
    np.testing.assert_array_equal(ranked.values, np.sort(x))
    np.testing.assert_array_equal(ranked.values[ranked.rank_of], x)
    assert np.array_equal(np.sort(ranked.rank_of), np.arange(5000, dtype=np.uint32))


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (np.array([1.0, 0.0, 2.0]), True),
        (np.array([1.0, -0.0, 2.0]), False),  # a sort may put -0.0 and 0.0 in another order than a row's
        (np.array([[1.0, 2.0]]), False),
        (np.array([1, 2, 3]), False),
    ],
)
def test_rankable_only_where_sorted_rows_are_the_same_doubles(x: np.ndarray, expected: bool) -> None:
    assert rankable(x) is expected


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(("n", "m"), [(100, 2), (1000, 37), (5000, 2499), (5000, 2501), (5000, 4999), (70_000, 6000)])
def test_sorted_rows_are_the_rows_values_sorted(n: int, m: int) -> None:
    """Below and above half the population (the complement), on tied data: each row is the drawn rows'
    values sorted, and the generator ends where the index rows leave it."""
    x = _tied(n, n)
    design = WithoutReplacement(m=m, B=7).design(n)
    index_rng, sorted_rng = np.random.default_rng(2), np.random.default_rng(2)
    index = WithoutReplacement().draw_block(design, index_rng, 7)
    rows = WithoutReplacement().draw_block_sorted(design, sorted_rng, 7, RankedData(x))
    assert rows is not None
    np.testing.assert_array_equal(rows, np.sort(x[index], axis=1))
    assert index_rng.bit_generator.state == sorted_rng.bit_generator.state


@pytest.mark.usefixtures("compiled")
def test_sorted_rows_resume_where_the_words_run_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seven words a draw: every row stops and resumes many times, as in the index loop."""
    x = _tied(9000, 3)
    design = WithoutReplacement(m=4600, B=3).design(9000)
    index = WithoutReplacement().draw_block(design, np.random.default_rng(4), 3)
    monkeypatch.setattr(_kernels, "words_for_subsets", lambda counts, size: 7)
    rows = WithoutReplacement().draw_block_sorted(design, np.random.default_rng(4), 3, RankedData(x))
    assert rows is not None
    np.testing.assert_array_equal(rows, np.sort(x[index], axis=1))


def test_the_sampler_declines_beyond_one_data_block_without_sorting() -> None:
    n = _blocks.DATA_BLOCK + 10
    ranked = RankedData(np.zeros(n))
    design = WithoutReplacement(m=50, B=2).design(n)
    assert WithoutReplacement().draw_block_sorted(design, np.random.default_rng(1), 2, ranked) is None
    assert ranked._sorted is None


def test_the_sampler_declines_where_the_rows_would_take_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kernels, "_takes_numpy_path", lambda *args: True)
    ranked = RankedData(np.arange(100.0))
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    assert WithoutReplacement().draw_block_sorted(WithoutReplacement(m=10).design(100), rng, 3, ranked) is None
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("statistic", [Median(), Quantile(q=0.1), Quantile(q=0.97)])
@pytest.mark.parametrize(("k", "beta"), [(40, 0.5), (3000, 0.01), (3000, 0.3), (20_000, 0.002), (20_000, 0.1)])
def test_sorted_rows_give_the_index_rows_order_statistics_and_smooth_sensitivities(
    statistic: Quantile, k: int, beta: float
) -> None:
    """Both branches of the search (a full sort for short rows, windows for long ones), rows left open for the
    divide and conquer (small beta), ties: the same doubles from ascending rows as from index rows."""
    x = _tied(3 * k, k)
    bounds = pp.Bounds(-10.0, 40.0)
    x = bounds.clip(x)
    index = np.sort(np.random.default_rng(5).random((9, 3 * k)).argsort(axis=1)[:, :k], axis=1)
    values, log_smooth = statistic.evaluate_log_smooth_batch(x, index, beta, bounds)
    sorted_values, sorted_log_smooth = statistic.evaluate_log_smooth_sorted(np.sort(x[index], axis=1), beta, bounds)
    np.testing.assert_array_equal(sorted_values, values)
    np.testing.assert_array_equal(sorted_log_smooth, log_smooth)


def _cr_ss(
    x: np.ndarray, statistic: str, bounds: tuple[float, float] = (-10.0, 40.0), **options: object
) -> pp.IntervalResult:
    return pf.confidence_interval(
        x, statistic, method="cr-ss", budget=pf.GDP(1.0, delta=1e-6), bounds=bounds, B=200, rng=6, **options
    )


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("n", "m"), [(3000, None), (20_000, None), (20_000, 14_000)])
def test_cr_ss_intervals_are_those_of_the_index_rows(
    monkeypatch: pytest.MonkeyPatch, workers: int, n: int, m: int | None
) -> None:
    """With the sorted rows and with the sampler declining them (the index rows): the same interval, centre
    and noise, bit for bit, on tied data, a median and a tail quantile."""
    x = _tied(n, 7)
    options: dict[str, object] = {"workers": workers} | ({} if m is None else {"m": m})
    calls: list[int] = []
    sorted_rows = WithoutReplacement.draw_block_sorted

    def counted(*args: object) -> object:
        calls.append(1)
        return sorted_rows(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", counted)
    fast = [_cr_ss(x, "median", **options), _cr_ss(x, "quantile", q=0.9, **options)]
    assert calls
    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", lambda *args: None)
    slow = [_cr_ss(x, "median", **options), _cr_ss(x, "quantile", q=0.9, **options)]
    for a, b in zip(fast, slow, strict=True):
        assert (a.low, a.center, a.high) == (b.low, b.center, b.high)


@pytest.mark.usefixtures("compiled")
def test_a_negative_zero_takes_the_index_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Prepared data holding -0.0 (bounds from 0: no shift) are never ranked: the sampler is not asked for
    sorted rows. Without it the same call is."""
    x = np.abs(_tied(3000, 8))
    asked: list[int] = []
    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", lambda *args: asked.append(1))
    _cr_ss(x, "median", bounds=(0.0, 40.0))
    assert asked
    asked.clear()
    x[:10] = -0.0
    assert np.isfinite(_cr_ss(x, "median", bounds=(0.0, 40.0)).low)
    assert not asked


def test_the_protocols_see_the_capabilities() -> None:
    assert isinstance(WithoutReplacement(), pp.SortingSampler)
    assert isinstance(Median(), pp.SortedSmoothStatistic)
    assert isinstance(Quantile(q=0.3), pp.SortedStatistic)


@pytest.mark.parametrize("bad", [np.zeros((128, 5)), np.zeros((128, 375), dtype=np.float32)])
def test_sorted_rows_of_the_wrong_shape_are_a_plugin_error(monkeypatch: pytest.MonkeyPatch, bad: np.ndarray) -> None:
    """A sampler whose sorted rows do not match its design is refused by name, not evaluated."""
    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", lambda *args: bad)
    with pytest.raises(pf.PluginError, match="sorted rows"):
        _cr_ss(_tied(3000, 9), "median")


@pytest.mark.parametrize("statistic", [Median(), Quantile(q=0.1), Quantile(q=0.97)])
@pytest.mark.parametrize("k", [1, 2, 41, 3000])
def test_sorted_rows_give_the_index_rows_order_statistics(statistic: Quantile, k: int) -> None:
    x = pp.Bounds(-10.0, 40.0).clip(_tied(3 * k, k))
    index = np.sort(np.random.default_rng(5).random((9, 3 * k)).argsort(axis=1)[:, :k], axis=1)
    expected = statistic.evaluate_batch(x, index)
    np.testing.assert_array_equal(statistic.evaluate_sorted(np.sort(x[index], axis=1)), expected)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(("method", "budget"), [("cr-gs", pf.GDP(2.0)), ("subsampling", None)])
@pytest.mark.parametrize("m", [None, 2500])
def test_plain_evaluations_are_those_of_the_index_rows(
    monkeypatch: pytest.MonkeyPatch, method: str, budget: pf.GDP | None, m: int | None
) -> None:
    """CR-GS and the non-private subsampling reference on a median and a quantile: the same interval with
    the sorted rows as with the index rows, and the sorted rows were used."""
    x = _tied(4000, 10)
    options: dict[str, object] = {"budget": budget, "bounds": (-10.0, 40.0), "B": 300, "rng": 11, "workers": 2}
    if m is not None:
        options["m"] = m
    asked: list[int] = []
    sorted_rows = WithoutReplacement.draw_block_sorted

    def counted(*args: object) -> object:
        asked.append(1)
        return sorted_rows(*args)  # type: ignore[arg-type]

    def both() -> list[pp.IntervalResult]:
        return [
            pf.confidence_interval(x, "median", method=method, **options),  # type: ignore[arg-type]
            pf.confidence_interval(x, "quantile", q=0.25, method=method, **options),  # type: ignore[arg-type]
        ]

    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", counted)
    fast = both()
    assert asked
    monkeypatch.setattr(WithoutReplacement, "draw_block_sorted", lambda *args: None)
    for a, b in zip(fast, both(), strict=True):
        assert (a.low, a.center, a.high) == (b.low, b.center, b.high)
