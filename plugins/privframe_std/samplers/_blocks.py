"""Vectorised index generation for one block of resamples: sorted rows, drawn data block by data block.

The rows ``0..n-1`` of the data are cut into fixed public *data blocks* of ``DATA_BLOCK`` rows (the last one
shorter). A block of resamples is drawn in two stages (``docs/algorithms.md``, section 2):

1. *Allocation*, from the resample block's own generator: how many of each row's m indices fall in each
   data block. Without replacement the counts are multivariate hypergeometric (m draws from an urn with
   one colour per data block); with replacement they are multinomial with cell probabilities
   ``size_j / n``.
2. *Within each data block* j, from a stream seeded by (resample block seed, j): for every row, its count of
   indices in the block, uniform without replacement (a uniform subset of that size) or i.i.d. uniform
   with replacement, each returned sorted.

Both stages are exact (see :func:`distinct_rows`), so a row is a uniform m-subset of ``range(n)`` (``wor``)
or the sorted multiset of m i.i.d. uniform indices (``wr``). Because a data block's draws depend only on
the seeds, the allocation and j, whoever holds rows ``[a, b)`` of the data can draw exactly the indices that
fall there (:func:`draw_data_block`), and any grouping of data blocks gives the same rows. Rows come out
sorted, so gathering through them streams through memory, and the sort the multiplicity check needs is
already done.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

import privframe as pf
from privframe.errors import ConfigError
from privframe.resampling import seed_sequence_of

__all__ = [
    "DATA_BLOCK",
    "allocate",
    "data_blocks",
    "distinct_rows",
    "draw_data_block",
    "iid_sorted_rows",
    "max_multiplicity_exceeded",
    "uniform_rows",
]

IntArray = npt.NDArray[np.integer[Any]]

DATA_BLOCK = 2**20
"""Data rows per public data block: a block's draws (at most ``DATA_BLOCK`` int32) stay cache-sized."""

MAX_HYPERGEOMETRIC_POPULATION = 10**9
"""numpy's multivariate hypergeometric sampler needs fewer records than this."""


def uniform_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` i.i.d. uniform indices (with replacement), unsorted."""
    return rng.integers(0, n, size=(rows, m), dtype=np.intp)


def data_blocks(n: int) -> tuple[tuple[int, int], ...]:
    """``(start, stop)`` of each public data block of ``range(n)``."""
    return _spans(n, DATA_BLOCK)


@functools.lru_cache(maxsize=16)
def _spans(n: int, block: int) -> tuple[tuple[int, int], ...]:
    return tuple((start, min(start + block, n)) for start in range(0, n, block))


def allocate(rng: np.random.Generator, rows: int, n: int, m: int, replace: bool) -> IntArray:
    """``(rows, blocks)`` counts: how many of each row's m indices fall in each data block.

    Multivariate hypergeometric without replacement (the block counts of a uniform m-subset), multinomial
    with replacement (the block counts of m i.i.d. uniform indices). One block needs no randomness.
    """
    sizes = np.array([stop - start for start, stop in data_blocks(n)], dtype=np.int64)
    if sizes.size == 1:
        return np.full((rows, 1), m, dtype=np.int64)
    if replace:
        return rng.multinomial(m, sizes / n, size=rows).astype(np.int64)
    if n >= MAX_HYPERGEOMETRIC_POPULATION:
        raise ConfigError(
            f"sampling without replacement supports n < {MAX_HYPERGEOMETRIC_POPULATION}; got n = {n}", path="m"
        )
    return rng.multivariate_hypergeometric(sizes, m, size=rows, method="marginals").astype(np.int64)


def block_stream(seed: np.random.SeedSequence, block: int, round_: int = 0) -> np.random.Generator:
    """The generator of data block ``block`` for the resample block seeded by ``seed``.

    Round 0 is the first draw; ``wr``'s redraws of rejected rows use rounds 1, 2, ... (The first draw of
    a single data block uses the resample block's own generator instead, see :func:`draw_data_block`.)
    """
    key = (*seed.spawn_key, block) if round_ == 0 else (*seed.spawn_key, block, round_)
    return np.random.default_rng(np.random.SeedSequence(seed.entropy, spawn_key=key, pool_size=seed.pool_size))


def draw_data_block(
    seed: np.random.SeedSequence, block: int, counts: IntArray, n: int, replace: bool, round_: int = 0
) -> IntArray:
    """The indices in data block ``block`` of ``range(n)`` of every row, concatenated row by row.

    Row r contributes ``counts[r]`` sorted indices: a uniform subset of the block (``replace=False``) or
    i.i.d. uniform indices in it (``replace=True``). The result depends only on ``seed``, ``block``,
    ``round_``, ``counts`` and n, so whoever holds the block's data rows can draw its indices alone. When
    ``range(n)`` is a single data block, round 0 draws from ``default_rng(seed)``: what the resample block's
    own generator is before its first draw (no allocation draw precedes it).
    """
    blocks = data_blocks(n)
    start, stop = blocks[block]
    single = len(blocks) == 1 and round_ == 0
    rng = np.random.default_rng(seed) if single else block_stream(seed, block, round_)
    return _iid_sorted(rng, counts, start, stop) if replace else _subsets(rng, counts, start, stop)


def distinct_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` sorted rows, each a uniform size-m subset of ``range(n)``.

    Why the law is exact (a proof sketch; ``docs/algorithms.md`` section 2 has it in full):

    - The block counts of a uniform m-subset are multivariate hypergeometric, and given them the parts
      in different blocks are independent uniform subsets of the given sizes. Stage 1 draws the counts,
      stage 2 the parts, so the union is a uniform m-subset.
    - Within a block of size s, a uniform c-subset (c <= s/2; otherwise the complement of a uniform
      (s - c)-subset) comes from w i.i.d. uniform draws: their set D of distinct values is exchangeable
      under relabelling of ``range(s)``, so given ``|D| = K`` it is a uniform K-subset. Rows with K < c are
      drawn again (conditioning on K keeps that property); otherwise K - c uniformly chosen members of D
      are dropped, which leaves a uniform c-subset. w is set so that K < c is rare.
    - Dropped members are chosen by rejection: a uniformly drawn position is accepted when it holds a
      member not chosen yet, so each accepted member is uniform among those left.
    """
    return _rows(rng, rows, n, m, replace=False)


def iid_sorted_rows(rng: np.random.Generator, rows: int, n: int, m: int, round_: int = 0) -> pf.IndexMatrix:
    """``(rows, m)`` rows of m i.i.d. uniform indices of ``range(n)``, each sorted.

    Exact: the multinomial block counts of m i.i.d. uniform indices, then i.i.d. uniform indices within each
    block, is the same law (up to the order within a row, which sorting discards).
    """
    return _rows(rng, rows, n, m, replace=True, round_=round_)


def _rows(rng: np.random.Generator, rows: int, n: int, m: int, replace: bool, round_: int = 0) -> pf.IndexMatrix:
    blocks = data_blocks(n)
    if len(blocks) == 1:  # the first draw of a single data block uses the resample block's generator
        stream = rng if round_ == 0 else block_stream(seed_sequence_of(rng), 0, round_)
        draw = _iid_sorted if replace else _subsets
        return draw(stream, np.full(rows, m, dtype=np.int64), 0, n).reshape(rows, m).astype(np.intp)
    seed = seed_sequence_of(rng)
    counts = allocate(rng, rows, n, m, replace)
    out = np.empty((rows, m), dtype=np.intp)
    columns = np.cumsum(counts, axis=1) - counts
    for j in range(len(blocks)):
        values = draw_data_block(seed, j, counts[:, j], n, replace, round_)
        offsets = np.cumsum(counts[:, j]) - counts[:, j]
        for r in range(rows):
            first, count = int(columns[r, j]), int(counts[r, j])
            out[r, first : first + count] = values[offsets[r] : offsets[r] + count]
    return out


def _value_dtype(stop: int) -> type[np.integer[Any]]:
    """int32 when the values and the sentinel fit (halves the sort's cost), else int64."""
    return np.int32 if stop < 2**31 - 1 else np.int64


def _iid_sorted(rng: np.random.Generator, counts: IntArray, start: int, stop: int) -> IntArray:
    """Row r: ``counts[r]`` i.i.d. uniform values of ``range(start, stop)``, sorted; rows concatenated."""
    dtype = _value_dtype(stop)
    width = int(counts.max(initial=0))
    draws = rng.integers(start, stop, size=(counts.size, width), dtype=dtype)
    ragged = bool(np.any(counts != width))
    if ragged:  # unused slots sort last and are dropped
        draws[np.arange(width) >= counts[:, np.newaxis]] = np.iinfo(dtype).max
    draws.sort(axis=1)
    if not ragged:
        return draws.reshape(-1)
    kept: IntArray = draws[np.arange(width) < counts[:, np.newaxis]]
    return kept


def _subsets(rng: np.random.Generator, counts: IntArray, start: int, stop: int) -> IntArray:
    """Row r: a uniform ``counts[r]``-subset of ``range(start, stop)``, sorted; rows concatenated."""
    size = stop - start
    flip = 2 * counts > size  # draw the smaller of the subset and its complement
    small = np.where(flip, size - counts, counts)
    values = _small_subsets(rng, small, start, stop)
    if not flip.any():
        return values
    ends = np.cumsum(small)
    parts = np.split(values, ends[:-1])
    for r in np.flatnonzero(flip):
        parts[r] = _complement(parts[r], start, stop)
    return np.concatenate(parts)


def _complement(values: IntArray, start: int, stop: int) -> IntArray:
    keep = np.ones(stop - start, dtype=bool)
    keep[values - start] = False
    return (np.flatnonzero(keep) + start).astype(values.dtype)


def _draws_needed(k: IntArray, size: int) -> IntArray:
    """Draws w per row so that w i.i.d. uniform values of ``range(size)`` have >= k distinct ones but rarely.

    w puts the expected number of distinct values 3 standard deviations (plus one) above k; k <= size / 2.
    """
    if k.size > 1 and np.all(k == k[0]):  # the common case: one count for every row, computed once
        return np.full(k.size, _draws_for(int(k[0]), size), dtype=np.int64)
    return np.array([_draws_for(int(c), size) for c in k], dtype=np.int64)


def _draws_for(k: int, size: int) -> int:
    if k == 0:
        return 0
    lam = -math.log1p(-k / size)  # w = size * lam draws give k distinct values on average
    variance = size * (math.exp(-lam) - (1 + lam) * math.exp(-2 * lam))
    target = k + 3 * math.sqrt(max(variance, 0.0)) + 1
    if target >= size:  # tiny blocks: enough draws to see every value with high probability
        return max(k, math.ceil(size * (math.log(size) + 3)))
    return max(k, math.ceil(-size * math.log1p(-target / size)))


def _small_subsets(rng: np.random.Generator, k: IntArray, start: int, stop: int) -> IntArray:
    """Row r: a uniform ``k[r]``-subset of ``range(start, stop)``, sorted (``2 k[r] <= stop - start``)."""
    dtype = _value_dtype(stop)
    widths = _draws_needed(k, stop - start)
    pending = np.flatnonzero(k > 0)
    if pending.size == k.size:  # the common case: every row done at the first attempt, nothing to reassemble
        done, values = _distinct_then_trim(rng, k, widths, start, stop, dtype)
        if done.all():
            return values
    parts: list[IntArray] = [np.empty(0, dtype=dtype)] * k.size
    while pending.size:
        done, values = _distinct_then_trim(rng, k[pending], widths[pending], start, stop, dtype)
        for r, part in zip(pending[done], np.split(values, np.cumsum(k[pending[done]])[:-1]), strict=True):
            parts[r] = part
        pending = pending[~done]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _distinct_then_trim(
    rng: np.random.Generator, k: IntArray, widths: IntArray, start: int, stop: int, dtype: type[np.integer[Any]]
) -> tuple[npt.NDArray[np.bool_], IntArray]:
    """One attempt per row: the distinct values of ``widths[r]`` uniform draws, cut down to ``k[r]``.

    Returns which rows succeeded (at least ``k[r]`` distinct values) and their subsets, concatenated.
    """
    width = int(widths.max())
    sentinel = np.iinfo(dtype).max
    draws = rng.integers(start, stop, size=(k.size, width), dtype=dtype)
    ragged = bool(np.any(widths != width))
    if ragged:  # unused slots hold the sentinel, which sorts last and never counts as a value
        draws[np.arange(width) >= widths[:, np.newaxis]] = sentinel
    draws.sort(axis=1)
    first = np.empty(draws.shape, dtype=bool)  # the first copy of each value
    first[:, 0] = True
    np.not_equal(draws[:, 1:], draws[:, :-1], out=first[:, 1:])
    if ragged:
        first &= draws != sentinel
    distinct = np.count_nonzero(first, axis=1)
    done = distinct >= k
    first[~done] = False
    _drop_uniformly(rng, first, np.where(done, distinct - k, 0), distinct)
    values: IntArray = draws[first]
    return done, values


def _drop_uniformly(rng: np.random.Generator, mask: npt.NDArray[np.bool_], drop: IntArray, have: IntArray) -> None:
    """Clear ``drop[r]`` uniformly chosen set entries of row r of ``mask`` (which has ``have[r]`` set).

    When more than half would go, the entries to keep are chosen instead.
    """
    if not drop.any():
        return
    keep_chosen = 2 * drop > have
    chosen = _choose_entries(rng, mask, np.where(keep_chosen, have - drop, drop), have)
    np.logical_and(mask, chosen == keep_chosen[:, np.newaxis], out=mask)


def _choose_entries(
    rng: np.random.Generator, mask: npt.NDArray[np.bool_], count: IntArray, have: IntArray
) -> npt.NDArray[np.bool_]:
    """A uniform ``count[r]``-subset of the ``have[r]`` set entries of each row of ``mask``, as a mask.

    Sequential rejection sampling, vectorised: each row draws a batch of uniform columns and accepts, in
    draw order, the first ``count[r]`` that hold a set entry not chosen before (each accepted entry is
    uniform among those left, so the subset is uniform). A row whose batch falls short draws another.
    """
    rows, width = mask.shape
    flat_mask = mask.reshape(-1)
    chosen = np.zeros(mask.size, dtype=bool)
    need = count.astype(np.int64)
    left = have.astype(np.int64)
    while need.any():
        batch = np.where(need > 0, np.ceil(1.25 * need * width / np.maximum(left, 1)) + 4, 0).astype(np.int64)
        row = np.repeat(np.arange(rows, dtype=np.intp), batch)
        cell = row * width + rng.integers(0, width, size=row.size)
        ok = flat_mask[cell] & ~chosen[cell]
        _, first = np.unique(cell, return_index=True)
        repeat = np.ones(cell.size, dtype=bool)
        repeat[first] = False
        ok &= ~repeat  # a later copy of a cell is never new
        rank = np.cumsum(ok)  # accepted so far, over all rows; minus what earlier rows accepted
        starts = np.cumsum(batch) - batch
        before = np.where(starts > 0, rank[np.maximum(starts - 1, 0)], 0)
        take = ok & (rank - before[row] <= need[row])
        chosen[cell[take]] = True
        got = np.bincount(row[take], minlength=rows)
        need -= got
        left -= got
    return chosen.reshape(mask.shape)


def max_multiplicity_exceeded(index: pf.IndexMatrix, kappa: int, *, ordered: bool = False) -> npt.NDArray[np.bool_]:
    """Per row: does any index appear more than ``kappa`` times?

    ``ordered=True`` promises sorted rows (as :func:`iid_sorted_rows` returns) and skips the sort; otherwise
    rows are sorted as int32 when the values allow (about twice as fast as int64).
    """
    m = index.shape[1]
    if kappa >= m:
        return np.zeros(index.shape[0], dtype=bool)
    if not ordered:
        small = index.size == 0 or int(index.max()) < 2**31
        index = np.sort(index.astype(np.int32) if small else index, axis=1)
    # In a sorted row a value repeats more than kappa times iff some entry equals the one kappa places on.
    result: npt.NDArray[np.bool_] = np.any(index[:, kappa:] == index[:, :-kappa], axis=1)
    return result
