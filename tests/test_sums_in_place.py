"""Resample sums taken where the rows stand: the ``wor`` sampler sums the data over each row's bitmap
(``pp.SummingSampler``) and the mean turns the sums into its partials (``pp.PlainSumStatistic``), so no
index row is written. The sums, the engine's values and the intervals are those of the rows, bit for bit."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.resampling import blocks as engine
from privframe_std.samplers import _blocks, _kernels


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled paths whatever this process loaded before (a small first call takes numpy's)."""
    monkeypatch.setattr(_kernels, "_takes_numpy_path", lambda *args: False)


def _grid_values(n: int, seed: int) -> np.ndarray:
    """Doubles on a grid of 2^-20 in [0, 20): any order of addition gives their exact sum."""
    return np.random.default_rng(seed).integers(0, 20 * 2**20, n) / 2.0**20


@pytest.mark.parametrize(("size", "start"), [(1000, 0), (5000, 3000), (70_000, 1)])
@pytest.mark.usefixtures("compiled")
def test_subset_sums_are_the_sums_of_the_subsets_rows(size: int, start: int) -> None:
    """Rows below and above half the block (the complement), offset blocks: the sums of the rows
    ``distinct_subsets`` writes, from the same words, and the generator ends where it would."""
    x = _grid_values(start + size, 1)
    counts = np.array([1, size // 3, size // 2, size // 2 + 1, size - 1, 7], dtype=np.int64)
    complement = 2 * counts > size
    k = np.where(complement, size - counts, counts)
    rows_rng, sums_rng = np.random.default_rng(2), np.random.default_rng(2)
    rows = _kernels.distinct_subsets(rows_rng, k, complement, start, start + size)
    sums = _kernels.distinct_subset_sums(sums_rng, k, complement, start, start + size, x)
    assert sums is not None
    ends = np.cumsum(counts)
    expected = [x[rows[end - count : end]].sum() for end, count in zip(ends, counts, strict=True)]
    np.testing.assert_array_equal(sums, expected)
    assert rows_rng.bit_generator.state == sums_rng.bit_generator.state


@pytest.mark.usefixtures("compiled")
def test_row_sums_follow_the_data_blocks() -> None:
    """Above one data block (2^20 records) the rows' sums come per data block, in block order, from the same
    allocation and streams as the rows."""
    n, m, rows = _blocks.DATA_BLOCK + 5000, 3000, 4
    x = _grid_values(n, 3)
    index = _blocks.distinct_rows(np.random.default_rng(4), rows, n, m)
    summed = _blocks.row_sums(np.random.default_rng(4), rows, n, m, False, x)
    assert summed is not None
    sums, most = summed
    assert most is None
    assert len(sums) == 2
    first = np.where(index < _blocks.DATA_BLOCK, x[index], 0.0).sum(axis=1)
    np.testing.assert_array_equal(sums[0], first)
    np.testing.assert_array_equal(sums[1], x[index].sum(axis=1) - first)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("words", [None, 7])
def test_subset_sums_resume_where_the_words_run_out(monkeypatch: pytest.MonkeyPatch, words: int | None) -> None:
    """Seven words a draw: every row stops and resumes many times, in both loops alike."""
    if words is not None:
        monkeypatch.setattr(_kernels, "words_for_subsets", lambda counts, size: words)
    x = _grid_values(9000, 9)
    counts = np.array([40, 4000, 4500, 6000], dtype=np.int64)
    complement = 2 * counts > 9000
    k = np.where(complement, 9000 - counts, counts)
    rows = _kernels.distinct_subsets(np.random.default_rng(10), k, complement, 0, 9000)
    sums = _kernels.distinct_subset_sums(np.random.default_rng(10), k, complement, 0, 9000, x)
    ends = np.cumsum(counts)
    np.testing.assert_array_equal(sums, [x[rows[e - c : e]].sum() for e, c in zip(ends, counts, strict=True)])


@pytest.mark.parametrize(("size", "start", "words"), [(3000, 0, None), (200_000, 17, None), (5000, 100, 7)])
def test_iid_sums_are_the_sums_of_the_iid_rows(
    monkeypatch: pytest.MonkeyPatch, size: int, start: int, words: int | None
) -> None:
    """``wr``'s rows: one range, a range split into sub-blocks (a multinomial draw first), and seven words a
    draw (rows resumed mid-way): the same sums, the same largest multiplicities, the generator where it would
    be."""
    if words is not None:
        monkeypatch.setattr(_kernels, "words_for_iid", lambda counts, span: words)
    x = _grid_values(start + size, 11)
    counts = np.array([0, 1, size // 7, size, 3 * size], dtype=np.int64)
    rows_rng, sums_rng = np.random.default_rng(12), np.random.default_rng(12)
    values, most = _kernels.iid_values(rows_rng, counts, start, start + size)
    sums, most_too = _kernels.iid_value_sums(sums_rng, counts, start, start + size, x)
    ends = np.cumsum(counts)
    np.testing.assert_array_equal(sums, [x[values[e - c : e]].sum() for e, c in zip(ends, counts, strict=True)])
    np.testing.assert_array_equal(most_too, most)
    assert rows_rng.bit_generator.state == sums_rng.bit_generator.state


def test_iid_row_sums_follow_the_data_blocks() -> None:
    n, m, rows = _blocks.DATA_BLOCK + 5000, 3000, 4
    x = _grid_values(n, 13)
    index, most = _blocks.iid_rows_and_multiplicity(np.random.default_rng(14), rows, n, m)
    summed = _blocks.row_sums(np.random.default_rng(14), rows, n, m, True, x)
    assert summed is not None
    sums, most_too = summed
    first = np.where(index < _blocks.DATA_BLOCK, x[index], 0.0).sum(axis=1)
    np.testing.assert_array_equal(sums[0], first)
    np.testing.assert_array_equal(sums[1], x[index].sum(axis=1) - first)
    np.testing.assert_array_equal(most_too, most)


def test_wr_declines_a_block_with_a_row_over_its_cap() -> None:
    """A row over kappa is rejected or redrawn by ``draw_block``; the sums decline, so the engine draws the rows
    and does exactly that."""
    sampler = pf.registry.create("sampler", "wr")
    capped = pp.Design(n=1000, m=500, B=10, kappa=1, replace=True)
    assert sampler.draw_block_sums(capped, np.random.default_rng(15), 10, np.ones(1000)) is None
    loose = pp.Design(n=1000, m=500, B=10, kappa=500, replace=True)
    assert sampler.draw_block_sums(loose, np.random.default_rng(15), 10, np.ones(1000)) is not None


def test_a_small_call_without_numba_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``distinct_subsets`` would take its numpy path the sums decline, touching nothing."""
    monkeypatch.setattr(_kernels, "_takes_numpy_path", lambda *args: True)
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    k = np.array([3, 4], dtype=np.int64)
    assert _kernels.distinct_subset_sums(rng, k, np.zeros(2, dtype=bool), 0, 100, np.ones(100)) is None
    assert rng.bit_generator.state == before


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"rows": 0, "sums": 0}
    block, block_sums = engine.Resamples.block, engine.Resamples.block_sums

    def rows(self: engine.Resamples, i: int) -> Any:
        calls["rows"] += 1
        return block(self, i)

    def sums(self: engine.Resamples, i: int, x: Any) -> Any:
        out = block_sums(self, i, x)
        calls["sums"] += out is not None
        return out

    monkeypatch.setattr(engine.Resamples, "block", rows)
    monkeypatch.setattr(engine.Resamples, "block_sums", sums)
    return calls


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("n", [5000, 60_000])
@pytest.mark.parametrize("workers", [1, 2])
def test_intervals_are_those_of_the_rows(monkeypatch: pytest.MonkeyPatch, n: int, workers: int) -> None:
    """cr-gs, dette-graw on ``wor`` and on its own ``wr`` on the mean: every block summed in place, and the
    intervals equal the ones from the index rows (the sampler's capability switched off)."""
    x = np.random.default_rng(n).lognormal(0, 1, n).clip(0, 20)
    kwargs: dict[str, Any] = {"budget": pf.GDP(1.0), "bounds": (0, 20), "rng": 6, "workers": workers, "B": 300}
    methods: list[tuple[str, dict[str, Any]]] = [("cr-gs", {}), ("dette-graw", {"sampler": "wor"}), ("dette-graw", {})]
    calls = _counting(monkeypatch)
    summed = [pf.confidence_interval(x, "mean", method=name, **kwargs, **extra) for name, extra in methods]
    assert calls["sums"] == 3 * 3  # three blocks of at most 128 rows each, for each (dette-graw's own: wr)
    assert calls["rows"] == 0
    monkeypatch.setattr(engine.Resamples, "block_sums", lambda self, i, x: None)
    drawn = [pf.confidence_interval(x, "mean", method=name, **kwargs, **extra) for name, extra in methods]
    for a, b in zip(summed, drawn, strict=True):
        assert (a.low, a.high, a.center) == (b.low, b.high, b.center)


@attrs.frozen
class _Unbounded:
    """A plain-sum mean whose partials overflow: the engine must take the rows instead."""

    name: ClassVar[str] = "unbounded"

    def evaluate_batch(self, x: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.asarray(x[index].mean(axis=1))[:, np.newaxis]

    def sensitivity(self, k: int, bounds: Any) -> float:
        return 1.0 / k

    def partial_batch(self, values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        raise AssertionError("not used by evaluate_batch")

    def combine(self, partials: Any, k: int) -> np.ndarray:
        return np.asarray(partials[0]) / k

    def sum_partials(self, sums: np.ndarray) -> np.ndarray:
        return np.full((sums.shape[0], 1), np.inf)


@pytest.mark.usefixtures("compiled")
def test_a_partial_that_is_not_finite_takes_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    statistic = _Unbounded()
    assert isinstance(statistic, pp.PlainSumStatistic)
    assert isinstance(statistic, pp.DecomposableStatistic)
    x = np.random.default_rng(7).uniform(size=4000)
    sampler = pf.registry.create("sampler", "wor", B=200)
    assert isinstance(sampler, pp.SummingSampler)
    ctx = pp.RunContext(
        method="probe", statistic=statistic, data=x, bounds=None, confidence=0.9, parts={"sampler": sampler}
    )
    calls = _counting(monkeypatch)
    resamples = ctx.resample(np.random.default_rng(8))
    values = ctx.evaluate_resamples(resamples, 1)
    assert calls["sums"] > 0
    assert calls["rows"] == calls["sums"]  # every block was summed, refused, and drawn as rows
    expected = np.concatenate(
        [statistic.evaluate_batch(x, resamples.block(i)) for i in range(len(resamples.block_seeds))]
    )
    np.testing.assert_array_equal(values, expected)
