"""Rows of uniform values of a data block (sorted subsets, i.i.d. values): entry points to ``_jit``'s loops.

The row loops draw nothing themselves: they take 64-bit words drawn by numpy's ``Generator`` (full-range
``integers``, so any bit generator works) and turn each 32-bit half into an exactly uniform value. How many
words a call takes is a function of the counts only, so a seed defines the rows. The uniform fill of
multinomial counts steps an SFC64 stream seeded with three of the Generator's words (:func:`fast_stream`).
``_jit`` (and numba) load on the first call and compiled code is cached on disk, so ``import privframe``
never loads numba; small :func:`distinct_subsets` calls before that take a numpy path with the same rows.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError

__all__ = [
    "add_uniform",
    "distinct_subsets",
    "distinct_subset_sorted_values",
    "distinct_subset_sums",
    "fast_stream",
    "iid_value_sums",
    "iid_values",
    "lemire_threshold",
    "random_words",
    "SUB_BLOCK",
    "words_for_iid",
    "words_for_subsets",
]

IntArray = npt.NDArray[np.integer[Any]]

MAX_BLOCK = 2**32
"""Values come from 32-bit halves of the words: a block must have fewer values than this."""


def random_words(rng: np.random.Generator, count: int) -> npt.NDArray[np.uint64]:
    """``count`` uniform 64-bit words (the bit generator's raw output for PCG64).

    For PCG64 (numpy's default) the words are read with ``random_raw``, which releases the GIL while it
    fills the array (``integers`` over the full range holds it, so threads drawing words took turns); both
    give the same words and leave the generator in the same state. Other bit generators (MT19937's raw
    output is 32-bit) go through ``integers``.
    """
    bit_generator = rng.bit_generator
    if type(bit_generator) is np.random.PCG64:
        words: npt.NDArray[np.uint64] = bit_generator.random_raw(count)
        return words
    return rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)


def lemire_threshold(size: int, bits: int = 32) -> int:
    """``2^bits mod size``: a ``bits``-bit x is rejected when ``(x * size) mod 2^bits`` is below it (Lemire, 2019)."""
    if not 0 < size < 1 << bits:
        raise ConfigError(f"a range of 1 to 2^{bits} - 1 values is needed; got {size}", path="size")
    return ((1 << bits) - size) % size


def words_for_subsets(k: IntArray, size: int) -> int:
    """Words to draw so that rows needing ``k`` distinct values of ``range(size)`` (k <= size / 2) rarely run out.

    A row needs ``sum_{i<k} size / (size - i)`` values on average, about ``size * log(size / (size - k))``,
    with variance about ``size * (size / (size - k) - 1 - log(size / (size - k)))``; two values per word, half
    a word lost per row, and two standard deviations of the total to spare. Running out costs a second call.
    """
    if k.size == 0:
        return 0
    fraction = k.astype(np.float64) / size
    lam = -np.log1p(-fraction)
    mean = size * lam
    variance = size * np.maximum(fraction / (1.0 - fraction) - lam, 0.0)
    return math.ceil(float(mean.sum()) / 2 + k.size / 2 + math.sqrt(float(variance.sum()))) + 1


def words_for_iid(counts: IntArray, size: int) -> int:
    """Words to draw for rows of ``counts`` values of ``range(size)`` taken from the 32-bit halves of each
    word: two values a word, rounded up per row, plus the expected rejections (probability
    ``threshold / 2^32`` each) and four standard deviations."""
    total = int(counts.sum())
    rejected = total * lemire_threshold(size) / float(1 << 32)
    return int(((counts + 1) // 2).sum()) + math.ceil((rejected + 4 * math.sqrt(rejected)) / 2) + 1


_SCRATCH = threading.local()


def _scratch(name: str, size: int, dtype: type[np.integer[Any]]) -> npt.NDArray[Any]:
    """A zeroed scratch array of this thread, kept between calls: the loops leave their scratch zeroed, and
    fresh zeroed memory costs page faults on every call (a 50 KiB counter per block of rows at n = 50 000)."""
    arrays: dict[tuple[str, int], npt.NDArray[Any]] = _SCRATCH.__dict__.setdefault("arrays", {})
    key = (name, size)
    array = arrays.get(key)
    if array is None:
        if len(arrays) >= 8:
            arrays.clear()
        array = arrays[key] = np.zeros(size, dtype=dtype)
    return array


def _bitmap(name: str, size: int) -> npt.NDArray[np.uint64]:
    return _scratch(name, (size + 63) >> 6, np.uint64)


@contextlib.contextmanager
def _clean_on_error(*scratch: npt.NDArray[Any]) -> Iterator[None]:
    """Zero the scratch arrays if the block raises (say, drawing words fails mid-row), so that no later
    call starts from a half-filled bitmap."""
    try:
        yield
    except BaseException:
        for array in scratch:
            array.fill(0)
        raise


NUMPY_PATH_VALUES = 200_000
"""Largest total output (values) of a :func:`distinct_subsets` call that may take the numpy path."""

NUMPY_PATH_ROWS = 2_000
"""Largest number of rows of a :func:`distinct_subsets` call that may take the numpy path."""

NUMPY_PATH_SECONDS = 0.5
"""Time all numpy-path calls of a process may take together; past it numba is loaded (and kept)."""

# Loading numba and ``_jit`` (import, target context, code cached on disk) costs about 0.5 s, once; then a
# call costs about 6 ns a value (0.1 ms for 128 rows of 145 of 1000 values). The numpy path costs about
# 150 ns a value plus 20 us a row, so the limits above keep one call to 30-40 ms, well below the load, and
# NUMPY_PATH_SECONDS (about the load's cost: a process that keeps making small calls loses at most that
# much to the numpy path) decides when to load numba after all.
_numpy_path_seconds = 0.0


def distinct_subsets(
    rng: np.random.Generator,
    k: IntArray,
    complement: npt.NDArray[np.bool_],
    start: int,
    stop: int,
    out: IntArray | None = None,
) -> IntArray:
    """Row r: the first ``k[r]`` distinct values of i.i.d. uniform values of ``range(stop - start)``, or
    where ``complement[r]`` the ``stop - start - k[r]`` values not among them; sorted, plus ``start``.

    Returns the rows concatenated (``intp``), in ``out`` when given (an ``intp`` array of the rows' total
    length, e.g. a slice of a buffer reused across calls). Each row is a uniform subset of its size.

    Notes
    -----
    Two paths give the same rows from the same words: the compiled loop of ``_jit`` and, while numba is not
    loaded in this process and the call is small (:data:`NUMPY_PATH_VALUES`, :data:`NUMPY_PATH_ROWS`;
    :data:`NUMPY_PATH_SECONDS` in all), numpy operations per row, which spare a short process numba's load.
    """
    global _numpy_path_seconds
    if _takes_numpy_path(k, complement, start, stop):
        began = time.perf_counter()
        try:
            rows = _distinct_subsets_numpy(rng, k, complement, start, stop)
        finally:
            _numpy_path_seconds += time.perf_counter() - began
        if out is None:
            return rows
        out = _rows_out(out, rows.size)
        out[:] = rows
        return out
    return _distinct_subsets_compiled(rng, k, complement, start, stop, out)


def _takes_numpy_path(k: IntArray, complement: npt.NDArray[np.bool_], start: int, stop: int) -> bool:
    """Whether :func:`distinct_subsets` takes its numpy path for these rows (numba not loaded, a small call)."""
    return (
        "privframe_std.samplers._jit" not in sys.modules
        and k.size <= NUMPY_PATH_ROWS
        and _numpy_path_seconds < NUMPY_PATH_SECONDS
        and int(np.where(complement, stop - start - k, k).sum()) <= NUMPY_PATH_VALUES
    )


def distinct_subset_sums(
    rng: np.random.Generator,
    k: IntArray,
    complement: npt.NDArray[np.bool_],
    start: int,
    stop: int,
    x: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64] | None:
    """``(rows,)``: row r's sum of ``x[v]`` over the values v that :func:`distinct_subsets` would give row r
    from the same ``rng``, in increasing order from 0.0, with no row written; ``rng`` ends as it would.

    None (and ``rng`` untouched) where :func:`distinct_subsets` would take its numpy path, which spares a
    short process numba's load: the caller draws the rows then.
    """
    if _takes_numpy_path(k, complement, start, stop):
        return None
    sums = np.empty(k.size, dtype=np.float64)
    _run_distinct(rng, k, stop - start, "distinct_prefix_sums", complement, start, stop - start, x, sums)
    return sums


def distinct_subset_sorted_values(
    rng: np.random.Generator,
    k: IntArray,
    complement: npt.NDArray[np.bool_],
    rank_of: npt.NDArray[np.uint32],
    sorted_x: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64] | None:
    """``(rows, length)``: the values ``x[v]`` of the rows :func:`distinct_subsets` would give from the same
    ``rng`` over ``range(size)`` (``size = sorted_x.size``, start 0), each row ascending, with no index row
    written or gathered; ``rng`` ends as it would. The rows must have one length (``k``, or ``size - k``
    where ``complement``).

    ``sorted_x`` is x sorted and ``rank_of`` the permutation with ``sorted_x[rank_of[v]] = x[v]``. None (and
    ``rng`` untouched) where :func:`distinct_subsets` would take its numpy path: the caller draws the rows.
    """
    size = sorted_x.size
    if _takes_numpy_path(k, complement, 0, size):
        return None
    lengths = np.where(complement, size - k, k)
    if lengths.size and np.any(lengths != lengths[0]):
        raise ConfigError("the sorted rows of one call must have one length", path="k")
    out = np.empty((k.size, int(lengths[0]) if lengths.size else 0), dtype=np.float64)
    _run_distinct(rng, k, size, "distinct_prefix_sorted", complement, size, rank_of, sorted_x, out)
    return out


def _rows_out(out: IntArray | None, total: int) -> IntArray:
    """``out`` checked to hold ``total`` intp values, or a fresh array."""
    if out is None:
        return np.empty(total, dtype=np.intp)
    if out.shape != (total,) or out.dtype != np.intp:
        raise ConfigError(f"out must be an intp array of {total} values", path="out")
    return out


def _distinct_subsets_compiled(
    rng: np.random.Generator,
    k: IntArray,
    complement: npt.NDArray[np.bool_],
    start: int,
    stop: int,
    out: IntArray | None = None,
) -> IntArray:
    """:func:`distinct_subsets` by ``_jit.distinct_prefix_rows`` (loads numba)."""
    size = stop - start
    lengths = np.where(complement, size - k, k)
    offsets = np.cumsum(lengths) - lengths
    out = _rows_out(out, int(lengths.sum()))
    _run_distinct(rng, k, size, "distinct_prefix_rows", complement, start, size, out, offsets)
    return out


def _run_distinct(rng: np.random.Generator, k: IntArray, size: int, loop: str, *arguments: object) -> None:
    """Every row drawn over ``range(size)``, words drawn as the loop needs them: ``loop`` names one of
    ``_jit``'s prefix loops (rows, sums or sorted values), called as ``loop(words, k, *arguments, bitmap,
    threshold, progress)``; it resumes a row where the last words ran out."""
    from privframe_std.samplers import _jit

    compiled_loop = getattr(_jit, loop)
    threshold = lemire_threshold(size)
    bitmap = _bitmap("present", size)
    progress = np.zeros(2, dtype=np.int64)
    k64 = k.astype(np.int64, copy=False)
    with _clean_on_error(bitmap):
        while progress[0] < k.size:
            words = random_words(rng, words_for_subsets(k64[progress[0] :], size))
            compiled_loop(words, k64, *arguments, bitmap, threshold, progress)


def _accepted_halves(
    words: npt.NDArray[np.uint64], size: int, threshold: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The values of ``range(size)`` that the 32-bit halves of ``words`` give (low half, then high half, of
    each word) and the positions of those halves (``2 * word + half``); rejected halves left out."""
    halves = np.empty((words.size, 2), dtype=np.uint64)
    np.bitwise_and(words, np.uint64(0xFFFFFFFF), out=halves[:, 0])
    np.right_shift(words, np.uint64(32), out=halves[:, 1])
    product = halves.reshape(-1) * np.uint64(size)  # below 2^64: both factors are below 2^32
    positions = np.flatnonzero((product & np.uint64(0xFFFFFFFF)) >= np.uint64(threshold))
    return (product[positions] >> np.uint64(32)).astype(np.intp), positions


def _distinct_subsets_numpy(
    rng: np.random.Generator, k: IntArray, complement: npt.NDArray[np.bool_], start: int, stop: int
) -> IntArray:
    """:func:`distinct_subsets` by numpy operations per row, without numba: the same rows from the same
    words, drawn by the same calls of :func:`random_words` (so ``rng`` ends in the same state).

    A row looks at a window of the accepted values from its first word on (twice as long while too short):
    the first occurrences of the values not yet found there say where its ``k[r]``-th distinct value falls,
    and the next row starts on the word after. A row that runs past the words keeps what it found and goes
    on in the words of the next draw, as the compiled loop does.
    """
    size = stop - start
    threshold = lemire_threshold(size)
    lengths = np.where(complement, size - k, k)
    offsets = np.cumsum(lengths) - lengths
    out = np.empty(int(lengths.sum()), dtype=np.intp)
    k64 = k.astype(np.int64, copy=False)
    rows = k64.size
    if rows == 0:
        return out
    words = random_words(rng, words_for_subsets(k64, size))
    values, positions = _accepted_halves(words, size, threshold)
    available = words.size
    used = 0  # words of this draw taken by the rows before
    for row in range(rows):
        need = int(k64[row])
        found = np.empty(0, dtype=np.intp)  # sorted
        while found.size < need:
            if used == available:
                words = random_words(rng, words_for_subsets(k64[row:], size))
                values, positions = _accepted_halves(words, size, threshold)
                available = words.size
                used = 0
            first = int(np.searchsorted(positions, 2 * used))
            missing = need - found.size
            # about the accepted values the row needs on average, with some to spare
            mean = size * (math.log(size - found.size) - math.log(max(size - need, 0.5)))
            window = int(1.25 * mean + 4.0 * math.sqrt(mean)) + 16
            while True:
                last = min(first + window, values.size)
                distinct, at = np.unique(values[first:last], return_index=True)
                if found.size:
                    new = ~np.isin(distinct, found, assume_unique=True)
                    distinct, at = distinct[new], at[new]
                if distinct.size >= missing:
                    cut = int(np.partition(at, missing - 1)[missing - 1])
                    chosen = distinct[at <= cut]
                    found = np.union1d(found, chosen) if found.size else chosen
                    used = int(positions[first + cut]) // 2 + 1  # a row ending on a low half skips the high one
                    break
                if last == values.size:
                    found = np.union1d(found, distinct) if found.size else distinct
                    used = available
                    break
                window *= 2
        offset = int(offsets[row])
        if complement[row]:
            absent = np.ones(size, dtype=bool)
            absent[found] = False
            out[offset : offset + size - need] = np.flatnonzero(absent) + start
        else:
            out[offset : offset + need] = found + start
    return out


SUB_BLOCK = 2**16
"""``wr`` splits a larger data block into ranges of this many values: their counters (64 KiB) stay in the
nearest caches, and gathering a row's part of one range reads 512 KiB of doubles instead of the block's 8 MiB."""


def iid_values(rng: np.random.Generator, counts: IntArray, start: int, stop: int) -> tuple[IntArray, IntArray]:
    """Row r: ``counts[r]`` i.i.d. uniform values of ``range(start, stop)``; returns the rows concatenated
    (``intp``) and each row's largest multiplicity (0 for an empty row).

    A range longer than :data:`SUB_BLOCK` is cut into sub-blocks of that size (the last shorter): each row's
    count is split among them by a multinomial draw with probabilities proportional to their sizes (the law
    of the sub-block counts of i.i.d. uniform values), then each sub-block's values are drawn i.i.d. uniform
    in it. A row holds its sub-blocks' values in sub-block order, each in the order drawn.
    """
    pieces = _IidPieces.draw(rng, counts, start, stop)
    offsets = np.cumsum(pieces.counts) - pieces.counts
    out = np.empty(int(pieces.counts.sum()), dtype=np.intp)
    most = pieces.run(rng, out, offsets, None, None)
    return out, most


def iid_value_sums(
    rng: np.random.Generator, counts: IntArray, start: int, stop: int, x: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], IntArray]:
    """Row r's sum of ``x`` over the ``counts[r]`` values :func:`iid_values` would draw from the same ``rng``
    (each sub-block's part from 0.0, in the order drawn, the parts added in sub-block order), and each row's
    largest multiplicity; ``rng`` ends as it would. No row is written."""
    pieces = _IidPieces.draw(rng, counts, start, stop)
    buffer = np.empty(max(int(pieces.counts.max(initial=0)), 1), dtype=np.int64)
    sums = np.empty(pieces.counts.size, dtype=np.float64)
    most = pieces.run(rng, buffer, None, x, sums)
    per_row = sums.reshape(pieces.rows, pieces.parts)
    total = per_row[:, 0].copy()
    for part in range(1, pieces.parts):
        total += per_row[:, part]
    return total, most


@attrs.frozen
class _IidPieces:
    """Rows of :func:`iid_values` cut at the sub-blocks: row r's part in sub-block p is piece
    ``r * parts + p`` (its count, first value and size, and Lemire's threshold for that size)."""

    counts: npt.NDArray[np.int64]
    bases: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    thresholds: npt.NDArray[np.int64]
    span: int  # the sub-block size with the most rejections, for the words' estimate
    counter_size: int
    rows: int
    parts: int

    @classmethod
    def draw(cls, rng: np.random.Generator, counts: IntArray, start: int, stop: int) -> _IidPieces:
        """The pieces of rows of ``counts`` over ``range(start, stop)``: the multinomial split drawn from ``rng``
        where there are several sub-blocks."""
        size = stop - start
        counts64 = counts.astype(np.int64, copy=False)
        firsts = np.arange(0, size, SUB_BLOCK, dtype=np.int64)
        spans = np.minimum(firsts + SUB_BLOCK, size) - firsts
        one = spans.size == 1  # one range: its counts are the rows' counts, nothing to draw
        split = counts64[:, np.newaxis] if one else rng.multinomial(counts64, spans / size).astype(np.int64)
        rows = counts64.size
        thresholds = np.array([lemire_threshold(int(span)) for span in spans], dtype=np.int64)
        return cls(
            counts=split.reshape(-1),
            bases=np.tile(start + firsts, rows),
            sizes=np.tile(spans, rows),
            thresholds=np.tile(thresholds, rows),
            span=max((int(span) for span in spans), key=lemire_threshold),
            counter_size=min(size, SUB_BLOCK),
            rows=rows,
            parts=spans.size,
        )

    def run(
        self,
        rng: np.random.Generator,
        out: IntArray,
        offsets: IntArray | None,
        x: npt.NDArray[np.float64] | None,
        sums: npt.NDArray[np.float64] | None,
    ) -> IntArray:
        """Every piece drawn, words drawn as the loop needs them: the rows into ``out`` at ``offsets``
        (``_jit.iid_rows``), or with ``x`` and ``sums`` their sums of ``x`` (``_jit.iid_row_sums``, ``out`` a
        one-row buffer); returns each row's largest multiplicity."""
        from privframe_std.samplers import _jit

        most = np.zeros(self.counts.size, dtype=np.int64)
        counter = _scratch("copies", self.counter_size, np.uint8)
        progress = np.zeros(3, dtype=np.int64)
        with _clean_on_error(counter):
            while progress[0] < self.counts.size:
                words = random_words(rng, words_for_iid(self.counts[progress[0] :], self.span))
                head = (words, self.counts, self.bases, self.sizes, self.thresholds)
                if sums is None:
                    _jit.iid_rows(*head, out, offsets, counter, most, progress)
                else:
                    _jit.iid_row_sums(*head, x, sums, out, counter, most, progress)
        per_row: IntArray = most.reshape(self.rows, self.parts).max(axis=1, initial=0)
        return per_row


SMALL_RANGE = 4096
"""Ranges up to this size take their values from 16-bit quarters of the words (rejected with probability
below ``size / 2^16``, 6% at most); larger ranges from 32-bit halves."""


def fast_stream(rng: np.random.Generator) -> npt.NDArray[np.uint64]:
    """The state of an SFC64 stream seeded with three words of ``rng``, for the compiled loops to advance.

    numpy's ``SFC64`` seeded the same way (its state set to the three words and counter 1, twelve words
    discarded) yields the same words. The loops compute them inline: drawing the words through numpy cost
    more than using them.
    """
    from privframe_std.samplers import _jit

    state = np.empty(4, dtype=np.uint64)
    _jit.sfc64_seed(random_words(rng, 3), state)
    return state


def add_uniform(stream: npt.NDArray[np.uint64], counts: npt.NDArray[np.float64], missing: IntArray) -> None:
    """Add ``missing[r]`` i.i.d. uniform draws over the k cells of row r of ``counts`` (one count each), in
    place, from the words of ``stream`` (see :func:`fast_stream`)."""
    from privframe_std.samplers import _jit

    k = counts.shape[1]
    bits = 16 if k <= SMALL_RANGE else 32
    _jit.add_uniform_stream(stream, counts, missing.astype(np.int64, copy=False), bits, lemire_threshold(k, bits))
