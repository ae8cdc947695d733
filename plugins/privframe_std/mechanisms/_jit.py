"""The compiled loop behind the exponential mechanism's weighted selection (numba; imported on first use).

One pass per weighted resample keeps its ``b + 1`` pieces in cache; the arithmetic follows
``exponential.weighted_quantile_log_weights`` operation by operation, and the uniforms come in as arguments
drawn by numpy's ``Generator``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privframe_std._compiled import compiled

EXP_ZERO = -746.0
"""Below about -745.13, ``exp`` rounds to exactly 0.0 in double precision."""


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
    the total, the point uniformly in it at ``within[r]``.
    """
    rows, size = weights.shape
    pieces = size + 1
    mass_of = np.empty(pieces)  # per piece: its log-weight, then its mass
    for r in range(rows):
        target = q * totals[r]
        below = 0.0
        top = -np.inf
        for i in range(pieces):
            value = log_lengths[i] - np.abs(below - target) * half_epsilon
            mass_of[i] = value
            if value > top:
                top = value
            if i < size:
                below += weights[r, i]
        # Most pieces' exp(log-weight - top) is exactly 0.0 (below EXP_ZERO): skip the call there, and keep
        # the span [first, last] of pieces with mass. The inversion finds the first piece whose running sum
        # exceeds pick times the total; pieces without mass add exactly 0.0 to it and are never that piece,
        # so it runs over the span only (and falls back to the last piece as a scan of every piece would).
        mass = 0.0
        first = -1
        last = -1
        for i in range(pieces):
            shifted = mass_of[i] - top
            if shifted >= EXP_ZERO:
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
