"""Order statistics of bounded scalars: ``quantile`` (rank ceil(q k)) and ``median`` (the lower median).

Both carry the Nissim-Raskhodnikova-Smith smooth sensitivity (``docs/algorithms.md``, section 3.2) as its
log, ln SS, computed exactly on a fixed-point log grid by an O(k log k) search per row however the data tie
(``order_log_smooth_sensitivity``), vectorised over the B resamples. The global sensitivity is the width of
the bounds, so CR-GS works but is rarely useful: use CR-SS.
"""

from __future__ import annotations

import functools
import math
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._population import population_law

__all__ = [
    "LogGrid",
    "Median",
    "Quantile",
    "log_grid",
    "order_log_grid",
    "order_log_smooth_sensitivity",
    "order_statistic_log_smooth",
]


def _scalar_bounds(bounds: Any, name: str) -> pp.Bounds:
    if not isinstance(bounds, pp.Bounds):
        raise ConfigError(f"statistic '{name}' needs scalar bounds (low, high)", path="bounds")
    return bounds


_WINDOW = 64
"""Spans j searched directly (the early-stopping pass) before the divide and conquer takes the rows left open."""

_J_RUN = 8
"""Spans per run of the early-stopping pass: a row is checked for settling after each run (``window_spans``)."""

_LOSS_PER_LEVEL = 20
"""Grid steps of beta reserved per level of the divide and conquer (its rounding loss, see ``order_log_grid``)."""

_DC_CELLS = 1 << 21
"""Matrix entries evaluated per vectorised block of the divide and conquer (bounds its temporary memory)."""

_PARTIAL_SORT_SHARE = 8
"""Rows at least this many times longer than the direct pass's window are partially sorted around the rank."""


@attrs.frozen
class LogGrid:
    """A fixed-point grid for ln SS on which the sums that matter are exact in floating point.

    Every value is a multiple of ``h``, a power of two chosen so that the multiples of h up to twice the
    largest magnitude in play are floats: adding or subtracting two of them is then exact. ``quantize``
    rounds a natural log up to the grid (and maps logs below ``cut``, which can never be the maximum, to
    ``-inf``); ``decay(j)`` is ``j * beta_step`` with ``beta_step = steps * h <= beta``, also exact.

    Why: ``|ln SS(x) - ln SS(x')| <= beta`` must hold for the floats, not only for the reals. Computed
    naively, ``ln(g) - j beta`` at neighbouring datasets is ``-fl(j beta)`` against ``-fl((j + 1) beta)``,
    which differ by more than beta for about a quarter of all j (beta = 1e-4, j <= 1e5). On the grid the
    neighbour's best term and the term it maps to differ by exactly ``beta_step <= beta``.
    """

    h: float
    steps: int
    cut: float = -math.inf

    @property
    def beta_step(self) -> float:
        """The decay per unit of span, ``steps * h`` (at most beta)."""
        return self.steps * self.h

    def quantize(self, logs: pp.Array) -> pp.Array:
        """``ceil(logs / h) * h``, and ``-inf`` where ``logs < cut`` (in one new buffer)."""
        up: pp.Array = np.multiply(logs, 1.0 / self.h, out=np.empty(np.shape(logs)))
        np.ceil(up, out=up)
        np.multiply(up, self.h, out=up)
        if self.cut != -math.inf:
            up[np.asarray(logs) < self.cut] = -np.inf
        return up

    def decay(self, spans: Any) -> pp.Array:
        """``spans * beta_step``, exact for the integer spans of the grid's range."""
        out: pp.Array = (np.asarray(spans, dtype=np.float64) * float(self.steps)) * self.h
        return out


def log_grid(radius: float, beta: float, margin: int = 0, cut: float = -math.inf) -> LogGrid:
    """The grid for values of magnitude at most ``radius``: ``h = 2^(ceil(log2 radius) - 52)``.

    Every multiple of h up to ``2^53 h >= 2 radius`` is a float, so sums and differences of two values of
    magnitude at most ``radius`` are exact. ``beta_step = (floor(beta / h) - margin) h``: ``margin`` grid steps
    are held back to absorb a bounded rounding loss of the search (``order_log_grid``).

    Raises
    ------
    ConfigError
        If beta is not positive and finite, or so small that less than one grid step remains.
    """
    if not (math.isfinite(beta) and beta > 0.0):
        raise ConfigError("the smoothness beta must be a positive finite number", path="beta")
    h = math.ldexp(1.0, math.ceil(math.log2(radius)) - 52)
    steps = math.floor(beta / h) - margin
    if steps < 1:
        resolution = h * (margin + 1)
        raise ConfigError(
            f"the smoothness beta = {beta:g} is below the floating-point resolution of ln SS (about {resolution:.1g})",
            path="beta",
        )
    return LogGrid(h=h, steps=steps, cut=cut)


@functools.lru_cache(maxsize=64)
def order_log_grid(k: int, beta: float, low: float, high: float, window: int = _WINDOW) -> LogGrid:
    """The grid of ``order_log_smooth_sensitivity`` for k records (depends on public values only).

    Every term that can be the maximum lies in ``[ln(high - low) - k beta - h, ln(high - low) + h]``; logs below
    ``cut = ln(high - low) - (k + 1) beta - 2`` are dropped (``-inf``), and ``radius = |ln(high - low)| +
    2 (k + 1) beta + 4`` bounds every value kept. The divide and conquer is exact for an inverse-Monge matrix;
    rounding makes ours Monge only up to ``eta = 2h + 4 eps`` per 2x2 minor (eps <= 1.5 h: one rounding of the
    gap, one ulp of the log), and it loses at most eta per level (``_divide_and_conquer``), so
    ``_LOSS_PER_LEVEL = 20`` steps per level (ceil(log2(k + 2)) + 1 levels) are held back from beta. With
    ``k <= window`` the direct pass covers every span, no loss occurs and nothing is held back.
    """
    ln_width = math.log(high - low)
    radius = abs(ln_width) + 2.0 * (k + 1) * beta + 4.0
    margin = 0 if k <= window else _LOSS_PER_LEVEL * (math.ceil(math.log2(k + 2)) + 1)
    return log_grid(radius, beta, margin, cut=ln_width - (k + 1) * beta - 2.0)


def _log_terms(gaps: pp.Array, spans: Any, grid: LogGrid) -> pp.Array:
    """Grid values ``quantize(ln gap) - decay(span)``; a zero gap (a tie) is ``-inf``."""
    with np.errstate(divide="ignore"):
        logs = np.log(gaps)
    terms = grid.quantize(logs)
    np.subtract(terms, grid.decay(spans), out=terms)
    return terms


def order_log_smooth_sensitivity(
    sorted_rows: pp.Array,
    rank: int,
    beta: float,
    low: float,
    high: float,
    *,
    window: int = _WINDOW,
    stats: dict[str, int] | None = None,
) -> pp.Array:
    """``ln SS_beta`` of the ``rank``-th order statistic (1-based) of each sorted row, exact on a log grid.

    **As a maximum over pairs.** Pad each row, ``x_0 = low``, ``x_(k+1) = high``. The definition is
    ``SS = max_{j >= 0} e^{-j beta} A^(j)`` with ``A^(j) = max_{0 <= t <= j+1} (x_(r+t) - x_(r+t-j-1))`` (indices
    clamped to ``[0, k + 1]``). Then

        ln SS = max { ln(x_u - x_l) - (u - l - 1) beta : 0 <= l <= r <= u <= k + 1, l < u }.

    Proof: put ``u = r + t`` and ``l = r + t - j - 1``. For ``0 <= t <= j + 1`` this gives ``l <= r <= u`` and
    ``u - l - 1 = j``; clamping u down to k + 1 or l up to 0 leaves the gap unchanged and only shortens the span,
    so every term ``e^{-j beta}(x_u - x_l)`` of the definition is at most the term of a pair. Conversely a pair
    ``l <= r <= u``, ``l < u``, is the term ``j = u - l - 1``, ``t = u - r`` (``0 <= t <= j + 1``) with no
    clamping. A zero gap (a tie) is ``ln 0 = -inf``; the pair ``(0, k + 1)`` keeps the maximum finite.

    **Search.** (1) Spans ``j <= window`` directly, with ``A^(j)`` as above, in runs of ``_J_RUN``; a row is
    settled once its best term is at least ``ln(high - low) - j beta``, which no longer span can beat
    (``A^(j) <= high - low``). (2) For each open row, the pairs around the tie block of ``x_(r)`` (the last
    record below it and the first above it), which make the bound of step 3 tight on tied data. (3) A divide
    and conquer over l: ``M[l, u] = (x_u - x_l) e^{-(u - l - 1) beta}`` is inverse Monge, for
    ``l < l' <= r <= u < u'``: ``M[l, u] M[l', u'] >= M[l, u'] M[l', u]`` because the spans cancel and
    ``(x_u - x_l)(x_u' - x_l') - (x_u' - x_l)(x_u - x_l') = (x_l' - x_l)(x_u' - x_u) >= 0`` (zero gaps included:
    ``x_u = x_l`` forces ``x_l' = x_u``). So the rightmost best u is non-decreasing in l: the middle row is
    searched over its column range, the rows above it keep the columns up to its best u and those below the
    columns from it on. Only spans up to ``J = (ln(high - low) - best) / beta`` can beat the row's best, so the
    search runs on the rectangle ``l >= r - W``, ``u <= r + W`` with W the power of two above J + 1 (the row's
    own, so a row's result never depends on the other rows of its batch). Cost O((W + k') log W) per row,
    ``W <= k + 1``, vectorised over the rows and over all nodes of a level.

    **Exact in floating point.** All terms are computed on ``order_log_grid``'s grid: ``ln gap`` rounded up to
    a multiple of h and ``j * beta_step``, so every term that can be the maximum is an exact float. For
    neighbours x, x' (one record replaced, upwards say), every pair ``(l', u')`` of x' maps to ``(l', u' + 1)``
    (or ``(l' - 1, u')`` downwards) of x with a gap at least as wide (the sorted rows interlace) and a span one
    longer, so the grid terms differ by at most ``beta_step`` exactly; the divide and conquer's rounding loss
    (see ``order_log_grid``) is held back from beta, so ``|ln SS(x) - ln SS(x')| <= beta`` holds for the
    floats. The result exceeds the exact ln SS by at most ``h + j (beta - beta_step)`` (below it by at most one
    rounding of a log).

    Parameters
    ----------
    sorted_rows : ndarray, shape (B, k)
        Each row sorted ascending, values within ``[low, high]``.
    rank : int
        1-based rank r of the order statistic, ``1 <= r <= k``.
    beta : float
        Smoothness parameter, > 0.
    low, high : float
        Public bounds used as padding.
    window : int, default 64
        Spans searched directly before the divide and conquer (0 sends every row to it).
    stats : dict, optional
        Filled with operation counts: ``window_spans`` (spans searched directly), ``open_rows`` (rows left
        for the divide and conquer), ``dc_levels`` (its deepest recursion), ``dc_cells`` (matrix entries it
        evaluated).

    Returns
    -------
    ndarray, shape (B,)
        ln SS_beta of each row; always finite.
    """
    k = sorted_rows.shape[1]
    grid = order_log_grid(k, beta, low, high, window)
    top = _top(grid, low, high)
    padded = _pad(sorted_rows, 0, k, low, high)
    best, active, spans = _direct_pass(padded, 0, rank, k, grid, top, window)
    _search_open_rows(sorted_rows[active], (0, k + 1), rank, low, high, grid, top, best, active, stats, spans)
    return best


def order_statistic_log_smooth(
    rows: pp.Array,
    rank: int,
    beta: float,
    low: float,
    high: float,
    *,
    window: int = _WINDOW,
    stats: dict[str, int] | None = None,
    presorted: bool = False,
) -> tuple[pp.Array, pp.Array]:
    """The ``rank``-th order statistic and ``ln SS_beta`` of each unsorted row, from a partial sort.

    Bit-identical to sorting every row and calling :func:`order_log_smooth_sensitivity`, at a fraction of the
    cost for long rows: the direct pass (spans ``j <= window``) reads only the order statistics of ranks
    ``rank - window - 1`` to ``rank + window``, so each row is partitioned around that window and only the window
    is sorted. Rows the direct pass leaves open go on to the tie block and the divide and conquer, which read
    only ranks within a reach their best term so far bounds: those rows alone are sorted that far
    (:func:`_sorted_where_read`; fully where the reach is most of the row).

    Parameters
    ----------
    rows : ndarray, shape (B, k)
        The resampled values, within ``[low, high]``; permuted in place.
    rank : int
        1-based rank r of the order statistic, ``1 <= r <= k``.
    beta : float
        Smoothness parameter, > 0.
    low, high : float
        Public bounds used as padding.
    window : int, default 64
        Spans searched directly (as in :func:`order_log_smooth_sensitivity`).
    stats : dict, optional
        Operation counts as in :func:`order_log_smooth_sensitivity`; ``open_rows`` are the rows the direct pass
        left open.
    presorted : bool, default False
        Each row is already ascending (a ``pp.SortingSampler``'s rows): nothing is sorted or partitioned, and
        the result is the same, bit for bit.

    Returns
    -------
    values : ndarray, shape (B,)
        The order statistic of rank r of each row.
    log_smooth : ndarray, shape (B,)
        ln SS_beta of each row; always finite.
    """
    k = rows.shape[1]
    first, last = max(0, rank - window - 1), min(k + 1, rank + window + 1)  # padded indices the direct pass reads
    # Sorted at once: what the direct pass reads and, where it will leave rows open, the reach they will need.
    hint = _reach_hint(k, beta)
    sorted_first, sorted_last = max(0, min(first, rank - hint)), min(k + 1, max(last, rank + hint))
    if k < _PARTIAL_SORT_SHARE * (sorted_last - sorted_first + 1):
        if not presorted:
            rows.sort(axis=1)
        return rows[:, rank - 1].copy(), order_log_smooth_sensitivity(
            rows, rank, beta, low, high, window=window, stats=stats
        )
    lo, hi = max(first, 1) - 1, min(last, k) - 1  # the same, as 0-based positions in a sorted row
    if presorted:
        sorted_lo, sorted_hi = 0, k - 1
    else:
        sorted_lo, sorted_hi = max(sorted_first, 1) - 1, min(sorted_last, k) - 1
        _sort_window(rows, sorted_lo, sorted_hi)
    grid = order_log_grid(k, beta, low, high, window)
    top = _top(grid, low, high)
    window_rows = _pad(rows[:, lo : hi + 1], first, k, low, high)
    best, active, spans = _direct_pass(window_rows, first, rank, k, grid, top, window)
    open_rows, sorted_width, read = _sorted_where_read(
        rows, active, rank, (sorted_lo, sorted_hi), grid, top, best, presorted=presorted
    )
    _search_open_rows(open_rows, read, rank, low, high, grid, top, best, active, stats, spans)
    if stats is not None:
        stats["open_sorted"] = sorted_width
    return rows[:, rank - 1].copy(), best


def _reach_hint(k: int, beta: float) -> int:
    """The half-width the search of an open row typically reads: the power of two at or above
    ``ln(k) / beta + 2`` (0 where the direct pass is expected to settle every row).

    A row's reach is ``(ln(high - low) - best) / beta`` and its best term is about ``ln`` of a typical gap times
    a span, so the reach is close to ``ln(k) / beta`` for continuous data (measured 83 - 87 against 86 at
    k = 4622, 128 - 130 against 132 at k = 72 383). Only a cost hint: a row that needs more is sorted further by
    :func:`_sorted_where_read`, one that needs less reads a window sorted a little wider than it had to be.
    """
    reach = math.log(k) / beta
    if reach <= _WINDOW or not math.isfinite(reach):
        return 0 if math.isfinite(reach) else k + 1
    return int(min(2 ** math.ceil(math.log2(reach + 2.0)), k + 1))


def _sorted_where_read(
    rows: pp.Array, active: pp.IndexMatrix, rank: int, window: tuple[int, int], grid: LogGrid, top: float,
    best: pp.Array, *, presorted: bool = False,
) -> tuple[pp.Array, int, tuple[int, int]]:  # fmt: skip
    """Copies of the open rows, sorted at every position the search of :func:`_search_open_rows` can read.

    The search reads padded indices ``rank - W .. rank + W`` of a row, W the power of two at or above
    ``reach + 2`` with ``reach = floor((top - best) / beta_step) + 1`` from the row's best term so far (the
    divide and conquer's rectangle, whose reach can only be smaller: its best includes the tie-block pairs).
    A pair reaching beyond has a span above reach, so its term is at most ``top - decay(span) < best``
    whatever the values it reads: the early stop of :func:`order_log_smooth_sensitivity`. Only that window
    needs the sorted order statistics; outside it the rows are partitioned (every value left of the window at
    most, right of it at least, the window's), which keeps the tie block's counts exact. So the result is the
    full sort's, bit for bit, at the cost of two partitions instead of a sort where W is short of the row
    (at small beta the direct pass leaves every row open; a row of 72 383 has W = 256 at beta = 0.085).
    ``window`` is the 0-based range ``rows`` already hold sorted (:func:`_sort_window`). Returns the copies,
    the number of positions sorted in each (k: a full sort; 0: no open row) and the padded indices
    ``(first, last)`` the divide and conquer may read (``rank -+ W`` within the pads). ``presorted`` rows are
    ascending everywhere: the open rows are taken as they are, and only ``rank -+ W`` is searched.
    """
    k = rows.shape[1]
    if not active.size:
        return rows[active], 0, (0, k + 1)
    reach = np.minimum(np.floor((top - best[active]) / grid.beta_step) + 1.0, float(k))
    width = int(np.exp2(np.ceil(np.log2(float(reach.max()) + 2.0))))
    lo, hi = max(rank - width - 1, 0), min(rank + width - 1, k - 1)  # 0-based positions of padded rank +- W
    sorted_lo, sorted_hi = window
    read = (max(rank - width, 0), min(rank + width, k + 1))
    if presorted:
        return (rows if active.size == rows.shape[0] else rows[active]), k, read
    if sorted_lo <= lo and hi <= sorted_hi and _PARTIAL_SORT_SHARE * (hi - lo + 1) < k:
        # Already sorted where the search reads (the reach hint was enough): no copy, no sort.
        return (rows if active.size == rows.shape[0] else rows[active]), sorted_hi - sorted_lo + 1, read
    selected = rows[active]
    if _PARTIAL_SORT_SHARE * (hi - lo + 1) >= k:
        selected.sort(axis=1)
        return selected, k, (0, k + 1)
    if lo < sorted_lo:
        selected[:, :sorted_lo].partition(lo, axis=1)
    if hi > sorted_hi:
        selected[:, sorted_hi + 1 :].partition(hi - sorted_hi - 1, axis=1)
    low_end, high_end = min(lo, sorted_lo), max(hi, sorted_hi)
    selected[:, low_end : high_end + 1].sort(axis=1)
    return selected, high_end - low_end + 1, read


def _sort_window(rows: pp.Array, lo: int, hi: int) -> None:
    """Put the order statistics of 0-based ranks ``lo..hi`` of each row at their places, sorted (in place).

    Two single partitions, not one ``partition([lo, hi])``: numpy's multi-kth partition along an axis was
    several times slower than a full sort here (numpy 2.4).
    """
    rows.partition(lo, axis=1)
    if hi > lo:
        rows[:, lo + 1 :].partition(hi - lo - 1, axis=1)
    rows[:, lo : hi + 1].sort(axis=1)


def _pad(window: pp.Array, first: int, k: int, low: float, high: float) -> pp.Array:
    """Padded values ``x_first, x_(first+1), ...`` of sorted rows, ``x_0 = low`` and ``x_(k+1) = high``.

    ``window`` holds the sorted values of 1-based ranks ``max(first, 1)`` onwards, up to rank k at most.
    """
    count, size = window.shape
    lead = 1 if first == 0 else 0
    trail = 1 if max(first, 1) + size - 1 == k else 0
    padded = np.empty((count, lead + size + trail), dtype=np.float64)
    if lead:
        padded[:, 0] = low
    if trail:
        padded[:, -1] = high
    padded[:, lead : lead + size] = window
    return padded


def _direct_pass(
    padded: pp.Array, first: int, rank: int, k: int, grid: LogGrid, top: float, window: int
) -> tuple[pp.Array, pp.IndexMatrix, int]:
    """Step 1 of the search: spans ``0..window`` directly; a row is settled once no longer span can beat it.

    ``padded`` holds the padded indices ``first, first + 1, ...`` of each row, at least up to those the pass
    reads; ``top`` is the grid value of ``ln(high - low)``. Returns the best term so far, the rows still open and
    the number of spans searched (in runs of ``_J_RUN``: up to the run after which every row is settled).

    The widest gap of each span comes from one compiled pass over all rows and spans; the logs are numpy's. A
    row settled after span j keeps its best: a longer span's term is at most ``top - decay(j + 1)``, which the
    best already reaches, so the maximum over all spans is the best at settling.
    """
    from privframe_std.statistics._order_jit import window_widest

    count = padded.shape[0]
    last = min(k, window)
    widest = np.empty((count, last + 1), dtype=np.float64)
    window_widest(np.ascontiguousarray(padded), first, rank, k, widest)
    terms = _log_terms(widest, np.arange(last + 1), grid)
    floor = top - float(grid.decay(k))  # the pair (0, k + 1)
    run_ends = np.minimum(np.arange(_J_RUN, last + _J_RUN + 1, _J_RUN), last + 1)
    running = np.maximum(np.maximum.accumulate(terms, axis=1)[:, run_ends - 1], floor)  # best after each run
    settled = running >= top - grid.decay(run_ends)
    best = running[:, -1].copy()
    active = np.flatnonzero(~settled[:, -1]).astype(np.intp)
    if not count:
        return best, active, 0
    j = int(run_ends[-1]) if active.size else int(run_ends[int(np.argmax(settled, axis=1).max())])
    if j > k:
        active = active[:0]
    return best, active, j


def _search_open_rows(
    rows: pp.Array,
    read: tuple[int, int],
    rank: int,
    low: float,
    high: float,
    grid: LogGrid,
    top: float,
    best: pp.Array,
    active: pp.IndexMatrix,
    stats: dict[str, int] | None,
    spans: int,
) -> None:
    """Steps 2 and 3 for the rows the direct pass left open: the pairs around the tie block of x_(r), then the
    divide and conquer; updates ``best[active]`` in place.

    ``rows`` are those rows (unpadded), sorted at least at the padded indices ``read = (first, last)``, which
    cover every index the divide and conquer reads; only that window is padded and searched.
    """
    if stats is not None:
        stats.update(window_spans=spans, open_rows=int(active.size), dc_levels=0, dc_cells=0)
    if not active.size:
        return
    k = rows.shape[1]
    first, last = read
    sorted_window = (max(first, 1) - 1, min(last, k) - 1)
    open_best = np.maximum(best[active], _tie_block_pairs(rows, rank, low, high, sorted_window, grid))
    reach = np.minimum(np.floor((top - open_best) / grid.beta_step) + 1.0, float(k))
    padded = _pad(rows[:, max(first, 1) - 1 : min(last, k)], first, k, low, high)
    best[active] = np.maximum(open_best, _divide_and_conquer(padded, rank - first, grid, reach, stats))


def _top(grid: LogGrid, low: float, high: float) -> float:
    """The grid value of ``ln(high - low)``, the largest term any pair can have."""
    return float(grid.quantize(np.array(math.log(high - low))))


def _tie_block_pairs(
    rows: pp.Array, rank: int, low: float, high: float, sorted_window: tuple[int, int], grid: LogGrid
) -> pp.Array:
    """Best grid term of the pairs (below, above), (below, r), (r, above) of each row padded with ``low`` and
    ``high``, with ``below`` the last record less than x_(r) (0: the pad) and ``above`` the first greater
    (k + 1: the pad). The rows need be sorted only at the 0-based positions ``sorted_window`` (holding the
    rank) and partitioned around them."""
    from privframe_std.statistics._order_jit import tie_block_gaps

    count = rows.shape[0]
    gaps = np.empty((3, count), dtype=np.float64)
    spans = np.empty((3, count), dtype=np.float64)
    tie_block_gaps(rows, rank, low, high, *sorted_window, gaps, spans)
    best: pp.Array = np.max(_log_terms(gaps, spans, grid), axis=0)
    return best


def _divide_and_conquer(
    padded: pp.Array, rank: int, grid: LogGrid, reach: pp.Array, stats: dict[str, int] | None
) -> pp.Array:
    """Max grid term over the pairs of each row's rectangle ``[r - W, r] x [r, r + W]``, W the power of two at or
    above ``reach + 1`` (clipped to the pads); rows are grouped by W and searched in blocks.

    ``padded`` may be a window of the padded rows: ``rank`` is then its index there, and the window must hold
    every index within W of it (or reach the pads).
    """
    count, width = padded.shape
    widths = np.exp2(np.ceil(np.log2(reach + 2.0))).astype(np.int64)
    out = np.empty(count, dtype=np.float64)
    for w in np.unique(widths):
        members = np.flatnonzero(widths == w)
        l0, u1 = max(0, rank - int(w)), min(width - 1, rank + int(w))
        block = max(1, _DC_CELLS // (2 * (u1 - l0 + 2)))
        for start in range(0, members.size, block):
            chosen = members[start : start + block]
            out[chosen] = _monge_row_maxima(np.ascontiguousarray(padded[chosen]), rank, l0, u1, grid, stats)
    return out


def _monge_row_maxima(
    padded: pp.Array, rank: int, l0: int, u1: int, grid: LogGrid, stats: dict[str, int] | None
) -> pp.Array:
    """Max over ``l0 <= l <= rank <= u <= u1`` of the grid term, per row: divide and conquer over l.

    One recursion level at a time for all rows and all nodes: the nodes (row ranges of l) are shared by the
    rows, the column range of each node is each row's own. A compiled pass writes a level's gaps, numpy takes
    their logs, and a second compiled pass turns them into grid terms and reduces them per node
    (:mod:`privframe_std.statistics._order_jit`). A node's middle row takes its rightmost best column (a row of
    ties only, all ``-inf``, takes the last column, which constrains nothing).

    Rounding loss: if the matrix is Monge up to eta per 2x2 minor, the best pair (l*, u*) can be cut from l*'s
    range only at a node whose middle row l_m has best column u_m in the same range; then
    ``M[l*, u_m] >= M[l*, u*] + (M[l_m, u_m] - M[l_m, u*]) - eta >= M[l*, u*] - eta`` and u_m stays in l*'s
    range. So the result is within eta times the number of levels of the true maximum.
    """
    from privframe_std.statistics._order_jit import dc_level_cells, dc_level_reduce

    count = padded.shape[0]
    node_lo = np.array([l0], dtype=np.intp)
    node_hi = np.array([rank], dtype=np.intp)
    col_lo = np.full((count, 1), rank, dtype=np.intp)
    col_hi = np.full((count, 1), u1, dtype=np.intp)
    best = np.full(count, -np.inf)
    levels = cells_total = 0
    while node_lo.size:
        levels += 1
        mid = (node_lo + node_hi) // 2
        total = int((col_hi - col_lo).sum()) + col_lo.size
        cells_total += total
        logs = np.empty(total, dtype=np.float64)
        dc_level_cells(padded, mid, col_lo, col_hi, logs)
        with np.errstate(divide="ignore"):
            np.log(logs, out=logs)  # numpy's log, as everywhere in the search (see _order_jit)
        arg = np.empty_like(col_lo)
        dc_level_reduce(logs, mid, col_lo, col_hi, grid.h, float(grid.steps), grid.cut, best, arg)
        left, right = node_lo < mid, mid < node_hi
        node_lo, node_hi = (
            np.concatenate([node_lo[left], mid[right] + 1]),
            np.concatenate([mid[left] - 1, node_hi[right]]),
        )
        col_lo = np.ascontiguousarray(np.concatenate([col_lo[:, left], arg[:, right]], axis=1))
        col_hi = np.ascontiguousarray(np.concatenate([arg[:, left], col_hi[:, right]], axis=1))
    if stats is not None:
        stats["dc_levels"] = max(stats.get("dc_levels", 0), levels)
        stats["dc_cells"] = stats.get("dc_cells", 0) + cells_total
    return best


def _level(_: Any, attribute: Any, value: Any) -> None:
    """The quantile level: required, a number in (0, 1)."""
    if value is None:
        raise ConfigError("the quantile statistic needs its level q in (0, 1); use 'median' for q = 0.5", path="q")
    pp.validators.probability(_, attribute, value)


_EXPONENTIAL = MappingProxyType({pp.GDP: "exponential", pp.ApproxDP: "exponential", pp.PureDP: "exponential"})


@attrs.frozen
class Quantile:
    """The ``q``-quantile as the order statistic of rank ``r = max(1, ceil(q k))`` of k bounded scalars.

    Data are clipped to the public ``bounds=(low, high)``. Global sensitivity ``high - low``; smooth
    sensitivity per ``docs/algorithms.md``, section 3.2 (works unchanged on a with-replacement multiset).
    Rate ``sqrt(k)``.

    Parameters
    ----------
    q : float
        Quantile level in (0, 1); required (there is no default level: use ``median`` for q = 1/2).
    """

    name: ClassVar[str] = "quantile"
    q: float | None = attrs.field(default=None, validator=_level)

    @property
    def level(self) -> float:
        """``q``, checked when the statistic was built (never None)."""
        assert self.q is not None
        return self.q

    @property
    def traits(self) -> pp.StatisticTraits:
        """A quantile at level ``q``, released by the exponential mechanism by default (any budget kind)."""
        return pp.StatisticTraits(quantile=self.level, equivariant=True, default_mechanisms=_EXPONENTIAL)

    def rank(self, k: int) -> int:
        """The 1-based rank of the order statistic on k records."""
        return min(k, max(1, math.ceil(round(self.level * k, 9))))

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """Scalar bounds and one-dimensional data."""
        _scalar_bounds(bounds, self.name)
        if len(shape) != 1:
            raise DataError(f"statistic '{self.name}' needs one-dimensional data", path="x")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Clip one-dimensional data to the bounds."""
        self.check_shape(x.shape, bounds)
        return _scalar_bounds(bounds, self.name).clip(x)

    def evaluate(self, x: pp.Array) -> pp.Array:
        """The order statistic of the full data, shape ``(1,)``."""
        r = self.rank(x.shape[0])
        return np.partition(x, r - 1)[r - 1 : r].astype(np.float64)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """Order statistics of B resamples, shape ``(B, 1)``."""
        r = self.rank(index.shape[1])
        gathered = np.take(x, index)
        gathered.partition(r - 1, axis=1)
        return gathered[:, r - 1 : r]

    def evaluate_sorted(self, rows: pp.Array) -> pp.Array:
        """:meth:`evaluate_batch` for B resamples given as ascending rows ``(B, k)`` (``pp.SortedStatistic``):
        the column of the rank, with no sort."""
        r = self.rank(rows.shape[1])
        return rows[:, r - 1 : r]

    def sensitivity(self, k: int, bounds: Any) -> float:
        """Global L2 sensitivity under replace-one: the width of the bounds."""
        return _scalar_bounds(bounds, self.name).width

    def value_range(self, bounds: Any) -> tuple[float, float]:
        """An order statistic of clipped data lies within the bounds."""
        checked = _scalar_bounds(bounds, self.name)
        return (checked.low, checked.high)

    def evaluate_weighted(self, values: pp.Array, weights: pp.Array) -> pp.Array:
        """The order statistic of rank ``rank(k)`` of each weighted resample of one sorted block, ``(R,)``."""
        cumulative = np.cumsum(weights, axis=1)  # C_i = records <= v_i
        sizes, inverse = np.unique(np.rint(cumulative[:, -1]).astype(np.int64), return_inverse=True)
        rank = np.array([self.rank(int(k)) for k in sizes])[inverse]
        position = np.count_nonzero(cumulative < rank[:, np.newaxis], axis=1)
        result: pp.Array = values[np.minimum(position, values.size - 1)]
        return result

    def population_value(self, population: Any) -> float:
        """The population q-quantile (``population.ppf(q)``; the lower median for a continuous law)."""
        return float(population_law(population, "ppf", self.name).ppf(self.level))

    def log_smooth_sensitivity(self, x: pp.Array, beta: float, bounds: Any) -> float:
        """``ln SS_beta`` at the (clipped) full data."""
        b = _scalar_bounds(bounds, self.name)
        rows = np.array(x, dtype=np.float64, ndmin=2)
        return float(order_statistic_log_smooth(rows, self.rank(x.shape[0]), beta, b.low, b.high)[1][0])

    def evaluate_log_smooth_batch(
        self, x: pp.Array, index: pp.IndexMatrix, beta: float, bounds: Any
    ) -> tuple[pp.Array, pp.Array]:
        """Values ``(B, 1)`` and ``ln SS_beta`` ``(B,)`` of B resamples from one partial sort per row."""
        b = _scalar_bounds(bounds, self.name)
        values, log_smooth = order_statistic_log_smooth(
            np.take(x, index), self.rank(index.shape[1]), beta, b.low, b.high
        )
        return values[:, np.newaxis], log_smooth

    def evaluate_log_smooth_sorted(self, rows: pp.Array, beta: float, bounds: Any) -> tuple[pp.Array, pp.Array]:
        """:meth:`evaluate_log_smooth_batch` for B resamples given as ascending rows ``(B, k)``
        (``pp.SortedSmoothStatistic``): no sort, the same doubles."""
        b = _scalar_bounds(bounds, self.name)
        values, log_smooth = order_statistic_log_smooth(
            rows, self.rank(rows.shape[1]), beta, b.low, b.high, presorted=True
        )
        return values[:, np.newaxis], log_smooth


@attrs.frozen
class Median(Quantile):
    """The lower median: the order statistic of rank ``ceil(k / 2)`` of k bounded scalars.

    The lower median (not the average of the two middle values) is what the smooth-sensitivity bound of
    ``docs/algorithms.md``, section 3.2, covers. Data are clipped to the public ``bounds=(low, high)``.
    """

    name: ClassVar[str] = "median"
    q: float = attrs.field(default=0.5, init=False)
