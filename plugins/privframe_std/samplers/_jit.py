"""The compiled loops behind :mod:`privframe_std.samplers._kernels` (numba; imported on first use only).

The loops take their randomness as 64-bit words drawn by numpy's ``Generator`` and turn each 32-bit half into
a value of ``range(size)`` by Lemire's multiply-shift with rejection, which is exactly uniform. A row's values
are kept in a bitmap of the data block, one bit per value; writing the row sorted is a scan of the bitmap's
set bits, so no comparison sort is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.core import types
from numba.cpython.unsafe import numbers
from numba.extending import intrinsic

from privframe_std._compiled import compiled

ONE = np.uint64(1)
LOW32 = np.uint64(0xFFFFFFFF)
HALF = np.uint64(32)
trailing_zeros: Any = numbers.trailing_zeros  # count of trailing zero bits (64 for zero; an LLVM intrinsic)


@intrinsic
def _popcount(typingctx: Any, word: Any) -> Any:
    """The number of set bits of an unsigned integer (LLVM's ``ctpop``)."""
    if not isinstance(word, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return word(word), codegen


popcount: Any = _popcount


@compiled
def emit_bits(bitmap: Any, size: int, out: Any, at: Any, end: int, start: int, complement: bool) -> Any:
    """Write the set values of ``bitmap`` (or, with ``complement``, the clear ones) below ``size`` in
    increasing order, plus ``start``, to ``out[at:end]``; clear the bitmap; return the position after the last.

    ``end - at`` must be the number of values written. While eight slots are left, a word's first eight
    values are written without a test per value (surplus slots get junk that the next words overwrite):
    one branch per word instead of one mispredicted loop exit.
    """
    words = (size + 63) >> 6
    for word in range(words):
        bits = bitmap[word]
        bitmap[word] = 0
        if complement:
            bits = ~bits
            if word == words - 1 and size & 63:
                bits &= (ONE << np.uint64(size & 63)) - ONE
        base = start + (word << 6)
        if at + 8 <= end:
            count = np.int64(popcount(bits))
            for i in range(8):
                out[at + i] = base + np.int64(trailing_zeros(bits))
                bits &= bits - ONE
            tail = at + 8
            while bits:
                out[tail] = base + np.int64(trailing_zeros(bits))
                tail += 1
                bits &= bits - ONE
            at += count
        else:
            while bits:
                out[at] = base + np.int64(trailing_zeros(bits))
                at += 1
                bits &= bits - ONE
    return at


@compiled
def distinct_prefix_rows(
    words: Any,
    k: Any,
    complement: Any,
    start: int,
    size: int,
    out: Any,
    offsets: Any,
    bitmap: Any,
    threshold: int,
    progress: Any,
) -> int:
    """Row r takes values of ``range(size)`` from ``words`` until it has ``k[r]`` distinct ones and writes
    them, or their complement in ``range(size)`` where ``complement[r]``, sorted and shifted by ``start``, to
    ``out[offsets[r]:]``.

    A 32-bit half x of a word gives ``(x * size) >> 32`` unless ``(x * size) mod 2^32 < threshold``
    (``threshold = 2^32 mod size``), when it is rejected: exactly uniform values. A row starts on a fresh
    word. ``progress`` holds (row, values found in it): where to resume. When the words run out the loop
    stores its place there and returns; the caller passes fresh words and the row goes on where it stopped.
    Returns the number of words used.
    """
    scale = np.uint64(size)
    limit = np.uint64(threshold)
    used = 0
    available = words.shape[0]
    row = progress[0]
    found = progress[1]
    while row < k.shape[0]:
        need = k[row]
        while found < need:
            if used == available:
                progress[0] = row
                progress[1] = found
                return used
            word = words[used]
            used += 1
            for half in range(2):
                if found == need:
                    break
                product = (word & LOW32 if half == 0 else word >> HALF) * scale
                if (product & LOW32) >= limit:
                    value = product >> HALF
                    slot = value >> np.uint64(6)
                    bit = ONE << (value & np.uint64(63))
                    old = bitmap[slot]
                    bitmap[slot] = old | bit
                    found += np.int64((old & bit) == 0)
        length = size - need if complement[row] else need
        emit_bits(bitmap, size, out, offsets[row], offsets[row] + length, start, complement[row])
        row += 1
        found = 0
    progress[0] = row
    progress[1] = 0
    return used


@compiled
def sorted_iid_rows(
    words: Any,
    counts: Any,
    start: int,
    size: int,
    out: Any,
    offsets: Any,
    bitmap: Any,
    repeated: Any,
    extra: Any,
    most: Any,
    threshold: int,
    progress: Any,
) -> int:
    """Row r takes ``counts[r]`` values of ``range(size)`` from ``words`` (as in
    :func:`distinct_prefix_rows`), writes them sorted and shifted by ``start`` to ``out[offsets[r]:]``
    and its largest multiplicity to ``most[r]``.

    The bitmap marks the values present; ``repeated`` (a second bitmap) marks values drawn more than once
    and ``extra`` counts their copies beyond the first. Both are touched by repeats only (few, and random
    access is the cost), zero on entry and on return. A word of the bitmap without repeats is written as in
    :func:`emit_bits`. ``progress`` holds (row, values taken in it); returns the number of words used.
    """
    scale = np.uint64(size)
    limit = np.uint64(threshold)
    used = 0
    available = words.shape[0]
    row = progress[0]
    taken = progress[1]
    while row < counts.shape[0]:
        need = counts[row]
        while taken < need:
            if used == available:
                progress[0] = row
                progress[1] = taken
                return used
            word = words[used]
            used += 1
            for half in range(2):
                if taken == need:
                    break
                product = (word & LOW32 if half == 0 else word >> HALF) * scale
                if (product & LOW32) >= limit:
                    value = np.int64(product >> HALF)
                    cell = value >> 6
                    bit = ONE << np.uint64(value & 63)
                    old = bitmap[cell]
                    if old & bit:
                        repeated[cell] |= bit
                        extra[value] += 1
                    bitmap[cell] = old | bit
                    taken += 1
        at = offsets[row]
        end = at + need
        top: Any = 0
        for slot in range((size + 63) >> 6):
            bits = bitmap[slot]
            bitmap[slot] = 0
            base = start + (slot << 6)
            repeats = repeated[slot]
            # The same unrolled write as in emit_bits, written out: a shared compiled helper measured 4-14%
            # slower in both loops (numba does not inline it as well as the code in place).
            if repeats == 0 and at + 8 <= end:
                count = np.int64(popcount(bits))
                for i in range(8):
                    out[at + i] = base + np.int64(trailing_zeros(bits))
                    bits &= bits - ONE
                tail = at + 8
                while bits:
                    out[tail] = base + np.int64(trailing_zeros(bits))
                    tail += 1
                    bits &= bits - ONE
                at += count
                continue
            repeated[slot] = 0
            while bits:
                offset = np.int64(trailing_zeros(bits))
                out[at] = base + offset
                at += 1
                if repeats & (ONE << np.uint64(offset)):
                    value = (slot << 6) + offset
                    more = np.int64(extra[value])
                    extra[value] = 0
                    top = max(top, more)
                    for _ in range(more):
                        out[at] = base + offset
                        at += 1
                bits &= bits - ONE
        most[row] = top + 1 if need else 0
        row += 1
        taken = 0
    progress[0] = row
    progress[1] = 0
    return used


@compiled
def add_uniform_words(counts: Any, missing: Any, words: Any, bits: int, threshold: int, progress: Any) -> int:
    """Row r of ``counts`` (k columns) gains one count in each of ``missing[r]`` uniform cells of ``range(k)``.

    The cells come from ``bits``-bit pieces of ``words`` (lowest first) by Lemire's multiply-shift with
    rejection (``threshold = 2^bits mod k``), a row starting on a fresh word; ``progress`` holds (row,
    cells added in it) for resuming when the words run out. Returns the number of words used.
    """
    scale = np.uint64(counts.shape[1])
    limit = np.uint64(threshold)
    width = np.uint64(bits)
    mask = (ONE << width) - ONE
    per_word = 64 // bits
    used = 0
    available = words.shape[0]
    row = progress[0]
    added = progress[1]
    while row < counts.shape[0]:
        need = missing[row]
        while added < need:
            if used == available:
                progress[0] = row
                progress[1] = added
                return used
            word = words[used]
            used += 1
            for _ in range(per_word):
                if added == need:
                    break
                product = (word & mask) * scale
                word >>= width
                if (product & mask) >= limit:
                    counts[row, np.int64(product >> width)] += 1.0
                    added += 1
        row += 1
        added = 0
    progress[0] = row
    progress[1] = 0
    return used


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
