"""The compiled pass of the mean's resample sums: gathered and summed in place, per data block and row.

Imported on first use by :func:`privframe_std.statistics._decompose.decomposed_batch` (it brings in numba).
"""

from __future__ import annotations

from typing import Any

from privframe_std._compiled import compiled

__all__ = ["block_row_sums", "grouped_row_sums"]


@compiled
def block_row_sums(x: Any, index: Any, cuts: Any, out: Any) -> None:
    """``out[j, r]`` = the sum of ``x[index[r, i]]`` over ``cuts[r, j] <= i < cuts[r, j + 1]``, in one pass.

    No gathered copy is made. The sum runs left to right, so it equals numpy's pairwise sum of the gathered
    values wherever both are exact, as they are for values on the mean's public grid in runs shorter than
    :data:`~privframe_std.statistics._decompose.EXACT_RUN` (every data block is).
    """
    rows = index.shape[0]
    blocks = cuts.shape[1] - 1
    for r in range(rows):
        for j in range(blocks):
            total = 0.0
            for i in range(cuts[r, j], cuts[r, j + 1]):
                total += x[index[r, i]]
            out[j, r] = total


@compiled
def grouped_row_sums(x: Any, index: Any, begin: Any, end: Any, start: int, stop: int, step: int, out: Any) -> None:
    """``out[r]`` = the sum of ``x[index[i]]`` over ``begin[r] <= i < end[r]``, each row's indices ascending
    within ``[start, stop)``, taken ``step`` records of ``x`` at a time for all rows.

    Every row advances through one stretch of ``x`` before any row goes on to the next, so that stretch stays
    in the core's cache while all rows read it. Each row still sums left to right, as
    :func:`block_row_sums` does: the same doubles.
    """
    rows = begin.shape[0]
    position = begin.copy()
    for r in range(rows):
        out[r] = 0.0
    edge = start
    while edge < stop:
        edge = min(edge + step, stop)
        for r in range(rows):
            at = position[r]
            last = end[r]
            total = out[r]
            while at < last and index[at] < edge:
                total += x[index[at]]
                at += 1
            position[r] = at
            out[r] = total
