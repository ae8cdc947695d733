"""Sorted rows from i.i.d. uniform draws: typed entry points to the compiled loops of ``_jit``.

The loops use no randomness of their own: every random number is drawn by numpy's ``Generator`` before the
call, so a seed defines the rows. ``_jit`` (and numba) load on the first call, compiled code is cached on
disk, so ``import privframe`` never loads numba.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt

__all__ = ["distinct_prefix_rows", "sorted_iid_rows"]

IntArray = npt.NDArray[np.integer[Any]]


def _bitmap(size: int) -> npt.NDArray[np.uint64]:
    return np.zeros((size + 63) >> 6, dtype=np.uint64)


def distinct_prefix_rows(
    draws: IntArray,
    widths: IntArray,
    k: IntArray,
    complement: npt.NDArray[np.bool_],
    start: int,
    stop: int,
    out: IntArray,
    offsets: IntArray,
) -> npt.NDArray[np.bool_]:
    """Row r keeps the first ``k[r]`` distinct values among ``draws[r, :widths[r]]``, sorted.

    ``draws`` holds values of ``range(stop - start)``. A row that finds ``k[r]`` distinct values writes
    them, or where ``complement[r]`` the other ``stop - start - k[r]`` values of the block, each plus
    ``start``, to ``out[offsets[r]:]``; the others write nothing. Returns which rows succeeded.
    """
    from privframe_std.samplers import _jit

    size = stop - start
    done = _jit.distinct_prefix_rows(draws, widths, k, complement, start, size, out, offsets, _bitmap(size))
    return cast(npt.NDArray[np.bool_], done)


def sorted_iid_rows(draws: IntArray, counts: IntArray, start: int, stop: int) -> tuple[IntArray, IntArray]:
    """Row r's first ``counts[r]`` draws (values of ``range(stop - start)``) sorted, plus ``start``.

    Returns the rows concatenated (as ``intp``) and each row's largest multiplicity.
    """
    from privframe_std.samplers import _jit

    size = stop - start
    offsets = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), dtype=np.intp)
    most = np.empty(counts.size, dtype=np.int64)
    _jit.sorted_iid_rows(draws, counts, start, size, out, offsets, _bitmap(size), np.zeros(size, np.uint8), most)
    for r in np.flatnonzero(most == 255):  # a value drawn 255 times or more: the kernel's counts saturated
        row = np.sort(draws[r, : counts[r]]).astype(np.intp) + start
        out[offsets[r] : offsets[r] + counts[r]] = row
        most[r] = int(np.unique(row, return_counts=True)[1].max())
    return out, most
