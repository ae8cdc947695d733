"""The compiled loop behind the exponential mechanism's weighted selection (numba; imported on first use).

Per weighted resample the loop works on a window of pieces around the q-quantile's: the pieces whose weight
is not negligible against the largest (a few dozen at most of the ``b + 1``, so ``exp`` runs a few times a
resample instead of ``b`` times). Inside the window the arithmetic follows
``exponential.weighted_quantile_log_weights`` operation by operation, and the uniforms come in as arguments
drawn by numpy's ``Generator``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privframe_std._compiled import compiled

NEGLIGIBLE = -60.0
"""Pieces whose log-weight is more than 60 below the largest get no mass: ``e^-60 < 2^-86``, so all of them
together (fewer than 2^31) weigh less than ``2^-55`` of the total, below the rounding of the running sum."""


@compiled
def weighted_quantile_select(
    edges: Any,
    log_lengths: Any,
    weights: Any,
    totals: Any,
    q: float,
    half_epsilon: float,
    pick: Any,
    within: Any,
    out: Any,
) -> None:
    """``out[r]``: the exponential mechanism's quantile on weighted resample r of one block.

    ``edges`` are the ``b + 2`` piece edges (bounds and the sorted, clipped values), ``log_lengths`` the
    logs of the ``b + 1`` piece lengths, ``weights[r, i]`` the count of record i in resample r and
    ``totals[r]`` their sum k (integers: exact in any order). Piece i's log-weight is
    ``log_lengths[i] - half_epsilon |below_i - q k|`` (``below_i`` records of the resample lie below it);
    the piece is drawn by inversion of the running sum of ``exp(log-weight - max)`` at ``pick[r]`` times
    the total, the point uniformly in it at ``within[r]``. Pieces more than ``-NEGLIGIBLE`` below the
    largest log-weight count as mass 0.
    """
    rows, size = weights.shape
    pieces = size + 1
    longest = -np.inf
    for i in range(pieces):
        longest = max(longest, log_lengths[i])
    below_of = np.empty(pieces)  # per piece: the records below it (running sums, in order)
    mass_of = np.empty(pieces)  # per piece: its log-weight, then its mass
    for r in range(rows):
        target = q * totals[r]
        # Start at the first piece with at least q k records below it, then widen the window to each side
        # while a piece there could still carry mass: every piece's log-weight is at most
        # ``longest - distance``, and the distance only grows away from the start, so the first piece past
        # the cut bounds all those beyond it (float rounding is monotone, and the largest log-weight only
        # grows as the window widens). The running sums past the window are never needed.
        below = 0.0
        start = 0
        below_of[0] = 0.0
        while start < size and below < target:
            below += weights[r, start]
            start += 1
            below_of[start] = below
        top = log_lengths[start] - np.abs(below - target) * half_epsilon
        mass_of[start] = top
        low = start
        for i in range(start - 1, -1, -1):
            distance = np.abs(below_of[i] - target) * half_epsilon
            if (longest - distance) - top < NEGLIGIBLE:
                break
            mass_of[i] = log_lengths[i] - distance
            top = max(top, mass_of[i])
            low = i
        high = start
        for i in range(start + 1, pieces):
            below += weights[r, i - 1]
            distance = np.abs(below - target) * half_epsilon
            if (longest - distance) - top < NEGLIGIBLE:
                break
            mass_of[i] = log_lengths[i] - distance
            top = max(top, mass_of[i])
            high = i
        # The inversion finds the first piece whose running sum exceeds pick times the total; pieces
        # without mass add 0.0 to it and are never that piece, so it runs over the span with mass only (and
        # falls back to the last piece, as a scan of every piece would).
        mass = 0.0
        first = -1
        last = -1
        for i in range(low, high + 1):
            shifted = mass_of[i] - top
            if shifted >= NEGLIGIBLE:
                mass_of[i] = np.exp(shifted)
                mass += mass_of[i]
                if first < 0:
                    first = i
                last = i
            else:
                mass_of[i] = 0.0
        threshold = pick[r] * mass
        piece = pieces - 1
        running = 0.0
        for i in range(max(first, 0), min(last + 1, pieces - 1)):
            running += mass_of[i]
            if running > threshold:
                piece = i
                break
        out[r] = edges[piece] + (edges[piece + 1] - edges[piece]) * within[r]
