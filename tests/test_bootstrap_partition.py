"""The ``bootstrap`` and ``partition`` samplers and the exact multinomial-count generator (algorithms.md 2).

Every draw uses a fixed seed; each chi-square check fails for a correct sampler with probability 0.001
(one seed in a thousand), and the stated bias it would catch is given next to it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import privframe as pf
import privframe.plugin as pp
from privframe.resampling.blocks import RunOptions, draw
from privframe_std.samplers import _jit, _kernels, multinomial_counts
from privframe_std.samplers import bootstrap as bootstrap_module
from privframe_std.samplers._kernels import fast_stream
from privframe_std.samplers.bootstrap import _poisson_block


def bootstrap(**options: object) -> pp.Sampler:
    return pf.registry.create("sampler", "bootstrap", options)  # type: ignore[no-any-return]


def partition(**options: object) -> pp.Sampler:
    return pf.registry.create("sampler", "partition", options)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------------
# bootstrap


def test_bootstrap_rows_are_n_out_of_n_with_replacement() -> None:
    res = draw(bootstrap(B=50), 200, np.random.default_rng(0))
    assert (res.n, res.m, res.B, res.kappa, res.replace) == (200, 200, 50, 200, True)
    mat = res.matrix()
    assert mat.shape == (50, 200)
    assert mat.min() >= 0
    assert mat.max() < 200
    # With replacement: a row of 200 uniform draws from 200 has a repeat except with probability 200!/200^200.
    assert all(len(np.unique(row)) < 200 for row in mat)


def test_bootstrap_indices_are_uniform() -> None:
    n, B = 30, 4000
    mat = draw(bootstrap(B=B), n, np.random.default_rng(1)).matrix()
    counts = np.bincount(mat.ravel(), minlength=n)
    # i.i.d. uniform indices: the counts are multinomial, Pearson's test applies (4000 expected per cell).
    # A 2% excess on one index would be detected (z ~ 3.2 per cell).
    assert stats.chisquare(counts).pvalue > 0.001
    # The multiplicity of index 0 in a row is Bin(n, 1/n); chi-square on the pooled values 0..3 and >= 4.
    mult = (mat == 0).sum(axis=1)
    observed = np.bincount(np.minimum(mult, 4), minlength=5)
    probs = stats.binom.pmf(np.arange(4), n, 1 / n)
    expected = B * np.append(probs, 1 - probs.sum())
    assert stats.chisquare(observed, expected).pvalue > 0.001


def test_bootstrap_counts_describe_the_same_rows() -> None:
    sampler = bootstrap(B=70)
    res = draw(sampler, 100, np.random.default_rng(2), RunOptions(memory_budget=2**16))
    mat = res.matrix()
    counts = np.concatenate(list(sampler.counts(res)), axis=0)  # type: ignore[attr-defined]
    assert counts.shape == (70, 100)
    assert np.all(counts.sum(axis=1) == 100)
    expected = np.stack([np.bincount(row, minlength=100) for row in mat])
    assert np.array_equal(counts, expected)


def test_bootstrap_needs_b_and_data() -> None:
    with pytest.raises(pf.ConfigError, match=r"^B:"):
        draw(bootstrap(), 100, np.random.default_rng(0))
    with pytest.raises(pf.ConfigError, match=r"B"):
        bootstrap(B=0)
    with pytest.raises(pf.DataError, match=r"^x:"):
        draw(bootstrap(B=5), 1, np.random.default_rng(0))


def test_bootstrap_is_reproducible_and_chunk_independent() -> None:
    a = draw(bootstrap(B=100), 500, np.random.default_rng(3))
    b = draw(bootstrap(B=100), 500, np.random.default_rng(3), RunOptions(memory_budget=2**16))
    assert np.array_equal(a.matrix(), np.concatenate(list(b.chunks()), axis=0))


# ---------------------------------------------------------------------------------------------------------
# partition


def test_partition_blocks_are_disjoint_and_sized() -> None:
    n, s = 103, 7
    res = draw(partition(s=s), n, np.random.default_rng(4))
    b = n // s
    assert (res.n, res.m, res.B, res.kappa, res.replace) == (n, b, s, 1, False)
    mat = res.matrix()
    assert mat.shape == (s, b)
    assert len(np.unique(mat)) == s * b  # disjoint
    assert mat.min() >= 0
    assert mat.max() < n
    assert np.all(np.diff(mat, axis=1) > 0)  # rows sorted
    assert len(list(res.chunks(10**9))) == 1  # one block of rows, whatever the budget


def test_partition_assignment_is_uniform() -> None:
    """Where record 0 lands: each of the s blocks with probability b/n, left over with (n - s b)/n.

    2000 seeded draws; expected counts >= 260 per cell, so Pearson's test applies. A sampler that always
    left the last records over (a common slicing bug) fails this at once.
    """
    n, s, draws = 23, 4, 2000  # b = 5, 3 records left over
    b = n // s
    where = np.empty((2, draws), dtype=np.int64)
    for i in range(draws):
        mat = draw(partition(s=s), n, np.random.default_rng(10_000 + i)).matrix()
        for j, record in enumerate((0, n - 1)):
            hit = np.flatnonzero((mat == record).any(axis=1))
            where[j, i] = hit[0] if hit.size else s
    expected = draws * np.append(np.full(s, b / n), (n - s * b) / n)
    for row in where:
        assert stats.chisquare(np.bincount(row, minlength=s + 1), expected).pvalue > 0.001


def test_partition_size_rules_and_errors() -> None:
    assert draw(partition(s="sqrt(n)"), 100, np.random.default_rng(0)).B == 10
    with pytest.raises(pf.ConfigError, match=r"^s:"):
        draw(partition(), 100, np.random.default_rng(0))
    with pytest.raises(pf.ConfigError, match=r"^s:"):
        draw(partition(s=100), 100, np.random.default_rng(0))
    with pytest.raises(pf.ConfigError, match=r"s"):
        partition(s="n squared")


# ---------------------------------------------------------------------------------------------------------
# exact multinomial counts


@pytest.mark.parametrize("lam", [1.0, 3.7, 27.6, 216.4, 813.9, 50_000.5])
def test_the_poisson_tables_cdf_is_scipy_stats_bit_for_bit(lam: float) -> None:
    """The table's CDF comes from ``scipy.special.pdtr`` (scipy.stats is never imported for it): the doubles
    of ``scipy.stats.poisson.cdf``."""
    from privframe_std.samplers.bootstrap import _poisson_table

    _, cdf = _poisson_table(lam)
    expected = stats.poisson.cdf(np.arange(cdf.size), lam)
    expected[-1] = 1.0
    assert np.array_equal(cdf, expected)


def test_poisson_table_inversion_is_exact() -> None:
    """1.6 million table-inverted Poisson(27.6) draws against the Poisson pmf (cells with >= 50 expected pooled).

    The ~0.07% of draws that need the refinement step are included; an error of 1/65536 in the table's
    cell boundaries would shift ~60 cells by 25 counts each and is well within reach of this test.
    """
    lam = 27.6
    rng = np.random.default_rng(5)
    counts, sums = _poisson_block(rng, fast_stream(rng), 1600, 1000, lam)
    assert np.array_equal(sums, counts.sum(axis=1))  # the compiled lookup's row sums, refined draws included
    draws = counts.ravel()
    top = int(draws.max())
    observed = np.bincount(draws.astype(np.int64), minlength=top + 1).astype(float)
    expected = stats.poisson.pmf(np.arange(top + 1), lam) * draws.size
    expected[-1] += stats.poisson.sf(top, lam) * draws.size
    keep = expected >= 50
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 0.001
    assert draws.mean() == pytest.approx(lam, abs=5 * math.sqrt(lam / draws.size))


def multinomial_pmf_table(k: int, total: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    cells = [c for c in itertools.product(range(total + 1), repeat=k) if sum(c) == total]
    probs = np.array([stats.multinomial.pmf(c, total, [1 / k] * k) for c in cells])
    return cells, probs


@pytest.mark.parametrize(("k", "total"), [(3, 20), (5, 12), (2, 9), (2, 3)])  # Poisson path (lam >= 1); direct
def test_multinomial_counts_have_the_multinomial_law(k: int, total: int) -> None:
    """The joint law of the count vector: chi-square over every composition of ``total`` into k parts.

    60 000 rows; compositions with fewer than 10 expected rows are pooled. About 16% of the Poisson rows are
    over-full (T > total) and redrawn, so the test covers the rejection branch as well as the uniform fill.
    """
    rows = 60_000
    counts = multinomial_counts(np.random.default_rng(6), rows, k, total)
    assert counts.shape == (rows, k)
    assert np.all(counts.sum(axis=1) == total)
    cells, probs = multinomial_pmf_table(k, total)
    index = {c: i for i, c in enumerate(cells)}
    observed = np.zeros(len(cells))
    uniq, freq = np.unique(counts.astype(np.int64), axis=0, return_counts=True)
    for row, f in zip(uniq, freq, strict=True):
        observed[index[tuple(int(v) for v in row)]] += f
    expected = probs * rows
    keep = expected >= 10
    obs, exp = observed[keep], expected[keep]
    if not keep.all():
        obs, exp = np.append(obs, observed[~keep].sum()), np.append(exp, expected[~keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 0.001


def _numpy_sfc64(seed: np.ndarray) -> np.random.SFC64:
    """numpy's SFC64 seeded as ``fast_stream`` seeds: state (a, b, c) = the words, counter 1, 12 words out."""
    generator = np.random.SFC64()
    generator.state = {
        "bit_generator": "SFC64",
        "state": {"state": np.array([*seed, 1], dtype=np.uint64)},
        "has_uint32": 0,
        "uinteger": 0,
    }
    generator.random_raw(12)
    return generator


def test_fast_stream_is_numpy_sfc64() -> None:
    """The compiled SFC64 yields numpy's SFC64 words, and the stream seeds from three words of the Generator."""
    seed = np.random.default_rng(3).integers(0, 2**64 - 1, size=3, dtype=np.uint64, endpoint=True)
    state = fast_stream(np.random.default_rng(3))
    reference = _numpy_sfc64(seed)
    words = np.empty(1000, dtype=np.uint64)
    _jit.sfc64_words(state, words)
    np.testing.assert_array_equal(words, reference.random_raw(1000))
    _jit.sfc64_words(state, words[:7])  # the state advanced in place: the stream goes on
    np.testing.assert_array_equal(words[:7], reference.random_raw(7))


@pytest.mark.parametrize(("k", "bits"), [(100, 16), (3, 16), (4096, 16), (40_000, 16), (5000, 32)])
def test_uniform_fill_kernel_matches_a_python_oracle(k: int, bits: int) -> None:
    # The compiled fill against Python integers on numpy's SFC64 words: a word gives 64 / bits pieces x,
    # lowest first; x gives the cell (x * k) >> bits unless (x * k) mod 2^bits < 2^bits mod k (k = 40 000
    # rejects 39% of 16-bit pieces); a row starts on a fresh word; one row needs nothing.
    rng = np.random.default_rng(k)
    seed = rng.integers(0, 2**64 - 1, size=3, dtype=np.uint64, endpoint=True)
    missing = rng.integers(0, 40, size=12)
    missing[3] = 0
    counts = np.zeros((12, k))
    state = np.empty(4, dtype=np.uint64)
    _jit.sfc64_seed(seed, state)
    _jit.add_uniform_stream(state, counts, missing, bits, _kernels.lemire_threshold(k, bits))
    expected = np.zeros((12, k))
    reference = _numpy_sfc64(seed)
    for r in range(12):
        added = 0
        while added < missing[r]:
            word = int(reference.random_raw())
            for q in range(64 // bits):
                x = (word >> (q * bits)) & ((1 << bits) - 1)
                if added == missing[r]:
                    break
                if x * k % 2**bits >= 2**bits % k:
                    expected[r, x * k >> bits] += 1
                    added += 1
    assert np.array_equal(counts, expected)
    after = np.empty(1, dtype=np.uint64)
    _jit.sfc64_words(state, after)
    assert int(after[0]) == int(reference.random_raw())  # the loop used exactly the oracle's words


def test_poisson_refinements_past_the_lists_are_found_by_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """With lists of 16 cells (far fewer than the ~0.1% of 10^6 cells that need refining) the counts are
    the same as with lists that hold them all."""
    lam = 27.6
    rng = np.random.default_rng(9)
    listed, listed_sums = _poisson_block(rng, fast_stream(rng), 1000, 1000, lam)
    monkeypatch.setattr(bootstrap_module, "_AMBIGUOUS_SHARE", 10**9)
    rng = np.random.default_rng(9)
    scanned, scanned_sums = _poisson_block(rng, fast_stream(rng), 1000, 1000, lam)
    np.testing.assert_array_equal(listed, scanned)
    np.testing.assert_array_equal(listed_sums, scanned_sums)
    assert np.all(scanned >= 0)
    assert np.array_equal(scanned_sums, scanned.sum(axis=1))


def test_multinomial_counts_moments_at_blb_scale() -> None:
    """Rows of Mult(2000; 1/50): each count Bin(2000, 1/50) (mean 40, var 39.2), pairs covary -0.8.

    4000 rows x 50 cells: the variance estimate pooled over cells has relative SE ~ 1/sqrt(50 * 4000 / 2),
    ~0.3%; 5 SE is 1.6%. The covariance of two cells pooled over 25 disjoint pairs has SE ~ 0.25; 5 SE.
    """
    rows, k, total = 4000, 50, 2000
    counts = multinomial_counts(np.random.default_rng(7), rows, k, total)
    assert np.all(counts.sum(axis=1) == total)
    assert counts.mean() == pytest.approx(40.0)
    var = counts.var(axis=0, ddof=1).mean()
    assert var == pytest.approx(2000 * (1 / 50) * (49 / 50), rel=5 * math.sqrt(2 / (rows * k)))
    centred = counts - 40.0
    cov = np.mean([np.mean(centred[:, 2 * i] * centred[:, 2 * i + 1]) for i in range(25)])
    assert cov == pytest.approx(-2000 / 50**2, abs=5 * 39.2 / math.sqrt(rows * 25))
