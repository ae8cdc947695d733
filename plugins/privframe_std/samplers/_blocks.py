"""Vectorised index generation for one block of resamples, drawn data block by data block.

The rows ``0..n-1`` of the data are cut into fixed public *data blocks* of ``DATA_BLOCK`` rows (the last one
shorter). A block of resamples is drawn in two stages (``docs/algorithms.md``, section 2):

1. *Allocation*, from the resample block's own generator: how many of each row's m indices fall in each
   data block. Without replacement the counts are multivariate hypergeometric (m draws from an urn with
   one colour per data block); with replacement they are multinomial with cell probabilities
   ``size_j / n``.
2. *Within each data block* j, from a stream seeded by (resample block seed, j): for every row, its count of
   indices in the block, uniform without replacement (a uniform subset of that size, sorted) or i.i.d.
   uniform with replacement (in the order drawn, by sub-blocks of ``_kernels.SUB_BLOCK`` values in a larger
   block, with each row's largest multiplicity in the block).

Both stages are exact (see :func:`distinct_rows`), so a row is a uniform m-subset of ``range(n)`` (``wor``,
sorted) or m i.i.d. uniform indices (``wr``, data block by data block in block order). Because a data
block's draws depend only on the seeds, the allocation and j, whoever holds rows ``[a, b)`` of the data can
draw exactly the indices that fall there (:func:`draw_data_block`), and any grouping of data blocks gives
the same rows. Sorted ``wor`` rows make the gather stream through memory; ``wr`` rows keep the order drawn,
their multiplicity counted as they are drawn (sorting them cost more than it saved).
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError
from privframe.resampling.seeds import seed_sequence_of
from privframe_std.samplers._kernels import (
    distinct_subset_sorted_values,
    distinct_subset_sums,
    distinct_subsets,
    iid_value_sums,
    iid_values,
)

__all__ = [
    "DATA_BLOCK",
    "allocate",
    "cut_at_data_blocks",
    "data_blocks",
    "distinct_rows",
    "distinct_sorted_rows",
    "draw_data_block",
    "draw_data_block_and_multiplicity",
    "iid_rows",
    "iid_rows_and_multiplicity",
    "row_sums",
    "uniform_rows",
]

IntArray = npt.NDArray[np.integer[Any]]

DATA_BLOCK = 2**20
"""Data rows per public data block: a block's draws (at most ``DATA_BLOCK`` int32) stay cache-sized."""

MAX_HYPERGEOMETRIC_POPULATION = 10**9
"""numpy's multivariate hypergeometric sampler needs fewer records than this."""


def uniform_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pp.IndexMatrix:
    """``(rows, m)`` i.i.d. uniform indices (with replacement), unsorted."""
    return rng.integers(0, n, size=(rows, m), dtype=np.intp)


def data_blocks(n: int) -> tuple[tuple[int, int], ...]:
    """``(start, stop)`` of each public data block of ``range(n)``."""
    return _spans(n, DATA_BLOCK)


@functools.lru_cache(maxsize=16)
def _spans(n: int, block: int) -> tuple[tuple[int, int], ...]:
    return tuple((start, min(start + block, n)) for start in range(0, n, block))


def cut_at_data_blocks(index: pp.IndexMatrix, n: int) -> tuple[pp.IndexMatrix, IntArray]:
    """The rows of ``index`` in block order and ``(rows, blocks + 1)`` positions where each enters each data
    block of ``range(n)`` (the last column is m).

    Rows already in block order (sorted by data block, in any order within one: the built-in samplers'
    rows) come back as they are, found in one compiled pass with no temporaries; other rows are put in
    block order by a stable sort on the block, keeping their order within a block.
    """
    from privframe_std.samplers import _jit

    spans = data_blocks(n)
    block = spans[0][1] - spans[0][0]  # every data block but the last has this size
    cuts = np.empty((index.shape[0], len(spans) + 1), dtype=np.int64)
    if not _jit.block_cuts(index, block, cuts):
        index = np.take_along_axis(index, np.argsort(index // block, axis=1, kind="stable"), axis=1)
        _jit.block_cuts(index, block, cuts)
    return index, cuts


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

    Row r contributes ``counts[r]`` indices: a uniform subset of the block, sorted (``replace=False``), or
    i.i.d. uniform indices in it in the order drawn (``replace=True``). The result depends only on ``seed``,
    ``block``, ``round_``, ``counts`` and n, so whoever holds the block's data rows can draw its indices
    alone. When ``range(n)`` is a single data block, round 0 draws from ``default_rng(seed)``: what the
    resample block's own generator is before its first draw (no allocation draw precedes it).
    """
    return draw_data_block_and_multiplicity(seed, block, counts, n, replace, round_)[0]


def draw_data_block_and_multiplicity(
    seed: np.random.SeedSequence,
    block: int,
    counts: IntArray,
    n: int,
    replace: bool,
    round_: int = 0,
    out: IntArray | None = None,
) -> tuple[IntArray, IntArray | None]:
    """:func:`draw_data_block`, with each row's largest multiplicity in the block when ``replace`` (equal
    indices fall in the same data block, so a row's largest multiplicity is the largest over its blocks).
    ``out``: an ``intp`` array of ``counts.sum()`` values that receives the indices (the same ones)."""
    blocks = data_blocks(n)
    start, stop = blocks[block]
    single = len(blocks) == 1 and round_ == 0
    rng = np.random.default_rng(seed) if single else block_stream(seed, block, round_)
    if replace:
        values, most = iid_values(rng, counts, start, stop)
        if out is None:
            return values, most
        out[:] = values
        return out, most
    return _subsets(rng, counts, start, stop, out), None


def distinct_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pp.IndexMatrix:
    """``(rows, m)`` sorted rows, each a uniform size-m subset of ``range(n)``.

    Why the law is exact (a proof sketch; ``docs/algorithms.md`` section 2 has it in full):

    - The block counts of a uniform m-subset are multivariate hypergeometric, and given them the parts
      in different blocks are independent uniform subsets of the given sizes. Stage 1 draws the counts,
      stage 2 the parts, so the union is a uniform m-subset.
    - Within a block of size s, a uniform c-subset (c <= s/2; otherwise the complement of a uniform
      (s - c)-subset) is the first c distinct values of i.i.d. uniform values: each new value is uniform
      among those not seen yet, which is sampling without replacement. The values are exactly uniform
      (Lemire's multiply-shift with rejection on 32-bit halves of numpy's 64-bit words), and a row takes
      as many as it needs.
    - Rows come out sorted from a scan of a bitmap of the block (no comparison sort).
    """
    return _rows(rng, rows, n, m, replace=False)[0]


def distinct_sorted_rows(rng: np.random.Generator, rows: int, m: int, ranked: pp.RankedData) -> pp.Array | None:
    """``(rows, m)``: the values of the rows :func:`distinct_rows` would draw from ``rng`` over the
    ``ranked.n`` records, each row ascending, with no index row written: the same stream and words, each
    value's rank marked where it is drawn (``_jit.distinct_prefix_sorted``).

    None where the data span more than one data block (a row's values come from several streams; the caller
    draws the rows instead), or where the rows would be drawn by numpy (a small call while numba is not
    loaded).
    """
    n = ranked.n
    if len(data_blocks(n)) != 1:
        return None
    counts = np.full(rows, m, dtype=np.int64)
    complement = 2 * counts > n
    return distinct_subset_sorted_values(
        rng, np.where(complement, n - counts, counts), complement, ranked.rank_of, ranked.values
    )


def iid_rows(rng: np.random.Generator, rows: int, n: int, m: int, round_: int = 0) -> pp.IndexMatrix:
    """``(rows, m)`` rows of m i.i.d. uniform indices of ``range(n)``: each row's indices data block by data
    block, in block order, and in the order drawn within a block.

    Exact: the multinomial block counts of m i.i.d. uniform indices, then i.i.d. uniform indices within each
    block, is the law of the multiset of m i.i.d. uniform indices (every statistic is a function of the
    multiset; the order within a row carries no information).
    """
    return iid_rows_and_multiplicity(rng, rows, n, m, round_)[0]


def iid_rows_and_multiplicity(
    rng: np.random.Generator, rows: int, n: int, m: int, round_: int = 0
) -> tuple[pp.IndexMatrix, IntArray]:
    """:func:`iid_rows` and each row's largest multiplicity (how often its most repeated index occurs)."""
    index, most = _rows(rng, rows, n, m, replace=True, round_=round_)
    assert most is not None
    return index, most


def row_sums(
    rng: np.random.Generator, rows: int, n: int, m: int, replace: bool, x: npt.NDArray[np.float64]
) -> tuple[list[pp.Array], IntArray | None] | None:
    """The sums of ``x`` over the first-round rows :func:`distinct_rows` (``replace=False``) or
    :func:`iid_rows_and_multiplicity` would draw from ``rng``, one ``(rows,)`` array per data block in block
    order, and with replacement each row's largest multiplicity: :func:`_rows` with each row summed where it
    is drawn (the same allocation, streams and words) instead of written.

    None where a data block's rows without replacement would be drawn by numpy (a small call while numba is
    not loaded): the caller draws the rows instead, from a fresh generator.
    """
    blocks = data_blocks(n)
    seed = seed_sequence_of(rng) if len(blocks) > 1 else None
    allocation = allocate(rng, rows, n, m, replace)  # one data block: no draw
    sums: list[pp.Array] = []
    most_all = np.zeros(rows, dtype=np.int64) if replace else None
    for j, (start, stop) in enumerate(blocks):
        stream = rng if seed is None else block_stream(seed, j)
        counts = allocation[:, j]
        if most_all is not None:
            total, most = iid_value_sums(stream, counts, start, stop, x)
            np.maximum(most_all, most, out=most_all)
        else:
            complement = 2 * counts > stop - start
            chosen = np.where(complement, stop - start - counts, counts)
            subset = distinct_subset_sums(stream, chosen, complement, start, stop, x)
            if subset is None:
                return None
            total = subset
        sums.append(total)
    return sums, most_all


def _rows(
    rng: np.random.Generator, rows: int, n: int, m: int, replace: bool, round_: int = 0
) -> tuple[pp.IndexMatrix, IntArray | None]:
    blocks = data_blocks(n)
    if len(blocks) == 1:  # the first draw of a single data block uses the resample block's generator
        stream = rng if round_ == 0 else block_stream(seed_sequence_of(rng), 0, round_)
        counts = np.full(rows, m, dtype=np.int64)
        if replace:
            values, most = iid_values(stream, counts, 0, n)
            return cast(pp.IndexMatrix, values.reshape(rows, m)), most
        return cast(pp.IndexMatrix, _subsets(stream, counts, 0, n).reshape(rows, m)), None
    seed = seed_sequence_of(rng)
    allocation = allocate(rng, rows, n, m, replace)
    out = np.empty((rows, m), dtype=np.intp)
    most_all: IntArray | None = np.zeros(rows, dtype=np.int64) if replace else None
    columns = np.cumsum(allocation, axis=1) - allocation
    for j in range(len(blocks)):
        values, block_most = draw_data_block_and_multiplicity(seed, j, allocation[:, j], n, replace, round_)
        if most_all is not None and block_most is not None:
            np.maximum(most_all, block_most, out=most_all)
        offsets = np.cumsum(allocation[:, j]) - allocation[:, j]
        for r in range(rows):
            first, count = int(columns[r, j]), int(allocation[r, j])
            out[r, first : first + count] = values[offsets[r] : offsets[r] + count]
    return out, most_all


def _subsets(
    rng: np.random.Generator, counts: IntArray, start: int, stop: int, out: IntArray | None = None
) -> IntArray:
    """Row r: a uniform ``counts[r]``-subset of ``range(start, stop)``, sorted; rows concatenated (intp).

    Each row keeps the first distinct values of its i.i.d. uniform values: ``counts[r]`` of them, or, above
    half the block, the complement of ``stop - start - counts[r]`` of them.
    """
    size = stop - start
    complement = 2 * counts > size
    return distinct_subsets(rng, np.where(complement, size - counts, counts), complement, start, stop, out)
