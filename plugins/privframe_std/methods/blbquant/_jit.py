"""The compiled loop of BLBQuant's mean replicates (numba), imported on first use by ``roots``.

One call runs R little bootstraps of one block: each draws its ``Multinomial(n; 1/b, ..., 1/b)`` weights one
count at a time, keeps only the weighted sum the mean needs, and adds the Laplace mechanism's exact lattice
noise, so no weight matrix is ever written. The randomness is one SFC64 stream (``samplers._kernels.fast_stream``)
advanced inline, as the samplers' multinomial loops do.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.cpython.unsafe import numbers

from privframe_std._compiled import compiled
from privframe_std.samplers._jit import ONE, sfc64_next

LOW16 = np.uint64(0xFFFF)
SIXTEEN = np.uint64(16)
THIRTY_TWO = np.uint64(32)
FORTY_EIGHT = np.uint64(48)
MANTISSA_SHIFT = np.uint64(11)
leading_zeros: Any = numbers.leading_zeros


@numba.njit(inline="always")
def _word(state: Any) -> Any:
    """The stream's next word, advancing ``state``."""
    word, state[0], state[1], state[2], state[3] = sfc64_next(state[0], state[1], state[2], state[3])
    return word


@numba.njit(inline="always")
def _below(state: Any, size: Any) -> Any:
    """Uniform on ``{0, ..., size - 1}`` for ``1 <= size <= 2^63``: the top bits of a word, rejected above."""
    if size == ONE:
        return np.uint64(0)
    shift = np.uint64(leading_zeros(size - ONE))
    while True:
        value = _word(state) >> shift
        if value < size:
            return value


@numba.njit(inline="always")
def _bernoulli_exp_fraction(state: Any, numerator: Any, denominator: Any) -> Any:
    """Bernoulli(exp(-numerator / denominator)) for ``0 <= numerator <= denominator`` (CKS Algorithm 1)."""
    k = ONE
    while _below(state, denominator * k) < numerator:
        k += ONE
    return (k & ONE) == ONE


@numba.njit
def discrete_laplace(state: Any, t: Any) -> np.int64:
    """One exact draw of P(y) proportional to exp(-|y| / t) on the integers (CKS Algorithm 2), ``t < 2^40``.

    U ~ uniform{0..t-1} accepted with probability exp(-U / t), plus t times a geometric count of
    Bernoulli(exp(-1)) successes, and a random sign (rejecting "-0"); the same steps as
    ``privframe.privacy.noise.discrete_laplace``, from the stream's words.
    """
    while True:
        u = _below(state, t)
        if u > 0 and not _bernoulli_exp_fraction(state, u, t):
            continue
        v = np.uint64(0)
        while _bernoulli_exp_fraction(state, ONE, ONE):
            v += ONE
        magnitude = np.int64(u + t * v)
        negative = _below(state, np.uint64(2)) == ONE
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


@compiled
def laplace_draws(state: Any, t: int, out: Any) -> None:
    """``out.size`` exact discrete Laplace draws of scale ``t`` (for the tests of :func:`discrete_laplace`)."""
    scale = np.uint64(t)
    for i in range(out.shape[0]):
        out[i] = discrete_laplace(state, scale)


@numba.njit(inline="always")
def _refine(state: Any, piece: Any, starts: Any, cdf: Any) -> float:
    """The Poisson count of a uniform whose top 16 bits are ``piece``, one the table leaves open (0.2% of them
    at a rate of 245): ``(piece + v) / 2^16`` with v a fresh double uniform, inverted through the CDF.

    The count is ``searchsorted(cdf, u, side="right")``, the number of CDF values at or below u. The
    ``starts[piece]`` values at or below ``piece / 2^16`` are at or below u too, so the scan starts there and
    passes the one or two CDF values inside the piece's interval (a binary search over the whole CDF cost a
    tenth of the loop).
    """
    v = np.float64(_word(state) >> MANTISSA_SHIFT) * 2.0**-53
    u = (np.float64(piece) + v) / 65536.0
    count = starts[piece]
    while count < cdf.shape[0] and cdf[count] <= u:
        count += 1
    return np.float64(count)


@compiled
def mean_replicates(
    state: Any,
    table: Any,
    starts: Any,
    cdf: Any,
    cells: Any,
    values: Any,
    total: int,
    poisson: bool,
    fill_bits: int,
    fill_threshold: int,
    unscale: float,
    grid: float,
    t: int,
    out: Any,
) -> None:
    """``out[r]`` = the Laplace release of the mean of little bootstrap r of the block ``values`` (k records).

    Weights: ``Multinomial(total; 1/k, ..., 1/k)`` as in ``samplers.bootstrap.multinomial_counts``. With
    ``poisson``, i.i.d. Poisson counts by inversion of 16-bit uniforms through ``table`` (NaN where the
    uniform's further bits decide, then ``cdf`` from ``starts``), a row whose counts exceed ``total`` drawn
    again, and the ``total - sum`` missing counts added in uniform cells (``fill_bits``-bit pieces, Lemire's
    multiply-shift with rejection below ``fill_threshold``; with 16-bit pieces ``cells`` holds each piece's
    cell, k where it is rejected); without it every count comes from the fill. Given its sum the
    Poisson vector is multinomial, so the law is exact. The mean ``sum(w_i x_i) / total`` is then released as
    ``privframe.privacy.noise.release`` would with a Laplace plan (``grid``, ``t``). ``values`` may be the
    records times a power of two that keeps the sums finite; ``unscale`` is its inverse. ``t = 0`` releases the
    means themselves (an event of zero noise scale).

    The sums run in four accumulators, one per 16-bit quarter of a word, so that consecutive additions do
    not wait on each other; the counts, whole numbers, add up exactly in one (a word's four at once: the
    sum its NaN test computes anyway). A NaN after the records (``padded[k]``) marks a rejected fill piece, so one test
    of the four pieces' sum finds the rare word that needs a piece-by-piece look.
    """
    k = values.shape[0]
    quads = k - k % 4
    scale = np.uint64(k)
    limit = np.uint64(fill_threshold)
    width = np.uint64(fill_bits)
    mask = (ONE << width) - ONE
    per_word = 64 // fill_bits
    four = fill_bits == 16
    target = np.int64(total)
    noise_scale = np.uint64(t)
    padded = np.empty(k + 1, dtype=np.float64)
    padded[:k] = values
    padded[k] = np.nan
    a, b, c, counter = state[0], state[1], state[2], state[3]
    for row in range(out.shape[0]):
        filled = np.int64(0)
        w0 = w1 = w2 = w3 = 0.0
        while poisson:
            w0 = w1 = w2 = w3 = 0.0
            counted = 0.0
            for i in range(0, quads, 4):
                word, a, b, c, counter = sfc64_next(a, b, c, counter)
                q0 = word & LOW16
                q1 = (word >> SIXTEEN) & LOW16
                q2 = (word >> THIRTY_TWO) & LOW16
                q3 = word >> FORTY_EIGHT
                p0, p1, p2, p3 = table[q0], table[q1], table[q2], table[q3]
                check = (p0 + p1) + (p2 + p3)
                if check != check:  # rare: a NaN, further bits decide
                    state[0], state[1], state[2], state[3] = a, b, c, counter
                    p0 = p0 if p0 == p0 else _refine(state, q0, starts, cdf)
                    p1 = p1 if p1 == p1 else _refine(state, q1, starts, cdf)
                    p2 = p2 if p2 == p2 else _refine(state, q2, starts, cdf)
                    p3 = p3 if p3 == p3 else _refine(state, q3, starts, cdf)
                    a, b, c, counter = state[0], state[1], state[2], state[3]
                    check = (p0 + p1) + (p2 + p3)
                counted += check  # whole numbers far below 2^53: exact in any order
                w0 += p0 * values[i]
                w1 += p1 * values[i + 1]
                w2 += p2 * values[i + 2]
                w3 += p3 * values[i + 3]
            if quads < k:
                word, a, b, c, counter = sfc64_next(a, b, c, counter)
                for i in range(quads, k):
                    q0 = word & LOW16
                    word >>= SIXTEEN
                    p0 = table[q0]
                    if p0 != p0:
                        state[0], state[1], state[2], state[3] = a, b, c, counter
                        p0 = _refine(state, q0, starts, cdf)
                        a, b, c, counter = state[0], state[1], state[2], state[3]
                    counted += p0
                    w0 += p0 * values[i]
            filled = np.int64(counted)
            if filled <= target:
                break
        need = target - filled
        added = np.int64(0)
        while four and need - added >= 4:  # four 16-bit pieces a word: in the common case all are accepted
            word, a, b, c, counter = sfc64_next(a, b, c, counter)
            v0 = padded[cells[word & LOW16]]
            v1 = padded[cells[(word >> SIXTEEN) & LOW16]]
            v2 = padded[cells[(word >> THIRTY_TWO) & LOW16]]
            v3 = padded[cells[word >> FORTY_EIGHT]]
            check = (v0 + v1) + (v2 + v3)
            if check == check:
                w0 += v0
                w1 += v1
                w2 += v2
                w3 += v3
                added += 4
            else:
                for v in (v0, v1, v2, v3):
                    if v == v:
                        w0 += v
                        added += 1
        while added < need:
            word, a, b, c, counter = sfc64_next(a, b, c, counter)
            for _ in range(per_word):
                if added == need:
                    break
                product = (word & mask) * scale
                word >>= width
                if (product & mask) >= limit:
                    w0 += values[np.int64(product >> width)]
                    added += 1
        state[0], state[1], state[2], state[3] = a, b, c, counter
        mean = ((w0 + w1) + (w2 + w3)) / total * unscale
        if noise_scale == 0:
            out[row] = mean
            continue
        steps = min(max(mean / grid, -(2.0**1020)), 2.0**1020)
        out[row] = (np.rint(steps) + np.float64(discrete_laplace(state, noise_scale))) * grid
        a, b, c, counter = state[0], state[1], state[2], state[3]


@compiled
def root_histograms(roots: Any, low: float, width: float, out: Any) -> None:
    """``out[j, i]`` = the fraction of row j of ``roots`` in ``[low + i width, low + (i + 1) width)``.

    ``out`` is ``(s, bins)`` and zero on entry; roots outside the grid fall in no bin. Each bin is found as
    ``floor((root - low) / width)`` and each fraction is a count over R, the operations of numpy's
    ``floor``, ``bincount`` and division, so the result is theirs bit for bit without their (s, bins)
    temporaries.
    """
    bins = out.shape[1]
    count = roots.shape[1]
    for j in range(roots.shape[0]):
        row = out[j]
        for r in range(count):
            position = np.floor((roots[j, r] - low) / width)
            if position >= 0 and position < bins:
                row[np.int64(position)] += 1.0
        for i in range(bins):
            row[i] = row[i] / count


@compiled
def coverages_of(histograms: Any, kind: int, scratch: Any, out: Any) -> None:
    """``out[k - 1, j]`` = block j's coverage of candidate set k (see ``search.nested_coverages``).

    ``kind`` 0: the central 2k bins; 1: everything below bin ``bins / 2 + k``; 2: everything from bin
    ``bins / 2 - k`` up. Each row's running sums are numpy's ``cumsum`` (one addition after the other) from
    0, in ``scratch`` (``bins + 1``), and each coverage the same difference, so the result is
    ``nested_coverages``' bit for bit without its (s, bins + 1) temporaries.
    """
    bins = histograms.shape[1]
    half = bins // 2
    for j in range(histograms.shape[0]):
        scratch[0] = 0.0
        for i in range(bins):
            scratch[i + 1] = scratch[i] + histograms[j, i]
        for k in range(1, half + 1):
            if kind == 0:
                out[k - 1, j] = scratch[half + k] - scratch[half - k]
            elif kind == 1:
                out[k - 1, j] = scratch[half + k]
            else:
                out[k - 1, j] = scratch[bins] - scratch[half - k]
