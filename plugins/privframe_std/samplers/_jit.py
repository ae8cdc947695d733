"""The compiled loops of the standard samplers (numba), imported on first use by ``_kernels``, ``_blocks``
and ``bootstrap``.

The loops take their randomness as 64-bit words drawn by numpy's ``Generator`` and turn each 32-bit half into
a value of ``range(size)`` by Lemire's multiply-shift with rejection, which is exactly uniform. A ``wor`` row's
values are kept in a bitmap of the data block, one bit per value; writing the row sorted is a scan of the
bitmap's set bits, so no comparison sort is needed. A ``wr`` row is written in the order drawn while a counter
per value finds its largest multiplicity. The multinomial-count loops (BLBQuant's weights) need several
words per count vector, and step an SFC64 stream seeded from the ``Generator`` themselves instead.
"""

from __future__ import annotations

from typing import Any

import numba
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


@numba.njit(inline="always")
def _take_word(bitmap: Any, word: int, words: int, size: int, complement: bool) -> Any:
    """Word ``word`` of ``bitmap`` (of ``words`` words for ``size`` values), cleared in the bitmap; with
    ``complement`` its clear bits instead, none beyond ``size``: the bits a scan of the row reads."""
    bits = bitmap[word]
    bitmap[word] = 0
    if complement:
        bits = ~bits
        if word == words - 1 and size & 63:
            bits &= (ONE << np.uint64(size & 63)) - ONE
    return bits


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
        bits = _take_word(bitmap, word, words, size, complement)
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
def mark_value(half_word: Any, scale: Any, limit: Any, bitmap: Any, rank_of: Any = None) -> Any:
    """Mark the value a 32-bit ``half_word`` gives in ``range(scale)`` in ``bitmap``; 1 where it is new.

    The value is ``(half_word * scale) >> 32``, rejected (0, nothing marked) where ``(half_word * scale) mod
    2^32 < limit`` (``limit = 2^32 mod scale``): exactly uniform values, as numpy's bounded integers. With
    ``rank_of``, its rank ``rank_of[value]`` is marked instead.
    """
    product = half_word * scale
    if (product & LOW32) < limit:
        return np.int64(0)
    value = product >> HALF
    if rank_of is not None:
        value = np.uint64(rank_of[np.int64(value)])
    slot = value >> np.uint64(6)
    bit = ONE << (value & np.uint64(63))
    old = bitmap[slot]
    bitmap[slot] = old | bit
    return np.int64((old & bit) == 0)


@numba.njit(inline="always")
def _take_distinct(
    words: Any, used: int, found: int, need: int, scale: Any, limit: Any, bitmap: Any, rank_of: Any = None
) -> tuple[int, int]:
    """Mark values from ``words[used:]`` until ``need`` distinct ones are found or the words run out:
    ``(used, found)`` after (the loop of :func:`distinct_prefix_rows`, :func:`distinct_prefix_sums` and
    :func:`distinct_prefix_sorted`). With ``rank_of`` each value's rank ``rank_of[v]`` is marked instead of v:
    the same halves accepted and the same ones new (``rank_of`` is a permutation), so the same words are used
    the same way. (``rank_of is None`` is decided when the loop is compiled, not per value.)"""
    available = words.shape[0]
    while found < need and used < available:
        word = words[used]
        used += 1
        for half in range(2):
            if found == need:
                break
            found += mark_value(word & LOW32 if half == 0 else word >> HALF, scale, limit, bitmap, rank_of)
    return used, found


@numba.njit(inline="always")
def _clear_counted(counter: Any, values: Any, at: int, need: int, base: Any, top: Any) -> Any:
    """Zero the counters of ``values[at:at + need]`` (each ``base`` plus a value) and return the row's largest
    multiplicity: ``top``, or an exact recount by sorting where an 8-bit counter may have wrapped."""
    for j in range(at, at + need):
        counter[values[j] - base] = 0
    if top >= 255:
        ordered = np.sort(values[at : at + need])
        top = 1
        run = 1
        for j in range(1, need):
            run = run + 1 if ordered[j] == ordered[j - 1] else 1
            top = max(top, run)
    return top


@compiled
def sum_bits(bitmap: Any, size: int, x: Any, start: int, complement: bool) -> float:
    """The sum of ``x[start + v]`` over the set values v of ``bitmap`` (or, with ``complement``, the clear ones)
    below ``size``, in increasing order from 0.0; clear the bitmap. :func:`emit_bits` without the indices:
    the values it would write, read where they stand."""
    words = (size + 63) >> 6
    total = 0.0
    for word in range(words):
        bits = _take_word(bitmap, word, words, size, complement)
        base = start + (word << 6)
        while bits:
            total += x[base + np.int64(trailing_zeros(bits))]
            bits &= bits - ONE
    return total


@compiled
def distinct_prefix_sums(
    words: Any,
    k: Any,
    complement: Any,
    start: int,
    size: int,
    x: Any,
    sums: Any,
    bitmap: Any,
    threshold: int,
    progress: Any,
) -> int:
    """:func:`distinct_prefix_rows` with ``sums[r]`` = the sum of ``x`` over row r's values in place of the
    row: the same words used the same way (:func:`_take_distinct`), so the same rows; returns the number of
    words used. (A kernel of its own: one kernel with a branch per row for the two cases measured 2-6%
    slower on the sums.)"""
    scale = np.uint64(size)
    limit = np.uint64(threshold)
    used = 0
    row = progress[0]
    found = progress[1]
    while row < k.shape[0]:
        need = k[row]
        used, found = _take_distinct(words, used, found, need, scale, limit, bitmap)
        if found < need:  # the words ran out mid-row
            progress[0] = row
            progress[1] = found
            return used
        sums[row] = sum_bits(bitmap, size, x, start, complement[row])
        row += 1
        found = 0
    progress[0] = row
    progress[1] = 0
    return used


@numba.njit(inline="always")
def _emit_sorted(bitmap: Any, size: int, sorted_x: Any, out: Any, complement: bool) -> None:
    """Write ``sorted_x[p]`` for the set ranks p of ``bitmap`` (or, with ``complement``, the clear ones) below
    ``size`` to ``out`` in increasing p, hence ascending; clear the bitmap."""
    words = (size + 63) >> 6
    at = 0
    for word in range(words):
        bits = _take_word(bitmap, word, words, size, complement)
        base = word << 6
        while bits:
            out[at] = sorted_x[base + np.int64(trailing_zeros(bits))]
            at += 1
            bits &= bits - ONE


@compiled
def distinct_prefix_sorted(
    words: Any,
    k: Any,
    complement: Any,
    size: int,
    rank_of: Any,
    sorted_x: Any,
    out: Any,
    bitmap: Any,
    threshold: int,
    progress: Any,
) -> int:
    """:func:`distinct_prefix_rows` over one whole data block (``start = 0``, rows of one length), writing
    each row's values ascending, ``out[r] = sorted_x[rank_of[row r]]`` sorted, in place of its indices.

    ``rank_of`` is the permutation that sorts the block (``sorted_x[rank_of[v]] = x[v]``): the row's ranks are
    marked in the bitmap as the values are drawn (:func:`_take_distinct` with ``rank_of``, the same words used the same
    way), and the scan of the bitmap reads ``sorted_x`` in increasing rank, so no row is gathered or sorted.
    (Marking the values and moving them to ranks after, which reads ``rank_of`` in order, measured 1.4x slower
    at n = 5e4 and no faster end to end at n = 1e6, where the 4 MB table misses the cache either way.)
    """
    scale = np.uint64(size)
    limit = np.uint64(threshold)
    used = 0
    row = progress[0]
    found = progress[1]
    while row < k.shape[0]:
        need = k[row]
        used, found = _take_distinct(words, used, found, need, scale, limit, bitmap, rank_of)
        if found < need:  # the words ran out mid-row
            progress[0] = row
            progress[1] = found
            return used
        _emit_sorted(bitmap, size, sorted_x, out[row], complement[row])
        row += 1
        found = 0
    progress[0] = row
    progress[1] = 0
    return used


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
    row = progress[0]
    found = progress[1]
    while row < k.shape[0]:
        need = k[row]
        used, found = _take_distinct(words, used, found, need, scale, limit, bitmap)
        if found < need:  # the words ran out mid-row
            progress[0] = row
            progress[1] = found
            return used
        length = size - need if complement[row] else need
        emit_bits(bitmap, size, out, offsets[row], offsets[row] + length, start, complement[row])
        row += 1
        found = 0
    progress[0] = row
    progress[1] = 0
    return used


@compiled
def iid_rows(
    words: Any,
    counts: Any,
    bases: Any,
    sizes: Any,
    thresholds: Any,
    out: Any,
    offsets: Any,
    counter: Any,
    most: Any,
    progress: Any,
) -> int:
    """Row r takes ``counts[r]`` values of ``range(sizes[r])`` from ``words`` (as in
    :func:`distinct_prefix_rows`, with ``thresholds[r] = 2^32 mod sizes[r]``), writes them plus ``bases[r]``
    to ``out[offsets[r]:]`` in the order drawn and its largest multiplicity to ``most[r]``.

    ``counter`` (``uint8``, at least ``max(sizes)`` long, zero on entry and on return) counts each value's
    copies as it is drawn; the running maximum is the multiplicity check, with no branch on repeats and no
    sort. A row whose maximum reaches 255 (a counter may have wrapped) is counted again exactly by sorting it:
    only rows far longer than their range get there. ``progress`` holds (row, values taken in it, largest
    multiplicity so far); returns the number of words used.
    """
    used = 0
    available = words.shape[0]
    row = progress[0]
    taken = progress[1]
    top = progress[2]
    while row < counts.shape[0]:
        need = counts[row]
        at = offsets[row]
        base = bases[row]
        scale = np.uint64(sizes[row])
        limit = np.uint64(thresholds[row])
        while taken < need:
            if used == available:
                progress[0] = row
                progress[1] = taken
                progress[2] = top
                return used
            word = words[used]
            used += 1
            for half in range(2):
                if taken == need:
                    break
                product = (word & LOW32 if half == 0 else word >> HALF) * scale
                if (product & LOW32) >= limit:
                    value = np.int64(product >> HALF)
                    copies = np.int64(counter[value]) + 1
                    counter[value] = copies
                    top = max(top, copies)
                    out[at + taken] = base + value
                    taken += 1
        most[row] = _clear_counted(counter, out, at, need, base, top)
        row += 1
        taken = 0
        top = 0
    progress[0] = row
    progress[1] = 0
    progress[2] = 0
    return used


@compiled
def iid_row_sums(
    words: Any,
    counts: Any,
    bases: Any,
    sizes: Any,
    thresholds: Any,
    x: Any,
    sums: Any,
    row: Any,
    counter: Any,
    most: Any,
    progress: Any,
) -> int:
    """:func:`iid_rows` with ``sums[r]`` = the sum of ``x`` over row r's values (plus ``bases[r]``) in place of
    the row: the same words used the same way, so the same values and the same ``most``. (A kernel of its
    own: :func:`iid_rows` with a branch for the sums measured 1.5-1.7x slower on them.) ``row`` (at least
    ``max(counts)`` long) holds the row being drawn (``bases[r]`` plus each value), for its counters and an
    exact recount (:func:`_clear_counted`); ``progress`` as
    in :func:`iid_rows`, and ``sums[r]`` keeps the running sum of the row where the words ran out. Returns the
    number of words used."""
    used = 0
    available = words.shape[0]
    r = progress[0]
    taken = progress[1]
    top = progress[2]
    total = sums[r] if taken else 0.0
    while r < counts.shape[0]:
        need = counts[r]
        base = bases[r]
        scale = np.uint64(sizes[r])
        limit = np.uint64(thresholds[r])
        while taken < need:
            if used == available:
                progress[0] = r
                progress[1] = taken
                progress[2] = top
                sums[r] = total
                return used
            word = words[used]
            used += 1
            for half in range(2):
                if taken == need:
                    break
                product = (word & LOW32 if half == 0 else word >> HALF) * scale
                if (product & LOW32) >= limit:
                    value = np.int64(product >> HALF)
                    copies = np.int64(counter[value]) + 1
                    counter[value] = copies
                    top = max(top, copies)
                    row[taken] = base + value
                    total += x[base + value]
                    taken += 1
        most[r] = _clear_counted(counter, row, 0, need, base, top)
        sums[r] = total
        r += 1
        taken = 0
        top = 0
        total = 0.0
    progress[0] = r
    progress[1] = 0
    progress[2] = 0
    return used


@compiled
def block_cuts(index: Any, block: int, cuts: Any) -> bool:
    """Where each row of ``index`` enters each data block of ``block`` records: ``cuts[r, j]`` is the position
    of row r's first index at or past ``j * block`` and ``cuts[r, -1]`` the row's length, in one pass.

    Returns False as soon as a row is not in block order (an index in an earlier block than the one before
    it); ``cuts`` is then unspecified. Indices must lie in ``range((cuts.shape[1] - 1) * block)``.
    """
    rows, m = index.shape
    blocks = cuts.shape[1] - 1
    for r in range(rows):
        j = 0
        low = 0
        high = block
        cuts[r, 0] = 0
        for i in range(m):
            value = index[r, i]
            if value >= high:
                while value >= high and j < blocks - 1:
                    j += 1
                    cuts[r, j] = i
                    low = high
                    high += block
            elif value < low:
                return False
        for later in range(j + 1, blocks + 1):
            cuts[r, later] = m
    return True


# SFC64 (Chris Doty-Humphrey's Small Fast Chaotic generator), word for word as numpy's ``SFC64`` computes it.
# The state is (a, b, c, counter); a word is ``a + b + counter``. The loops below keep it in registers.
SHIFT_A = np.uint64(11)
SHIFT_B = np.uint64(3)
ROTATE_C = np.uint64(24)
ROTATE_C_BACK = np.uint64(40)
SEED_ROUNDS = 12
LOW16 = np.uint64(0xFFFF)
SIXTEEN = np.uint64(16)


@numba.njit(inline="always")
def sfc64_next(a: Any, b: Any, c: Any, counter: Any) -> Any:
    """One SFC64 step: ``(word, a, b, c, counter)`` after it (numpy's ``sfc64_next``)."""
    word = a + b + counter
    return word, b ^ (b >> SHIFT_A), c + (c << SHIFT_B), ((c << ROTATE_C) | (c >> ROTATE_C_BACK)) + word, counter + ONE


@compiled
def sfc64_seed(seed: Any, state: Any) -> None:
    """``state`` = SFC64 seeded with the three words of ``seed`` as numpy's ``sfc64_set_seed`` does: (a, b, c)
    = seed, counter 1, then twelve words discarded."""
    a, b, c, counter = seed[0], seed[1], seed[2], ONE
    for _ in range(SEED_ROUNDS):
        _, a, b, c, counter = sfc64_next(a, b, c, counter)
    state[0], state[1], state[2], state[3] = a, b, c, counter


@compiled
def sfc64_words(state: Any, out: Any) -> None:
    """The stream's next ``out.size`` words into ``out``, advancing ``state``."""
    a, b, c, counter = state[0], state[1], state[2], state[3]
    for i in range(out.shape[0]):
        out[i], a, b, c, counter = sfc64_next(a, b, c, counter)
    state[0], state[1], state[2], state[3] = a, b, c, counter


@compiled
def add_uniform_stream(state: Any, counts: Any, missing: Any, bits: int, threshold: int) -> None:
    """Row r of ``counts`` (k columns) gains one count in each of ``missing[r]`` uniform cells of ``range(k)``.

    The cells come from ``bits``-bit pieces of the SFC64 words of ``state`` (lowest first) by Lemire's
    multiply-shift with rejection (``threshold = 2^bits mod k``), a row starting on a fresh word.
    """
    a, b, c, counter = state[0], state[1], state[2], state[3]
    scale = np.uint64(counts.shape[1])
    limit = np.uint64(threshold)
    width = np.uint64(bits)
    mask = (ONE << width) - ONE
    per_word = 64 // bits
    for row in range(counts.shape[0]):
        need = missing[row]
        added = 0
        while added < need:
            word, a, b, c, counter = sfc64_next(a, b, c, counter)
            for _ in range(per_word):
                if added == need:
                    break
                product = (word & mask) * scale
                word >>= width
                if (product & mask) >= limit:
                    counts[row, np.int64(product >> width)] += 1.0
                    added += 1
    state[0], state[1], state[2], state[3] = a, b, c, counter


@compiled
def table_counts(state: Any, table: Any, counts: Any, sums: Any, ambiguous: Any, prefixes: Any) -> int:
    """``counts[r, i] = table[p]`` for the cells' 16-bit pieces p of the SFC64 words of ``state`` (four a word,
    lowest first, in row-major order), with row sums in ``sums``. Where the table holds NaN the cell gets
    ``-(p + 1)``, stays out of the sums, and (while there is room) its flat position goes to ``ambiguous``
    and p to ``prefixes``. Returns how many such cells there are, listed or not."""
    a, b, c, counter = state[0], state[1], state[2], state[3]
    rows, k = counts.shape
    found = 0
    word = np.uint64(0)
    left = 0
    for r in range(rows):
        total = 0.0
        for i in range(k):
            if left == 0:
                word, a, b, c, counter = sfc64_next(a, b, c, counter)
                left = 4
            piece = word & LOW16
            word >>= SIXTEEN
            left -= 1
            value = table[piece]
            if value == value:
                counts[r, i] = value
                total += value
            else:
                counts[r, i] = -1.0 - np.float64(piece)
                if found < ambiguous.shape[0]:
                    ambiguous[found] = r * k + i
                    prefixes[found] = piece
                found += 1
        sums[r] = total
    state[0], state[1], state[2], state[3] = a, b, c, counter
    return found
