"""Sums over public data blocks: one summation order for in-memory and distributed evaluation.

A decomposable statistic (:class:`privframe.DecomposableStatistic`) is computed from per-data-block partial
sums combined in block order. The in-memory helpers here cut resamples at the public data blocks of
``privframe_std.samplers._blocks`` exactly as a worker holding one data block sees them, so an in-memory run
and a run on a Dask array add the same doubles in the same order and agree bit for bit.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe_std.samplers._blocks import cut_at_data_blocks, data_blocks

__all__ = [
    "SCALE",
    "combine_sums",
    "decomposed_batch",
    "decomposed_full",
    "grouped_plain_sum_partials",
    "plain_sum_columns",
    "segment_sums",
]

SCALE = math.ldexp(1.0, -64)
"""Partial sums are kept in units of ``2^64``: a sum of fewer than ``2^64`` doubles cannot overflow, and
scaling by a power of two changes no rounding (outside the subnormal range), so the result equals the plain
sum wherever that is finite."""


EXACT_RUN = 1 << 22
"""Values on a grid of ``2^-31`` of their magnitude sum exactly in doubles in runs of fewer than this many."""


def segment_sums(values: pp.Array, lengths: npt.NDArray[np.integer[Any]]) -> pp.Array:
    """``SCALE`` times the sum of each run of ``lengths[r]`` consecutive entries of ``values`` (axis 0).

    Returns ``(rows,)`` for one-dimensional values, ``(rows, d)`` for ``(K, d)``. Rows whose plain sum
    overflows are summed again from scaled values. For values on the mean's public grid (``Mean.prepare``)
    every run shorter than :data:`EXACT_RUN` sums exactly, in any order; a longer run is summed in pieces
    added exactly (:func:`combine_sums`).
    """
    if lengths.shape[0] and int(np.max(lengths)) >= EXACT_RUN:  # the indices' shape only: data-independent
        return _long_segment_sums(values, lengths)
    rows = lengths.shape[0]
    tail = values.shape[1:]
    if rows == 0:
        return np.zeros((0, *tail))
    first = int(lengths[0])
    uniform = bool(np.all(lengths == first))
    if uniform:  # the common case (one data block): a plain reduction per row
        shaped = values.reshape(rows, first, *tail)
        sums: pp.Array = shaped.sum(axis=1)
    else:
        sums = _ragged_sums(values, lengths)
    scaled: pp.Array = sums * SCALE
    bad = ~np.isfinite(scaled)
    if bad.any():
        rescaled = (shaped * SCALE).sum(axis=1) if uniform else _ragged_sums(values * SCALE, lengths)
        scaled = np.where(bad, rescaled, scaled)
    return scaled


def _ragged_sums(values: pp.Array, lengths: npt.NDArray[np.integer[Any]]) -> pp.Array:
    out = np.zeros((lengths.shape[0], *values.shape[1:]))
    nonempty = lengths > 0
    if nonempty.any():
        starts = (np.cumsum(lengths) - lengths)[nonempty]
        out[nonempty] = np.add.reduceat(values, starts, axis=0)
    return out


def _long_segment_sums(values: pp.Array, lengths: npt.NDArray[np.integer[Any]]) -> pp.Array:
    """Segment sums of runs of any length: pieces of ``EXACT_RUN - 1`` values, added exactly."""
    starts = np.cumsum(lengths) - lengths
    pieces = []
    for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
        cuts = list(range(0, length, EXACT_RUN - 1)) or [0]
        parts = [
            segment_sums(
                values[start + a : start + min(a + EXACT_RUN - 1, length)], np.array([min(EXACT_RUN - 1, length - a)])
            )
            for a in cuts
        ]
        pieces.append(combine_sums(parts)[0])
    return np.stack(pieces)


def _two_sum(a: pp.Array, b: pp.Array) -> tuple[pp.Array, pp.Array]:
    """``s = fl(a + b)`` and the exact error ``e``, ``s + e = a + b`` (Knuth's TwoSum; no branch)."""
    total = a + b
    virtual = total - a
    error = (a - (total - virtual)) + (b - virtual)
    return total, error


def combine_sums(partials: Sequence[pp.Array]) -> pp.Array:
    """The partial sums of every data block added in block order, exactly up to the last rounding.

    A running two-term sum (TwoSum): the high part and the exact errors, accumulated apart and added once at
    the end. For partial sums that are exact multiples of the mean's grid (fewer than 2^40 records in all)
    the error terms add exactly too, so the result is the exact sum rounded once, whatever the number or
    the order of the blocks.
    """
    total = np.array(partials[0], dtype=np.float64, copy=True)
    if len(partials) == 1:
        return total
    carry = np.zeros_like(total)
    for part in partials[1:]:
        total, error = _two_sum(total, np.asarray(part, dtype=np.float64))
        carry += error
    exact: pp.Array = total + carry
    return exact


def decomposed_batch(
    statistic: pp.DecomposableStatistic, x: pp.Array, index: pp.IndexMatrix, *, plain_sums: bool = False
) -> pp.Array:
    """The statistic on every row of ``index`` from its partials per data block of ``range(len(x))``.

    Each row's indices are cut at the data blocks, keeping their order within a block, so the partials are
    those a worker holding one data block computes. The built-in samplers give rows in block order (``wor``
    sorted, ``wr`` block by block); other rows are put in block order first by a stable sort on the block
    (a decomposable statistic is symmetric in the records of a resample).

    ``plain_sums=True`` says that the statistic's partial of a block is ``SCALE`` times the plain sum of its
    values (of each coordinate, for vectors ``(n, d)``), exact in any order (the mean on its public grid):
    the sums are then taken by one compiled pass over the rows, with no gathered copy
    (:func:`~privframe_std.statistics._sums.block_row_sums`, on each column of column-major vectors), and
    come out the same doubles. A single data block keeps numpy's gather and sum unless numba is loaded
    already (then :func:`grouped_plain_sum_partials`, or the vectors' columns), so a small interval loads no
    numba.
    """
    rows, m = index.shape
    blocks = data_blocks(x.shape[0])
    if plain_sums and x.ndim in (1, 2) and (len(blocks) > 1 or (x.ndim == 2 and "numba" in sys.modules)):
        # One block of scalars: numpy's gather and sum (no numba load); vectors gather rows slowly in numpy
        # (about 60 ns a row), so they take the compiled pass whenever numba is loaded already.
        summed = _plain_sum_partials(x, index)
        if summed is not None:
            return statistic.combine(summed, m)
    if len(blocks) == 1:
        if plain_sums and x.ndim == 1 and "numba" in sys.modules:
            # numba is loaded already (the sampler loads it for large rows): the rows' sums a cache-sized
            # stretch of x at a time, no gathered copy; exact, so numpy's doubles.
            lengths = np.full(rows, m, dtype=np.int64)
            stretched = grouped_plain_sum_partials(x, np.ascontiguousarray(index).reshape(-1), lengths, 0, x.shape[0])
            if stretched is not None:
                return statistic.combine([stretched], m)
        values = x[index].reshape(rows * m, *x.shape[1:])
        return statistic.combine([statistic.partial_batch(values, np.full(rows, m, dtype=np.int64))], m)
    index, cuts = cut_at_data_blocks(index, x.shape[0])
    partials = []
    for j in range(len(blocks)):
        low, high = cuts[:, j], cuts[:, j + 1]
        part = np.concatenate([index[r, low[r] : high[r]] for r in range(rows)])
        partials.append(statistic.partial_batch(x[part], high - low))
    return statistic.combine(partials, m)


def _plain_sum_partials(x: pp.Array, index: pp.IndexMatrix) -> list[pp.Array] | None:
    """The partials ``SCALE * sum`` of every data block, ``(rows, 1)`` each for scalars and ``(rows, d)`` for
    vectors ``(n, d)``, from one compiled pass; None where a sum overflows (the caller then takes the general
    path, which rescales) or a row has :data:`EXACT_RUN` or more indices in one data block (possible with
    replacement only; the general path sums such a run in exact pieces). Both tests read the indices' shape
    or the sums, never a record alone."""
    from privframe_std.statistics import _sums

    index, cuts = cut_at_data_blocks(index, x.shape[0])
    if int(np.diff(cuts, axis=1).max()) >= EXACT_RUN:
        return None
    if x.ndim == 2:
        columns = plain_sum_columns(x)
        if columns is None:
            return None
        vectors = np.empty((len(columns), cuts.shape[1] - 1, index.shape[0]))
        for column, out in zip(columns, vectors, strict=True):
            _sums.block_row_sums(column, index, cuts, out)
        vectors *= SCALE
        return list(np.moveaxis(vectors, 0, 2)) if bool(np.isfinite(vectors).all()) else None
    sums = np.empty((cuts.shape[1] - 1, index.shape[0]))
    _sums.block_row_sums(np.ascontiguousarray(x, dtype=np.float64), index, cuts, sums)
    sums *= SCALE
    if not np.isfinite(sums).all():
        return None
    return [row[:, np.newaxis] for row in sums]


def plain_sum_columns(x: pp.Array) -> list[pp.Array] | None:
    """The contiguous columns of doubles the compiled plain sums read: ``[x]`` for scalars, each coordinate
    of column-major vectors ``(n, d)`` (the prepared mean's layout,
    :meth:`~privframe_std.statistics.mean.Mean.prepare`); None for any other dtype or layout."""
    if x.dtype != np.float64:
        return None
    if x.ndim == 1:
        return [x]
    if x.ndim == 2 and x.flags.f_contiguous:
        return [x[:, c] for c in range(x.shape[1])]
    return None


SUM_STRETCH = 1 << 16
"""Records of ``x`` (512 KiB) every row of a group reads before any goes on (:func:`grouped_plain_sum_partials`)."""


def grouped_plain_sum_partials(
    x: pp.Array, index: npt.NDArray[np.integer[Any]], lengths: npt.NDArray[np.integer[Any]], start: int, stop: int
) -> pp.Array | None:
    """``(rows, 1)`` partials ``SCALE * sum`` of rows of indices into ``x`` within ``[start, stop)``
    (concatenated row by row, row r owning ``lengths[r]``), read through the indices with no gathered copy,
    a cache-sized stretch of ``x`` at a time for all rows: the mean's
    :meth:`~privframe_std.statistics.mean.Mean.partial_batch` of ``x[index]``, the same doubles. Rows in any
    order are summed right; ascending rows (``wor``) also read ``x`` locally. None where a sum overflows or
    a run reaches :data:`EXACT_RUN` (the caller gathers instead)."""
    from privframe_std.statistics import _sums

    if lengths.shape[0] and int(np.max(lengths)) >= EXACT_RUN:
        return None
    end = np.cumsum(lengths, dtype=np.int64)
    sums = np.empty(lengths.shape[0])
    _sums.grouped_row_sums(x, np.asarray(index, dtype=np.intp), end - lengths, end, start, stop, SUM_STRETCH, sums)
    sums *= SCALE
    return sums[:, np.newaxis] if bool(np.isfinite(sums).all()) else None


def decomposed_full(statistic: pp.DecomposableStatistic, x: pp.Array) -> pp.Array:
    """The statistic on all of ``x`` (one resample holding every record), from its partials per data block."""
    partials = [statistic.partial_batch(x[start:stop], np.array([stop - start])) for start, stop in data_blocks(len(x))]
    full: pp.Array = statistic.combine(partials, x.shape[0])[0]
    return full
