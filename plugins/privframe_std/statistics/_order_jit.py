"""The compiled loops of the order statistics' smooth-sensitivity search (numba), imported on first use by
:mod:`privframe_std.statistics.order`.

They compute only differences of sorted values, maxima and arg-maxima; every logarithm stays with numpy
(``order._log_terms``). numba's ``log`` is libm's, which differs from numpy's vectorised ``log`` in the last
bit for a fraction of a percent of inputs, and a last bit moves a value across the log grid. Splitting the
work this way keeps the search's result the numpy search's, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privframe_std._compiled import compiled

__all__ = ["dc_level_cells", "dc_level_reduce", "tie_block_gaps", "window_widest"]


@compiled
def window_widest(padded: Any, first: int, rank: int, k: int, out: Any) -> None:
    """``out[i, j] = A^(j)`` of row i for spans ``j = 0 .. out.shape[1] - 1``: the widest gap
    ``x_(u) - x_(u - j - 1)`` with ``u = min(rank + t, k + 1)``, ``t = 0 .. j + 1``, the lower index clamped to 0.

    ``padded[i]`` holds the padded values of indices ``first, first + 1, ...`` of row i.
    """
    rows, spans = out.shape
    for i in range(rows):
        for j in range(spans):
            widest = -np.inf
            for t in range(j + 2):
                upper = min(rank + t, k + 1)
                lower = max(upper - j - 1, 0)
                gap = padded[i, upper - first] - padded[i, lower - first]
                if gap > widest:
                    widest = gap
            out[i, j] = widest


@compiled
def tie_block_gaps(
    rows: Any, rank: int, low: float, high: float, sorted_lo: int, sorted_hi: int, gaps: Any, spans: Any
) -> None:
    """Gaps and spans of the pairs (below, above), (below, r), (r, above) of each row, padded with ``low`` and
    ``high``: ``below`` counts the records less than ``x_(r)``, ``above`` is 1 + those at most it.

    The rows are sorted at the 0-based positions ``sorted_lo .. sorted_hi`` (which hold ``rank - 1``) and only
    partitioned outside: every value left of the window is at most, every value right of it at least, the
    window's. So the counts come from the tie block's ends in the window; only a tie block that reaches an end
    of the window needs a count over the partitioned part beyond it, where ties may lie anywhere.
    """
    count, k = rows.shape
    for i in range(count):
        pivot = rows[i, rank - 1]
        start = rank - 1
        while start > sorted_lo and rows[i, start - 1] >= pivot:
            start -= 1
        below = start
        if start == sorted_lo:
            below = 0
            for u in range(sorted_lo):
                if rows[i, u] < pivot:
                    below += 1
        end = rank - 1
        while end < sorted_hi and rows[i, end + 1] <= pivot:
            end += 1
        at_most = end + 1
        if end == sorted_hi:
            for u in range(sorted_hi + 1, k):
                if rows[i, u] <= pivot:
                    at_most += 1
        above = at_most + 1
        x_below = low if below == 0 else rows[i, below - 1]
        x_above = high if above == k + 1 else rows[i, above - 1]
        gaps[0, i] = x_above - x_below
        spans[0, i] = above - below - 1
        gaps[1, i] = pivot - x_below
        spans[1, i] = rank - below - 1
        gaps[2, i] = x_above - pivot
        spans[2, i] = above - rank - 1


@compiled
def dc_level_cells(padded: Any, mid: Any, col_lo: Any, col_hi: Any, gaps: Any) -> None:
    """The cells of one divide-and-conquer level, row by row and node by node: ``gaps = x_u - x_mid`` for
    ``col_lo[i, n] <= u <= col_hi[i, n]``, written contiguously."""
    rows, nodes = col_lo.shape
    at = 0
    for i in range(rows):
        for n in range(nodes):
            pivot = padded[i, mid[n]]
            for u in range(col_lo[i, n], col_hi[i, n] + 1):
                gaps[at] = padded[i, u] - pivot
                at += 1


@compiled
def dc_level_reduce(
    logs: Any, mid: Any, col_lo: Any, col_hi: Any, h: float, steps: float, cut: float, best: Any, arg: Any
) -> None:
    """Per row and node of a level: the grid terms of the cells' logs (in the order of
    :func:`dc_level_cells`), the rightmost best column into ``arg``, the row's best term into ``best``.

    A term is ``ceil(log * (1 / h)) * h`` (``-inf`` below ``cut``) less ``(span * steps) * h``: the operations
    of ``LogGrid.quantize`` and ``LogGrid.decay`` in the same order, each exactly rounded, so the same doubles.
    A node whose terms are all ``-inf`` (ties only) takes its last column, as ``>=`` from ``-inf`` gives.
    """
    rows, nodes = col_lo.shape
    inverse = 1.0 / h
    at = 0
    for i in range(rows):
        for n in range(nodes):
            top = -np.inf
            where = col_lo[i, n]
            for u in range(col_lo[i, n], col_hi[i, n] + 1):
                log = logs[at]
                value = np.ceil(log * inverse) * h
                if log < cut:
                    value = -np.inf
                value = value - (float(u - mid[n] - 1) * steps) * h
                if value >= top:
                    top = value
                    where = u
                at += 1
            arg[i, n] = where
            if top > best[i]:
                best[i] = top
