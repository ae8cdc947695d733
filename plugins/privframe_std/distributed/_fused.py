"""One compiled call per data block for the mean of 'wor' resamples: draw every resample's part, sum it.

The data-block loop (:mod:`privframe_std.distributed.local`) used to make, for each resample block and data
block, a generator (``block_stream``), a word count, a word draw and two compiled calls, about 0.1 ms of
Python under the GIL each: 10 000 parts at n = 1e7, B = 1000, which kept a second thread waiting. Here the
whole data block is one call that releases the GIL: it seeds each resample block's stream itself
(:mod:`privframe_std.samplers._pcg`, numpy's words exactly), draws the rows' distinct values into the
block's bitmap exactly as ``_jit.distinct_prefix_rows`` does (a row starts on a fresh word; the words come
from the stream in order, so drawing them on the fly takes the very words the chunked draws took), writes
them sorted into a reused buffer a group of resample blocks at a time, and sums each row through the
indices left to right (``_sums.grouped_row_sums``). The same indices, the same doubles.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError
from privframe_std._compiled import compiled
from privframe_std.samplers import _jit
from privframe_std.samplers._pcg import entropy_prefix, pcg64_next, seed_pcg64
from privframe_std.statistics import _sums

__all__ = ["WorStreams", "wor_streams", "wor_block_sums"]

IntArray = npt.NDArray[np.int64]

LOW32 = np.uint64(0xFFFFFFFF)
HALF = np.uint64(32)


@attrs.frozen(eq=False)
class WorStreams:
    """The seeds of a plan's resample blocks as words (:func:`~privframe_std.samplers._pcg.entropy_prefix`).

    Attributes
    ----------
    prefixes : ndarray
        ``(blocks, width)`` ``uint32``: row i holds block i's words, zero-padded.
    lengths : ndarray
        ``(blocks,)`` how many words of row i are block i's.
    pool_size : int
        The seeds' pool size (the same for all).
    row_starts : ndarray
        ``(blocks + 1,)``: block i's rows are ``row_starts[i]:row_starts[i + 1]`` of the plan's B rows.
    """

    prefixes: npt.NDArray[np.uint32]
    lengths: IntArray
    pool_size: int
    row_starts: IntArray


def wor_streams(seeds: list[np.random.SeedSequence], rows: list[int]) -> WorStreams | None:
    """The streams of resample blocks with these seeds and row counts; None where a seed's entropy is not
    made of ints or the pool sizes differ (the caller then draws in Python)."""
    if not seeds or len({seed.pool_size for seed in seeds}) != 1:
        return None
    prefixes = []
    for seed in seeds:
        prefix = entropy_prefix(seed)
        if prefix is None:
            return None
        prefixes.append(prefix)
    width = max(prefix.size for prefix in prefixes)
    table = np.zeros((len(prefixes), width), dtype=np.uint32)
    for i, prefix in enumerate(prefixes):
        table[i, : prefix.size] = prefix
    lengths = np.array([prefix.size for prefix in prefixes], dtype=np.int64)
    row_starts = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    return WorStreams(table, lengths, seeds[0].pool_size, row_starts)


def wor_block_sums(
    streams: WorStreams,
    block: int,
    counts: IntArray,
    size: int,
    x: npt.NDArray[np.float64],
    first: int,
    group_indices: int,
    stretch: int,
    resample_blocks: range | None = None,
) -> npt.NDArray[np.float64]:
    """Each row's plain sum of ``x`` over its indices in data block ``block`` (``counts[r]`` of them, a
    uniform subset of the block's ``size`` records, which are ``x[first:first + size]``), unscaled.

    The rows are those of ``resample_blocks`` (a step-1 range of the plan's resample blocks; all of them by
    default), ``counts`` theirs in order. The indices are those ``DrawPlan.part`` draws for 'wor', the sums
    those of ``grouped_row_sums`` over them: a row's sum depends only on its own indices, so any range
    gives the rows the doubles the whole call gives them. Resample blocks are taken together until they
    hold ``group_indices`` indices.
    """
    starts = streams.row_starts
    chosen = range(starts.shape[0] - 1) if resample_blocks is None else resample_blocks
    rows = counts.shape[0]
    if rows != int(starts[chosen.stop] - starts[chosen.start]):
        raise ConfigError("counts must hold one entry per row of the chosen resample blocks", path="counts")
    row0 = int(starts[chosen.start])
    largest = 0
    for i in chosen:
        largest = max(largest, int(counts[starts[i] - row0 : starts[i + 1] - row0].sum()))
    buffer = np.empty(max(group_indices + largest, 1), dtype=np.intp)
    bitmap = np.zeros((size + 63) >> 6, dtype=np.uint64)
    out = np.empty(rows)
    ends = np.empty(rows, dtype=np.int64)
    _wor_block_sums(
        streams.prefixes,
        streams.lengths,
        streams.pool_size,
        starts,
        chosen.start,
        chosen.stop,
        block,
        counts,
        size,
        first,
        x,
        buffer,
        bitmap,
        ends,
        group_indices,
        stretch,
        out,
    )
    return out


@compiled
def _wor_block_sums(
    prefixes: Any,
    lengths: Any,
    pool_size: int,
    row_starts: Any,
    first_block: int,
    stop_block: int,
    block: int,
    counts: Any,
    size: int,
    first: int,
    x: Any,
    buffer: Any,
    bitmap: Any,
    ends: Any,
    group_indices: int,
    stretch: int,
    out: Any,
) -> None:
    scale = np.uint64(size)
    limit = np.uint64(((1 << 32) - size) % size)
    mixer = np.empty(pool_size, dtype=np.uint64)
    state = np.empty(4, dtype=np.uint64)
    row0 = row_starts[first_block]
    i = first_block
    while i < stop_block:
        group_first_row = row_starts[i] - row0
        at = 0
        g = i
        while True:
            seed_pcg64(prefixes[g], lengths[g], block, pool_size, mixer, state)
            hi, lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
            for r in range(row_starts[g] - row0, row_starts[g + 1] - row0):
                count = counts[r]
                complement = 2 * count > size
                need = size - count if complement else count
                found = np.int64(0)
                while found < need:
                    word, hi, lo = pcg64_next(hi, lo, inc_hi, inc_lo)
                    for half in range(2):
                        if found == need:
                            break
                        found += _jit.mark_value(word & LOW32 if half == 0 else word >> HALF, scale, limit, bitmap)
                _jit.emit_bits(bitmap, size, buffer, at, at + count, first, complement)
                at += count
                ends[r] = at
            g += 1
            if not (at < group_indices and g < stop_block):  # the group holds enough indices, or all blocks
                break
        group_last_row = row_starts[g] - row0
        group_ends = ends[group_first_row:group_last_row]
        _sums.grouped_row_sums(
            x,
            buffer,
            group_ends - counts[group_first_row:group_last_row],
            group_ends,
            first,
            first + size,
            stretch,
            out[group_first_row:group_last_row],
        )
        i = g
