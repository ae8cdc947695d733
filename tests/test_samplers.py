"""Samplers (algorithms.md section 2): WOR subsampling and the multiplicity-constrained WR sampler.

Every draw uses a fixed seed, so each statistical check is deterministic; the thresholds are chosen so that a
correct sampler would fail them with small probability over seeds (stated next to each check).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

import privframe as pf
import privframe.plugin as pp
from privframe.resampling.blocks import BLOCK_ROWS, RunOptions, draw
from privframe_std.samplers import _blocks, _kernels, kappa_star

# ---------------------------------------------------------------------------------------------------------
# kappa*


@pytest.mark.parametrize(
    ("n", "B", "expected"),
    [(2000, 500, 7), (2000, 1000, 7), (10000, 500, 7), (10000, 1000, 7), (50000, 1000, 8)],
)
def test_kappa_star_reference(n: int, B: int, expected: int) -> None:
    m = math.ceil(n / math.log(n))
    assert kappa_star(n, m, B, 1 / n) == expected


def test_kappa_star_formula_and_cap() -> None:
    for n, m, B, rho in [(200, 23, 64, 0.5), (1000, 50, 10, 0.01), (5000, 700, 1000, 1e-4)]:
        L = math.log(B * n / rho)
        w = special.lambertw(n / (m * math.e) * L, 0).real
        assert kappa_star(n, m, B, rho) == min(m, math.ceil(L / w) - 1)
    # capped at m: tiny n makes the tail bound useless
    assert kappa_star(10, 3, 1000, 1e-6) == 3
    for rho in (0.0, 1.0, 2.0):
        with pytest.raises(pf.ConfigError, match=r"^rho:"):
            kappa_star(100, 10, 10, rho)


def test_wr_default_rho_is_one_over_n() -> None:
    res = draw(pf.registry.create("sampler", "wr", {"m": "n/log(n)", "B": 500}), 2000, np.random.default_rng(0))
    assert res.m == math.ceil(2000 / math.log(2000))
    assert res.kappa == kappa_star(2000, res.m, 500, 1 / 2000) == 7


# ---------------------------------------------------------------------------------------------------------
# WOR


def wor(m: int | str, B: int, **options: object) -> pp.Sampler:
    return pf.registry.create("sampler", "wor", {"m": m, "B": B, **options})  # type: ignore[no-any-return]


def wr(m: int | str, B: int, **options: object) -> pp.Sampler:
    return pf.registry.create("sampler", "wr", {"m": m, "B": B, **options})  # type: ignore[no-any-return]


@pytest.fixture(params=[None, 7], ids=["one-data-block", "data-blocks-of-7"])
def data_block(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int | None:
    """Run a test as is, and again with public data blocks of 7 rows (many blocks, a short last one)."""
    if request.param is not None:
        monkeypatch.setattr(_blocks, "DATA_BLOCK", request.param)
    value: int | None = request.param
    return value


@pytest.mark.parametrize(("n", "m"), [(1000, 50), (120, 50), (120, 100)])  # a tenth, under half, over half
def test_wor_rows_are_sorted_distinct_subsets(n: int, m: int, data_block: int | None) -> None:
    res = draw(wor(m, 100), n, np.random.default_rng(1))
    assert isinstance(res, pp.Resamples)
    assert (res.n, res.m, res.B, res.kappa, res.replace) == (n, m, 100, 1, False)
    mat = res.matrix()
    assert mat.shape == (100, m)
    assert mat.dtype == np.intp
    assert mat.min() >= 0
    assert mat.max() < n
    assert np.all(np.diff(mat, axis=1) > 0)  # sorted and distinct


def test_wor_size_rule_resolves() -> None:
    res = draw(wor("n^(2/3)", 10), 1000, np.random.default_rng(0))
    assert res.m == 100
    assert res.matrix().shape == (10, 100)


def subset_counts(mat: np.ndarray, n: int, m: int) -> np.ndarray:
    """Counts of each of the C(n, m) subsets (as sets: row order is ignored), including those never drawn."""
    code = {combo: i for i, combo in enumerate(itertools.combinations(range(n), m))}
    counts = np.zeros(len(code), dtype=np.int64)
    rows, row_counts = np.unique(np.sort(mat, axis=1), axis=0, return_counts=True)
    for row, c in zip(rows, row_counts, strict=True):
        counts[code[tuple(int(v) for v in row)]] += c
    return counts


@pytest.mark.parametrize(
    ("n", "m", "B", "seed"),
    [
        (6, 3, 20_000, 2),  # half of n: 20 subsets, ~1000 expected each
        (6, 4, 15_000, 5),  # over half: the complement of a uniform 2-subset; 15 subsets, 1000 each
        (12, 3, 22_000, 3),  # a quarter: 220 subsets, 100 expected each
    ],
)
def test_wor_subsets_are_uniform(n: int, m: int, B: int, seed: int, data_block: int | None) -> None:
    # With data blocks of 7 rows, n = 6 is one block and n = 12 two (7 + 5): the hypergeometric allocation,
    # per-block streams and both per-block paths (subset and complement) are exercised.
    mat = draw(wor(m, B), n, np.random.default_rng(seed)).matrix()
    counts = subset_counts(mat, n, m)
    assert counts.sum() == B
    # Rows are i.i.d., so subset counts are multinomial and Pearson's chi-square applies (>= 100 expected per
    # cell). A correct sampler fails p > 0.001 for 1 seed in 1000. Each cell count has a Monte Carlo SE of
    # sqrt(expected): ~3% of its mean for n = 6 and ~10% for n = 12, so a bias of that order on several
    # subsets is detected (e.g. redrawing a duplicate as its neighbour instead of uniformly fails here).
    assert stats.chisquare(counts).pvalue > 0.001


def test_wor_inclusion_frequencies_are_uniform(data_block: int | None) -> None:
    n, m, B = 40, 5, 20_000  # with data blocks of 7: six blocks, counts of 0 to 5 in each
    mat = draw(wor(m, B), n, np.random.default_rng(4)).matrix()
    counts = np.bincount(mat.ravel(), minlength=n)
    assert counts.sum() == m * B
    # Each index is included with probability m/n per row. Within a row inclusions are negatively correlated
    # (sampling without replacement), so the Pearson statistic is about (1 - m/n)/(1 - 1/n) = 0.9 times a
    # chi-square(n - 1): using the chi-square p-value is conservative. Threshold as above (1 seed in 1000).
    assert stats.chisquare(counts).pvalue > 0.001
    # Same check on the positions: the smallest element of a uniform subset follows a known law.
    first = np.bincount(mat.min(axis=1), minlength=n)
    expected = np.array([math.comb(n - 1 - j, m - 1) for j in range(n)], dtype=float) / math.comb(n, m) * B
    keep = expected >= 5  # chi-square needs >= 5 expected per cell; pool the tail
    observed = np.append(first[keep], first[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 0.001


def test_wor_pair_inclusion_is_uniform(data_block: int | None) -> None:
    # Pairs {i, j} are included together with probability m (m - 1) / (n (n - 1)), whether or not i and j
    # share a data block (with blocks of 7, most pairs straddle two blocks).
    n, m, B = 16, 4, 24_000
    mat = draw(wor(m, B), n, np.random.default_rng(6)).matrix()
    pair = np.zeros((n, n), dtype=np.int64)
    for a, b in itertools.combinations(range(m), 2):
        np.add.at(pair, (mat[:, a], mat[:, b]), 1)  # rows are sorted, so a < b fills the upper triangle
    counts = pair[np.triu_indices(n, 1)]
    assert counts.sum() == B * math.comb(m, 2)
    # Each of the 120 pairs expects 1200. The pair counts of a row are dependent (6 pairs per row), so this is
    # a check of the means, not a chi-square: 4 SE (SE <= sqrt(1200) ~ 35) per pair, a false failure ~1e-2
    # over all 120 pairs for a correct sampler at most; a bias of 15% in any pair fails.
    expected = B * m * (m - 1) / (n * (n - 1))
    assert np.all(np.abs(counts - expected) <= 4 * math.sqrt(expected))


@pytest.mark.parametrize("block", [100, 2000])  # eleven data blocks, and one
def test_data_blocks_can_be_drawn_separately(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    # A holder of data rows [a, b) draws only the data blocks there, from the allocation and the block seeds,
    # and gets exactly the indices the in-memory draw puts there.
    monkeypatch.setattr(_blocks, "DATA_BLOCK", block)
    n, m, rows = 1050, 70, 5
    seed = np.random.SeedSequence(12, spawn_key=(3,))
    for replace in (False, True):
        draw = _blocks.iid_rows if replace else _blocks.distinct_rows
        full = draw(np.random.default_rng(seed), rows, n, m)
        counts = _blocks.allocate(np.random.default_rng(seed), rows, n, m, replace)
        assert counts.shape == (rows, len(_blocks.data_blocks(n)))
        for j, (start, stop) in enumerate(_blocks.data_blocks(n)):
            mine = [row[(row >= start) & (row < stop)] for row in full]
            assert np.array_equal(np.concatenate(mine), _blocks.draw_data_block(seed, j, counts[:, j], n, replace))


def test_rows_are_cut_at_data_blocks_and_put_in_block_order_only_when_they_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Data blocks of 7 over n = 30 (the last of 2 records). Rows in block order (some sorted, the rest in
    # no order within a block, some blocks empty) come back as they are, with cuts equal to the counts of
    # indices below each block's start; rows out of block order come back stably sorted by block.
    monkeypatch.setattr(_blocks, "DATA_BLOCK", 7)
    n, m = 30, 9
    rng = np.random.default_rng(4)
    index = rng.integers(0, n, size=(40, m))
    index[:5] = np.sort(index[:5], axis=1)
    in_block_order = np.take_along_axis(index, np.argsort(index // 7, axis=1, kind="stable"), axis=1)
    starts = range(0, n, 7)
    expected = [[int(np.count_nonzero(row < start)) for start in starts] + [m] for row in in_block_order]
    for rows in (in_block_order, index):  # the second: the random rows that were not sorted are out of order
        ordered, cuts = _blocks.cut_at_data_blocks(rows, n)
        assert np.array_equal(ordered, in_block_order)
        assert np.array_equal(cuts, expected)
    kept, cuts = _blocks.cut_at_data_blocks(in_block_order, n)
    assert kept is in_block_order  # no copy when already in block order
    assert np.array_equal(_blocks.cut_at_data_blocks(np.array([[8, 9, 29]]), n)[1], [[0, 0, 2, 2, 2, 3]])
    ordered, cuts = _blocks.cut_at_data_blocks(np.array([[0, 8, 3], [29, 28, 1]]), n)  # back to an earlier block
    assert np.array_equal(ordered, [[0, 3, 8], [1, 29, 28]])
    assert np.array_equal(cuts, [[0, 2, 3, 3, 3, 3], [0, 1, 1, 1, 1, 3]])
    # the compiled pass reports rows out of block order (the third row only)
    from privframe_std.samplers import _jit

    assert not _jit.block_cuts(np.array([[1, 2], [29, 28], [14, 13]]), 7, np.empty((3, 6), dtype=np.int64))


def _oracle_rows(words: np.ndarray, size: int, done: Callable[[int, list[int]], bool], rows: int) -> list[list[int]]:
    """The compiled loops' use of randomness, in Python integers: each 64-bit word gives its low then its
    high 32 bits x; x yields ``(x * size) >> 32`` unless ``(x * size) mod 2^32 < 2^32 mod size`` (rejected);
    row r takes values until ``done(r, values)``, and the next row starts on a fresh word."""
    stream = iter(words.tolist())
    result = []
    for r in range(rows):
        values: list[int] = []
        while not done(r, values):
            word = next(stream)
            for x in (word & 0xFFFFFFFF, word >> 32):
                if done(r, values):
                    break
                product = x * size
                if product % 2**32 >= 2**32 % size:
                    values.append(product >> 32)
        result.append(values)
    return result


def _words_in_pieces(rng: np.random.Generator, total: int) -> list[np.ndarray]:
    """``total`` random words, some halves zero (rejected for every size), cut into ragged pieces."""
    words = rng.integers(0, 2**64 - 1, size=total, dtype=np.uint64, endpoint=True)
    words[rng.random(total) < 0.05] &= np.uint64(0xFFFFFFFF00000000)
    words[rng.random(total) < 0.05] &= np.uint64(0x00000000FFFFFFFF)
    cuts = np.sort(rng.choice(np.arange(1, total), size=7, replace=False))
    return np.split(words, cuts)


@pytest.mark.parametrize(("size", "count"), [(1000, 300), (64, 64), (3, 2000), (2, 700), (70, 1), (1, 600)])
def test_iid_kernel_matches_a_python_oracle(size: int, count: int) -> None:
    # The compiled wr loop against the oracle: the same values in the order drawn and the same largest
    # multiplicity (counted by numpy), with words fed in ragged pieces (the loop resumes mid-row), rejected
    # halves, a shorter and an empty row, and multiplicities past the 8-bit counters' 255 (exact recount).
    from privframe_std.samplers import _jit

    rng = np.random.default_rng(size + count)
    counts = np.full(9, count, dtype=np.int64)
    counts[1], counts[4] = count // 2, 0
    offsets = np.cumsum(counts) - counts
    out = np.full(int(counts.sum()), -1, dtype=np.intp)
    most = np.full(9, -1, dtype=np.int64)
    counter = np.zeros(size, np.uint8)
    progress = np.zeros(3, dtype=np.int64)
    pieces = _words_in_pieces(rng, int(0.6 * counts.sum()) + 50)  # a tenth of the halves are rejected
    bases, sizes = np.full(9, 100, dtype=np.int64), np.full(9, size, dtype=np.int64)
    thresholds = np.full(9, _kernels.lemire_threshold(size), dtype=np.int64)
    for piece in pieces:
        if progress[0] < 9:
            used = _jit.iid_rows(piece, counts, bases, sizes, thresholds, out, offsets, counter, most, progress)
            assert used == piece.size or progress[0] == 9
    assert progress[0] == 9
    assert not counter.any()
    expected = _oracle_rows(np.concatenate(pieces), size, lambda r, values: len(values) == counts[r], 9)
    for r, values in enumerate(expected):
        assert np.array_equal(out[offsets[r] : offsets[r] + counts[r]], np.array(values, dtype=np.intp) + 100)
        assert most[r] == (np.unique(values, return_counts=True)[1].max() if counts[r] else 0)
    assert (most >= 255).any() == (count >= 600)


def test_compiled_loops_cache_outside_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    # numba's default cache next to the source leaves files in an installed package that survive pip
    # uninstall and shadow a later editable install (CI's README sequence hit exactly that).
    from numba.core import config

    from privframe_std import _compiled
    from privframe_std.samplers import _jit

    package = Path(_jit.__file__).parent
    for loop in (_jit.distinct_prefix_rows, _jit.iid_rows, _jit.emit_bits):
        assert not Path(loop._cache._cache_path).is_relative_to(package)
    monkeypatch.setattr(config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    twice = _compiled.compiled(lambda v: 2 * v)
    assert twice(21) == 42
    assert Path(twice._cache._cache_path).is_relative_to(tmp_path / "privframe" / "numba")
    assert config.CACHE_DIR == ""  # restored: other numba code keeps its own setting


@pytest.mark.parametrize("complement", [False, True])
def test_distinct_prefix_kernel_keeps_the_first_distinct_values(complement: bool) -> None:
    # The compiled wor loop against the oracle: each row keeps the first k distinct values it takes (or their
    # complement in the block), sorted, with words fed in ragged pieces and rejected halves.
    from privframe_std.samplers import _jit

    size, rows = 200, 40
    rng = np.random.default_rng(4)
    k = rng.integers(0, 100, size=rows)
    flags = np.full(rows, complement)
    lengths = np.where(flags, size - k, k)
    offsets = np.cumsum(lengths) - lengths
    out = np.full(int(lengths.sum()), -1, dtype=np.intp)
    bitmap = np.zeros((size + 63) >> 6, np.uint64)
    progress = np.zeros(2, dtype=np.int64)
    pieces = _words_in_pieces(rng, _kernels.words_for_subsets(k, size) + 100)
    for piece in pieces:
        if progress[0] < rows:
            _jit.distinct_prefix_rows(
                piece, k, flags, 7, size, out, offsets, bitmap, _kernels.lemire_threshold(size), progress
            )
    assert progress[0] == rows
    assert not bitmap.any()
    taken = _oracle_rows(np.concatenate(pieces), size, lambda r, values: len(set(values)) == k[r], rows)
    for r, values in enumerate(taken):
        first = set(values)
        chosen = sorted(set(range(size)) - first) if complement else sorted(first)
        assert np.array_equal(out[offsets[r] : offsets[r] + lengths[r]], np.array(chosen, dtype=np.intp) + 7)


@pytest.mark.parametrize(("size", "k"), [(50_000, 4622), (1000, 500), (1000, 1), (2**20, 60_000)])
def test_word_estimates_rarely_run_out(size: int, k: int) -> None:
    # The number of words drawn up front covers a block of 64 rows most of the time (a shortfall costs a
    # second call, not correctness): the mean words used is below the estimate by about two standard deviations.
    from privframe_std.samplers import _jit

    rows = 64
    ks = np.full(rows, k, dtype=np.int64)
    estimate = _kernels.words_for_subsets(ks, size)
    used = []
    for seed in range(20):
        progress = np.zeros(2, dtype=np.int64)
        words = _kernels.random_words(np.random.default_rng(seed), 2 * estimate)
        out = np.empty(rows * k, dtype=np.intp)
        used.append(
            _jit.distinct_prefix_rows(
                words,
                ks,
                np.zeros(rows, bool),
                0,
                size,
                out,
                np.arange(rows) * k,
                np.zeros((size + 63) >> 6, np.uint64),
                _kernels.lemire_threshold(size),
                progress,
            )
        )
        assert progress[0] == rows
    assert np.mean(used) < estimate < 1.05 * np.mean(used) + 40
    iid = _kernels.words_for_iid(ks, size)
    assert rows * ((k + 1) // 2) < iid < rows * ((k + 1) // 2) + 10


def test_wor_needs_fewer_than_a_billion_records_across_blocks() -> None:
    with pytest.raises(pf.ConfigError, match="n < 1000000000"):
        _blocks.allocate(np.random.default_rng(0), 1, 10**9, 10, replace=False)


# ---------------------------------------------------------------------------------------------------------
# WR with the multiplicity constraint


def test_wr_rows_respect_range_and_kappa() -> None:
    n = 2000
    res = draw(wr("n/log(n)", 200), n, np.random.default_rng(5))
    assert res.replace is True
    mat = res.matrix()
    assert mat.shape == (200, res.m)
    assert mat.min() >= 0
    assert mat.max() < n
    for row in mat:
        assert np.bincount(row, minlength=n).max() <= res.kappa
    # it really samples with replacement: with m = 264 of n = 2000, almost every row has a repeat
    # (P(no repeat) = prod(1 - i/n) ~ e^{-17}).
    assert sum(len(np.unique(row)) < res.m for row in mat) >= 190


@pytest.mark.parametrize("sub_block", [None, 3], ids=["whole-blocks", "sub-blocks-of-3"])
def test_wr_rows_are_multisets_with_the_iid_law(
    data_block: int | None, sub_block: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # n = 4, m = 3, kappa* = 3 = m (never rejects): a row is a multiset of 3 i.i.d. uniform draws from 4
    # values, so multiset {a, b, c} has probability (its number of orderings) / 64. 20 multisets, >= 312
    # expected each; Pearson chi-square with p > 0.001 fails for 1 seed in 1000. With data blocks of 7
    # there is one block at n = 4 and two at n = 12 (whose rows come in block order); sub-blocks of 3 split
    # every block again (multinomial counts, then i.i.d. values in each), and rows come in sub-block order.
    if sub_block is not None:
        monkeypatch.setattr(_kernels, "SUB_BLOCK", sub_block)
    for n, B, seed in [(4, 20_000, 7), (12, 60_000, 8)]:
        res = draw(wr(3, B, rho=0.5), n, np.random.default_rng(seed))
        mat = res.matrix()
        if data_block is not None or sub_block is not None:
            start = mat // data_block * data_block if data_block is not None else np.zeros_like(mat)
            sub = (mat - start) // sub_block if sub_block is not None else np.zeros_like(mat)
            assert np.all(np.diff(start * n + sub, axis=1) >= 0)  # data block order, then sub-block order
        cells = list(itertools.combinations_with_replacement(range(n), 3))
        code = {cell: i for i, cell in enumerate(cells)}
        counts = np.bincount([code[tuple(sorted(int(v) for v in row))] for row in mat], minlength=len(cells))
        rejected = [cell for cell in cells if max(cell.count(v) for v in cell) > res.kappa]
        probability = np.array(
            [
                0.0
                if cell in rejected
                else math.factorial(3) / math.prod(math.factorial(cell.count(v)) for v in set(cell))
                for cell in cells
            ]
        )
        expected = probability / probability.sum() * B
        keep = expected > 0
        assert counts[~keep].sum() == 0
        # n = 12: 364 multisets (220 distinct triples at ~325 expected, pairs ~163, triples ~54 unless capped)
        assert stats.chisquare(counts[keep], expected[keep]).pvalue > 0.001


def exceed_probability(n: int, m: int, k: int) -> float:
    """Exact P(some index appears more than k times among m i.i.d. uniform draws from range(n)).

    P(all counts <= k) = m! / n^m [x^m] (sum_{j<=k} x^j / j!)^n, computed with x scaled by 1/n.
    """
    base = np.array([math.exp(-math.lgamma(j + 1) - j * math.log(n)) for j in range(k + 1)])
    poly = np.zeros(m + 1)
    poly[: k + 1] = base
    result = np.zeros(m + 1)
    result[0] = 1.0
    e = n
    while e:
        if e & 1:
            result = np.convolve(result, poly)[: m + 1]
        poly = np.convolve(poly, poly)[: m + 1]
        e >>= 1
    return float(1.0 - result[m] * math.exp(math.lgamma(m + 1)))


def test_exceed_probability_helper() -> None:
    # n = 3, m = 2: P(both draws equal) = 1/3
    assert exceed_probability(3, 2, 1) == pytest.approx(1 / 3, rel=1e-12)
    # n = 2, m = 3, k = 1: always some index twice
    assert exceed_probability(2, 3, 1) == pytest.approx(1.0, rel=1e-12)
    assert exceed_probability(10, 3, 3) == pytest.approx(0.0, abs=1e-12)


# n, m, B, rho chosen (by exact computation) so that rejections are common: kappa* = 3 and the rejection
# probability 1 - (1 - q)^B is about 0.064 (q the per-row exceed probability), well below rho = 0.5.
N_REJ, M_REJ, B_REJ, RHO_REJ = 200, 23, 64, 0.5
DRAWS = 2000


def test_wr_rejection_rate_is_below_rho_and_exact() -> None:
    sampler = wr(M_REJ, B_REJ, rho=RHO_REJ, on_reject="raise")
    kappa = kappa_star(N_REJ, M_REJ, B_REJ, RHO_REJ)
    assert kappa == 3
    messages: list[str] = []
    for seed in range(DRAWS):
        res = draw(sampler, N_REJ, np.random.default_rng(seed))
        assert res.kappa == kappa
        try:
            mat = res.matrix()
        except pf.SamplerRejected as exc:
            messages.append(str(exc))
            continue
        # accepted draws obey the cap (would fail for ~6% of draws if the check were skipped)
        counts = np.apply_along_axis(np.bincount, 1, mat, minlength=N_REJ)
        assert counts.max() <= kappa
    assert all(msg.startswith("sampler:") for msg in messages)
    rate = len(messages) / DRAWS
    # One-sided binomial bound: under P(reject) = rho the SE of the rate is sqrt(rho(1 - rho)/DRAWS) = 0.011;
    # rho + 3 SE is exceeded by chance with probability ~0.001 even in the worst case P(reject) = rho.
    assert rate <= RHO_REJ + 3 * math.sqrt(RHO_REJ * (1 - RHO_REJ) / DRAWS)
    # Sharper: the rate matches the exact rejection probability. SE = sqrt(p(1 - p)/DRAWS) ~ 0.0055; 5 SE
    # (a false failure ~1e-6) still separates p ~ 0.064 from what kappa* +- 1 would give (~0.5 and ~0.002).
    q = exceed_probability(N_REJ, M_REJ, kappa)
    p = 1 - (1 - q) ** B_REJ
    assert 0.04 < p < 0.09
    assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / DRAWS)


def test_wr_redraw_never_raises_and_respects_cap() -> None:
    sampler = wr(M_REJ, B_REJ, rho=RHO_REJ, on_reject="redraw")
    kappa = kappa_star(N_REJ, M_REJ, B_REJ, RHO_REJ)
    for seed in range(300):  # ~19 of these would be rejected in "raise" mode
        mat = draw(sampler, N_REJ, np.random.default_rng(seed)).matrix()
        assert mat.shape == (B_REJ, M_REJ)
        counts = np.apply_along_axis(np.bincount, 1, mat, minlength=N_REJ)
        assert counts.max() <= kappa


def test_wr_redraw_rows_follow_the_conditioned_law() -> None:
    """Redrawing whole offending rows gives rows i.i.d. from the multinomial law conditioned on the cap.

    n = 8, m = 4, B = 1, rho = 0.9 gives kappa* = 2. Unconditionally the count pattern of a row has
    probabilities (all distinct, one pair, two pairs, triple, quadruple) = (1680, 2016, 168, 224, 8) / 4096;
    conditioned on max count <= 2 only the first three remain, renormalised by 3864.
    """
    n, m = 8, 4
    sampler = wr(m, 1, rho=0.9, on_reject="redraw")
    assert kappa_star(n, m, 1, 0.9) == 2
    pattern = {(1, 1, 1, 1): 0, (1, 1, 2): 1, (2, 2): 2}
    counts = np.zeros(3, dtype=np.int64)
    draws = 25_000
    for seed in range(draws):
        row = draw(sampler, n, np.random.default_rng(seed)).matrix()[0]
        key = tuple(sorted(int(c) for c in np.bincount(row) if c))
        counts[pattern[key]] += 1  # a KeyError here means the cap was violated
    expected = np.array([1680, 2016, 168]) / 3864 * draws
    # Pearson chi-square, 2 df, >= 1000 expected per cell; p > 0.001 fails for 1 seed in 1000. Redrawing only
    # the offending slot instead of the whole row gives (0.410, 0.541, 0.049) instead of (0.435, 0.522, 0.043):
    # an expected chi-square of ~0.0028 * draws ~ 70 here, far beyond the 0.001 critical value 13.8.
    assert stats.chisquare(counts, expected).pvalue > 0.001


def test_wr_max_redraws_gives_up() -> None:
    # n = 200, m = 9, B = 1, rho = 0.9: kappa* = 1, so a row is rejected whenever it has a repeat
    # (probability q = 1 - prod(1 - i/n) ~ 0.167). With max_redraws = 1 the sampler gives up when the first
    # draw and its one redraw are both rejected: probability q^2 ~ 0.028.
    n, m = 200, 9
    assert kappa_star(n, m, 1, 0.9) == 1
    sampler = wr(m, 1, rho=0.9, on_reject="redraw", max_redraws=1)
    draws = 3000
    messages: list[str] = []
    for seed in range(draws):
        try:
            row = draw(sampler, n, np.random.default_rng(seed)).matrix()[0]
        except pf.SamplerRejected as exc:
            messages.append(str(exc))
        else:
            assert len(np.unique(row)) == m
    assert all("max_redraws" in msg for msg in messages)
    gave_up = len(messages)
    q2 = (1 - math.prod(1 - i / n for i in range(m))) ** 2
    # SE of the give-up rate is sqrt(q2 (1 - q2) / draws) ~ 0.003; allow 5 SE (max_redraws = 0 or 2 would
    # give ~0.167 or ~0.005, both far outside).
    assert abs(gave_up / draws - q2) <= 5 * math.sqrt(q2 * (1 - q2) / draws)


# ---------------------------------------------------------------------------------------------------------
# Determinism and chunking


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("wor", {"m": 7}),  # a small subset of each row's data block
        ("wor", {"m": 120}),  # over half: the complement of a uniform subset
        ("wr", {"m": M_REJ, "rho": RHO_REJ, "on_reject": "redraw"}),  # with redrawn rows
    ],
)
def test_chunks_concatenate_to_matrix(name: str, options: dict[str, object]) -> None:
    n = N_REJ
    rows = BLOCK_ROWS
    B = 3 * rows + 8
    res = draw(pf.registry.create("sampler", name, {**options, "B": B}), n, np.random.default_rng(8))
    full = res.matrix()
    assert full.shape == (B, res.m)
    # bytes_per_row chosen so that chunks hold 1, 2, 3 blocks, one row's worth (clamped up to one block), and
    # everything; the last block is 8 rows short.
    budget = res.memory_budget
    first_chunk_rows = set()
    for per_row in [budget, budget // rows, budget // (2 * rows), budget // (3 * rows), 1, None]:
        chunks = list(res.chunks(per_row))
        first_chunk_rows.add(chunks[0].shape[0])
        assert np.array_equal(np.concatenate(chunks, axis=0), full)
    assert first_chunk_rows == {rows, 2 * rows, 3 * rows, B}
    # The memory_budget run option changes how rows are chunked, never which rows are drawn.
    sampler = pf.registry.create("sampler", name, {**options, "B": B})
    res_small = draw(sampler, n, np.random.default_rng(8), RunOptions(memory_budget=2**16))
    chunks = list(res_small.chunks(2**16 // (rows + rows // 4)))  # room for 1.25 blocks -> one block per chunk
    assert len(chunks) == 4
    assert np.array_equal(np.concatenate(chunks, axis=0), full)


def test_same_seed_same_draw_different_seed_different_draw() -> None:
    for sampler in (wor(20, 100), wr(20, 100)):
        a = draw(sampler, 500, np.random.default_rng(9)).matrix()
        b = draw(sampler, 500, np.random.default_rng(9)).matrix()
        c = draw(sampler, 500, np.random.default_rng(10)).matrix()
        assert np.array_equal(a, b)
        assert not np.array_equal(a, c)


def test_rows_are_not_repeated_across_blocks() -> None:
    # Each block has its own spawned seed: blocks must differ (a shared seed would repeat them).
    mat = draw(wor(10, 128), 1000, np.random.default_rng(11)).matrix()
    blocks = mat.reshape(4, 32, 10)
    for i, j in itertools.combinations(range(4), 2):
        assert not np.array_equal(blocks[i], blocks[j])


# ---------------------------------------------------------------------------------------------------------
# Bad options


@pytest.mark.parametrize("name", ["wor", "wr"])
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"B": 0}, "B"),
        ({"B": 1.5}, "B"),
        ({"B": True}, "B"),
        ({"m": "n^banana"}, "m"),
        ({"m": 0}, "m"),
        ({"m": 1}, "m"),
        ({"m": 2.5}, "m"),
        ({"memory_budget": 10}, "memory_budget"),
    ],
)
def test_bad_options_raise_config_error(name: str, options: dict[str, object], field: str) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.registry.create("sampler", name, options)
    assert str(info.value).startswith(f"sampler.{field}:")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rho": 2}, "rho"),
        ({"rho": 0}, "rho"),
        ({"rho": 1.0}, "rho"),
        ({"on_reject": "x"}, "on_reject"),
        ({"max_redraws": 0}, "max_redraws"),
    ],
)
def test_bad_wr_options_raise_config_error(options: dict[str, object], field: str) -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.registry.create("sampler", "wr", options)
    assert str(info.value).startswith(f"sampler.{field}:")


def test_wr_only_options_are_unknown_for_wor() -> None:
    with pytest.raises(pf.ConfigError) as info:
        pf.registry.create("sampler", "wor", {"rho": 0.1})
    assert str(info.value).startswith("sampler.rho:")


@pytest.mark.parametrize("name", ["wor", "wr"])
@pytest.mark.parametrize(("m", "n"), [(100, 100), (150, 100), ("n^1", 100), (3, 3)])
def test_bad_m_at_draw_time(name: str, m: int | str, n: int) -> None:
    # m >= n can only be detected once n is known (m = 1 is refused already at creation, above)
    sampler = pf.registry.create("sampler", name, {"m": m, "B": 10})
    with pytest.raises(pf.ConfigError) as info:
        draw(sampler, n, np.random.default_rng(0))
    assert str(info.value).startswith("m:")


@pytest.mark.parametrize("name", ["wor", "wr"])
def test_too_few_records(name: str) -> None:
    sampler = pf.registry.create("sampler", name, {"m": 2, "B": 10})
    with pytest.raises(pf.DataError):
        draw(sampler, 2, np.random.default_rng(0))


def test_scratch_is_clean_after_a_failed_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    # The loops' scratch arrays are kept per thread between calls; a draw that fails after a row was half
    # marked (here: the second batch of words cannot be drawn) must not leave marks for the next call.
    calls = {"n": 0}
    real = _kernels.random_words

    def failing(rng: np.random.Generator, count: int) -> np.ndarray:
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("no words")
        return real(rng, 3)  # too few: the loop stops mid-row and asks again

    k = np.array([50, 50], dtype=np.int64)
    monkeypatch.setattr(_kernels, "random_words", failing)
    with pytest.raises(MemoryError):
        _kernels.distinct_subsets(np.random.default_rng(0), k, np.zeros(2, bool), 0, 1000)
    calls["n"] = 0
    with pytest.raises(MemoryError):
        _kernels.iid_values(np.random.default_rng(0), k, 0, 1000)
    monkeypatch.undo()
    assert not _kernels._bitmap("present", 1000).any()
    assert not _kernels._scratch("copies", 1000, np.uint8).any()
    fresh = _kernels.distinct_subsets(np.random.default_rng(0), k, np.zeros(2, bool), 0, 1000)
    assert np.array_equal(np.diff(fresh.reshape(2, 50), axis=1) > 0, np.ones((2, 49), bool))


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.MT19937, np.random.SFC64])
def test_random_words_are_the_full_range_uint64_draws_and_leave_the_same_state(bit_generator: Any) -> None:
    """PCG64's words come from ``random_raw`` (it releases the GIL); they are the words, and the state after,
    that ``integers`` over the full uint64 range gives, which the other bit generators keep using."""
    ours, reference = np.random.Generator(bit_generator(7)), np.random.Generator(bit_generator(7))
    for count in (0, 1, 1001):
        words = _kernels.random_words(ours, count)
        expected = reference.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)
        assert words.dtype == np.uint64
        np.testing.assert_array_equal(words, expected)
    np.testing.assert_array_equal(ours.bit_generator.random_raw(4), reference.bit_generator.random_raw(4))
