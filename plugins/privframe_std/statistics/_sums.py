"""The compiled pass of the mean's resample sums: gathered and summed in place, per data block and row.

Imported on first use by :func:`privframe_std.statistics._decompose.decomposed_batch` (it brings in numba).
"""

from __future__ import annotations

from typing import Any

from privframe_std._compiled import compiled

__all__ = ["block_row_sums"]


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
