"""The mean's compiled resample sums give the doubles of the general per-block path, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import privframe as pf
from privframe_std.samplers._blocks import DATA_BLOCK
from privframe_std.statistics._decompose import decomposed_batch
from privframe_std.statistics.mean import Mean


@pytest.mark.parametrize(("n", "m", "rows"), [(DATA_BLOCK + 1, 3000, 30), (2 * DATA_BLOCK + 12345, 90_000, 4)])
@pytest.mark.parametrize("ordered", [True, False])
def test_the_compiled_sums_are_the_general_paths_doubles(n: int, m: int, rows: int, ordered: bool) -> None:
    statistic, rng = Mean(), np.random.default_rng(7)
    x = statistic.prepare(rng.lognormal(size=n) * 3.0 - 1.0, pf.plugin.Bounds(-1.0, 30.0))
    index = np.stack([rng.choice(n, m, replace=False) for _ in range(rows)])
    if ordered:
        index.sort(axis=1)
    general = decomposed_batch(statistic, x, index.copy())
    compiled = decomposed_batch(statistic, x, index.copy(), plain_sums=True)
    assert compiled.shape == general.shape == (rows, 1)
    assert np.array_equal(compiled, general)


def test_an_overflowing_sum_takes_the_general_path() -> None:
    statistic = Mean()
    x = np.full(DATA_BLOCK + 64, 1e308)
    index = np.tile(np.arange(DATA_BLOCK - 32, DATA_BLOCK + 32), (3, 1))
    assert np.array_equal(decomposed_batch(statistic, x, index, plain_sums=True), decomposed_batch(statistic, x, index))


def test_a_resample_of_exact_run_or_more_records_takes_the_compiled_pass_with_the_same_doubles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """m >= EXACT_RUN (n = 1e8 draws m = 5.4e6) is summed by the compiled pass, since no data block holds a run
    that long, with the general path's doubles; a row with a longer run in one block (with replacement) falls
    back to the general path, which sums it in exact pieces."""
    from privframe_std.statistics import _decompose, _sums

    statistic, rng = Mean(), np.random.default_rng(11)
    n = 5 * DATA_BLOCK
    x = statistic.prepare(rng.lognormal(size=n), pf.plugin.Bounds(0.0, 30.0))
    index = np.sort(rng.permutation(n)[: _decompose.EXACT_RUN + 1000])[np.newaxis, :]
    calls = []
    compiled_sums = _sums.block_row_sums
    monkeypatch.setattr(_sums, "block_row_sums", lambda *args: calls.append(1) or compiled_sums(*args))
    assert np.array_equal(
        decomposed_batch(statistic, x, index.copy(), plain_sums=True), decomposed_batch(statistic, x, index.copy())
    )
    assert calls == [1]
    long_run = np.sort(rng.integers(0, 1000, size=(1, 3000)), axis=1)  # 3000 draws in data block 0
    monkeypatch.setattr(_decompose, "EXACT_RUN", 2048)
    assert np.array_equal(
        decomposed_batch(statistic, x, long_run, plain_sums=True), decomposed_batch(statistic, x, long_run)
    )
    assert calls == [1]


@pytest.mark.parametrize("ordered", [True, False])
def test_one_data_block_with_numba_loaded_sums_a_stretch_at_a_time_with_numpys_doubles(
    ordered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With numba already loaded, one data block's rows are summed by the grouped compiled pass (any row
    order: sorted rows only read the data more locally), giving the gathered numpy sum's doubles."""
    import numba  # noqa: F401 (loaded, as the sampler loads it for large rows)

    from privframe_std.statistics import _decompose, _sums

    statistic, rng = Mean(), np.random.default_rng(12)
    n = 300_000
    x = statistic.prepare(rng.lognormal(size=n) * 3.0, pf.plugin.Bounds(0.0, 40.0))
    index = rng.integers(0, n, size=(9, 20_000))
    if ordered:
        index.sort(axis=1)
    calls = []
    grouped = _sums.grouped_row_sums
    monkeypatch.setattr(_sums, "grouped_row_sums", lambda *args: calls.append(1) or grouped(*args))
    monkeypatch.setattr(_decompose, "SUM_STRETCH", 4096)
    compiled = decomposed_batch(statistic, x, index, plain_sums=True)
    assert calls == [1]
    assert np.array_equal(compiled, decomposed_batch(statistic, x, index))


@pytest.mark.parametrize("n", [300_000, 2 * DATA_BLOCK + 999])  # one data block (numba loaded), three
@pytest.mark.parametrize("ordered", [True, False])
def test_vector_means_are_summed_column_by_column_with_the_gathered_rows_doubles(n: int, ordered: bool) -> None:
    """The prepared vector mean is column-major, and its resample sums read one coordinate's column at a time
    through the indices (no gathered rows): the doubles of numpy's gather and sum of the rows."""
    import numba  # noqa: F401 (loaded, as the sampler loads it for large rows)

    statistic, rng = Mean(), np.random.default_rng(13)
    x = statistic.prepare(rng.standard_t(3, size=(n, 3)) * 2.0, pf.plugin.L2Ball(6.0))
    assert x.flags.f_contiguous
    assert not x.flags.c_contiguous
    index = rng.integers(0, n, size=(7, 40_000))
    if ordered:
        index.sort(axis=1)
    compiled = decomposed_batch(statistic, x, index.copy(), plain_sums=True)
    gathered = decomposed_batch(statistic, np.ascontiguousarray(x), index.copy(), plain_sums=True)  # row-major
    general = decomposed_batch(statistic, x, index.copy())
    assert compiled.shape == (7, 3)
    assert np.array_equal(compiled, gathered)
    assert np.array_equal(compiled, general)
    by_hand = np.stack([x[row].sum(axis=0) for row in index]) / index.shape[1]
    np.testing.assert_allclose(compiled, by_hand, rtol=1e-12)
