"""Counts on a public grid, computed where the data live: the only data-dependent input of a count-based
method (rank-quantile) on a Dask array (``docs/cluster.md``).

Each chunk of the array becomes one row of counts on the workers (with a last column counting the records
that are not finite); Dask sums the rows in a tree, so the client holds a few rows of ``2 G + 2`` integers at
a time, never the records. Integer sums do not depend on the order or the chunking, so the counts, and
every interval computed from them, are those of the same data in memory, bit for bit.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError

__all__ = ["histogram_distributed"]

IntArray = npt.NDArray[np.int64]


def histogram_distributed(ctx: pp.RunContext[Any], low: float, high: float, grid_size: int) -> IntArray:
    """The counts of :func:`privframe_std.methods.rank_quantile.core.histogram` over a Dask array of records.

    A ``DataError`` (before anything is released) when any record is not finite, as in memory.
    """
    source = ctx.distributed
    if source is None or len(source.shape) != 1:
        raise ConfigError("needs one-dimensional distributed data", path="x")
    darray: Any = importlib.import_module("dask.array")  # the dask extra; only reached with a Dask array in hand
    width = 2 * grid_size + 2
    per_chunk = source.array.map_blocks(
        _chunk_counts,
        low,
        high,
        grid_size,
        dtype=np.int64,
        meta=np.empty((0, 0), dtype=np.int64),
        chunks=((1,) * source.array.numblocks[0], (width,)),
        new_axis=1,
    )
    totals = np.asarray(darray.sum(per_chunk, axis=0, split_every=8).compute(), dtype=np.int64)
    if totals[-1] > 0:
        raise DataError("the data must be finite (no NaN or infinite values)", path="x")
    counts: IntArray = totals[:-1]
    return counts


def _chunk_counts(chunk: Any, low: float, high: float, grid_size: int) -> IntArray:
    """On a worker: one row, the chunk's counts then its number of records that are not finite."""
    from privframe_std.methods.rank_quantile.core import histogram

    values = np.ascontiguousarray(chunk, dtype=np.float64).ravel()
    finite = np.isfinite(values)
    row = np.zeros((1, 2 * grid_size + 2), dtype=np.int64)
    row[0, -1] = int(values.size - np.count_nonzero(finite))
    if row[0, -1] == 0:
        row[0, :-1] = histogram(values, low, high, grid_size)
    return row
