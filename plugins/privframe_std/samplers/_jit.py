"""The compiled loops behind :mod:`privframe_std.samplers._kernels` (numba; imported on first use only).

A row's values are kept in a bitmap of the data block, one bit per value; writing the row sorted is a scan of
the bitmap's set bits, so no comparison sort is needed. The loops draw nothing: their randomness comes in as
arguments drawn by numpy's ``Generator``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.cpython.unsafe import numbers

from privframe_std._compiled import compiled

ONE = np.uint64(1)
trailing_zeros: Any = numbers.trailing_zeros  # count of trailing zero bits (an LLVM intrinsic)


@compiled
def emit_bits(bitmap: Any, size: int, out: Any, at: int, start: int, complement: bool) -> int:
    """Write the set values of ``bitmap`` (or, with ``complement``, the clear ones) below ``size`` in
    increasing order, plus ``start``, to ``out[at:]``; clear the bitmap; return the position after the last."""
    words = (size + 63) >> 6
    for word in range(words):
        bits = bitmap[word]
        bitmap[word] = 0
        if complement:
            bits = ~bits
            if word == words - 1 and size & 63:
                bits &= (ONE << np.uint64(size & 63)) - ONE
        base = start + (word << 6)
        while bits:
            out[at] = base + np.int64(trailing_zeros(bits))
            at += 1
            bits &= bits - ONE
    return at


@compiled
def distinct_prefix_rows(
    draws: Any, widths: Any, k: Any, complement: Any, start: int, size: int, out: Any, offsets: Any, bitmap: Any
) -> Any:
    """Row r keeps the first ``k[r]`` distinct values among ``draws[r, :widths[r]]`` (values of
    ``range(size)``) and writes them, or their complement in ``range(size)`` where ``complement[r]``, sorted
    and shifted by ``start``, to ``out[offsets[r]:]``. Returns which rows found ``k[r]`` distinct values."""
    rows = draws.shape[0]
    done = np.zeros(rows, dtype=np.bool_)
    for r in range(rows):
        need = k[r]
        found = 0
        j = 0
        width = widths[r]
        while found < need and j < width:
            value = np.int64(draws[r, j])
            j += 1
            word = value >> 6
            bit = ONE << np.uint64(value & 63)
            if not bitmap[word] & bit:
                bitmap[word] |= bit
                found += 1
        if found == need:
            done[r] = True
            emit_bits(bitmap, size, out, offsets[r], start, complement[r])
        else:
            bitmap[:] = 0
    return done


@compiled
def sorted_iid_rows(
    draws: Any, counts: Any, start: int, size: int, out: Any, offsets: Any, bitmap: Any, extra: Any, most: Any
) -> None:
    """Row r: ``draws[r, :counts[r]]`` (values of ``range(size)``) sorted, shifted by ``start``, written to
    ``out[offsets[r]:]``, and its largest multiplicity to ``most[r]``.

    The bitmap marks the values present; ``extra`` (uint8, zero on entry and on return) counts a value's
    copies beyond the first, up to 254, and is touched by repeats only (few, and random access is the
    cost). A row with a value drawn 255 times or more gets ``most[r] = 255`` and a wrong ``out``
    segment, which the caller redoes.
    """
    for r in range(draws.shape[0]):
        for j in range(counts[r]):
            value = np.int64(draws[r, j])
            slot = value >> 6
            bit = ONE << np.uint64(value & 63)
            if bitmap[slot] & bit:
                seen = extra[value]
                extra[value] = seen + (seen < 254)
            else:
                bitmap[slot] |= bit
        at = offsets[r]
        top: Any = 0
        for word in range((size + 63) >> 6):
            bits = bitmap[word]
            bitmap[word] = 0
            base = word << 6
            while bits:
                value = base + np.int64(trailing_zeros(bits))
                more = extra[value]
                extra[value] = 0
                top = max(top, more)
                out[at] = start + value
                at += 1
                while more:
                    out[at] = start + value
                    at += 1
                    more -= 1
                bits &= bits - ONE
        most[r] = top + 1 if counts[r] else 0


@compiled
def add_uniform_counts(counts: Any, missing: Any, cells: Any) -> None:
    """Row r of ``counts`` gains one count in each of the next ``missing[r]`` cells of ``cells`` (in order)."""
    at = 0
    for r in range(counts.shape[0]):
        for _ in range(missing[r]):
            counts[r, cells[at]] += 1.0
            at += 1


@compiled
def table_counts(prefix: Any, table: Any, counts: Any, sums: Any, ambiguous: Any) -> int:
    """``counts[r, i] = table[prefix[r k + i]]`` with row sums in ``sums``; entries where the table holds NaN
    are left NaN, out of the sums, and their flat positions listed in ``ambiguous``. Returns how many."""
    rows, k = counts.shape
    found = 0
    for r in range(rows):
        total = 0.0
        for i in range(k):
            value = table[prefix[r * k + i]]
            counts[r, i] = value
            if value == value:
                total += value
            else:
                ambiguous[found] = r * k + i
                found += 1
        sums[r] = total
    return found
