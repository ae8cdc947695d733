"""theta on every resample of in-memory data, data block by data block: the cluster's plan on one machine.

Above one public data block, a resample row of the in-memory path gathers its records from all of ``x``:
at n = 1e8 (800 MB, more than the last-level cache) every row streams about 40% of the array's cache lines
from memory, B times. Here the loop is turned around as on a cluster (:mod:`privframe_std.distributed.plan`):
data blocks outside, every resample inside. A data block (8 MiB) is read from memory once and stays in
cache while the indices of all B resamples that fall in it are drawn from the stream seeded by (resample
block seed, data block) and their partials taken. The partials are combined in block order, as in memory
and on a cluster, so the result is the in-memory path's, bit for bit (``DecomposableStatistic``'s contract).
Threads take contiguous runs of data blocks; the result does not depend on their number.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

import privframe.plugin as pp
from privframe.errors import DataError
from privframe.plugin.evaluation import finite, guarded
from privframe_std.distributed.plan import DrawPlan, IntArray, draw_plan, draws_blockwise
from privframe_std.samplers._blocks import data_blocks
from privframe_std.statistics import _decompose
from privframe_std.statistics._decompose import SCALE, grouped_plain_sum_partials, plain_sum_columns
from privframe_std.statistics.mean import Mean

if TYPE_CHECKING:
    from privframe_std.distributed._fused import WorStreams

__all__ = ["block_resample_partials", "evaluate_resamples", "evaluates_blockwise", "plan_streams"]


def evaluates_blockwise(ctx: pp.RunContext[Any]) -> bool:
    """Whether :func:`evaluate_resamples` takes the data-block loop: in-memory data of more than one public
    data block, a decomposable statistic and a sampler that draws block by block (public facts only)."""
    return (
        ctx.distributed is None
        and isinstance(ctx.statistic, pp.DecomposableStatistic)
        and len(data_blocks(ctx.n)) > 1
        and draws_blockwise(ctx.sampler)
    )


def evaluate_resamples(ctx: pp.RunContext[Any], resamples: pp.Resamples, dimension: int) -> pp.Array:
    """theta on every resample, ``(B, dimension)``: the data-block loop where :func:`evaluates_blockwise`,
    else :meth:`RunContext.evaluate_resamples <privframe.plugin.RunContext.evaluate_resamples>`; the same
    doubles either way."""
    if not evaluates_blockwise(ctx):
        return ctx.evaluate_resamples(resamples, dimension)
    statistic = ctx.statistic
    assert isinstance(statistic, pp.DecomposableStatistic)
    x = ctx.data
    plan = draw_plan(ctx.sampler, resamples)
    streams = plan_streams(plan) if type(ctx.statistic) is Mean and x.ndim == 1 else None
    spans = plan.spans
    workers = min(resamples.workers, len(spans))
    pieces = _pieces(plan, workers)
    bar = resamples.progress_bar(len(pieces), unit="block parts")
    lock = threading.Lock()
    state = np.geterr()  # worker threads do not inherit the caller's floating-point error state

    def run(piece: tuple[int, range]) -> pp.Array:
        with np.errstate(**state):
            part = _block_partials(statistic, x, plan, streams, piece[0], piece[1])
        with lock:
            bar.advance()
        return part

    try:
        with guarded("statistic", statistic.name, "partial_batch"):
            if workers <= 1:
                parts = [run(piece) for piece in pieces]
            else:
                # Threads take the pieces in order as they free up, so a short last data block does not
                # leave one thread idle; the pieces come back in order whatever took them.
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    parts = list(pool.map(run, pieces))
    finally:
        bar.close()
    per_block = len(pieces) // len(spans)
    partials = [
        np.concatenate(parts[j * per_block : (j + 1) * per_block], axis=0) if per_block > 1 else parts[j]
        for j in range(len(spans))
    ]
    with guarded("statistic", statistic.name, "combine"):
        theta_star = np.asarray(statistic.combine(partials, resamples.m), dtype=np.float64)
    if theta_star.shape != (resamples.B, dimension):
        raise DataError(
            f"'{statistic.name}' combined to shape {theta_star.shape}, expected {(resamples.B, dimension)}",
            path="statistic",
        )
    return finite(theta_star)


GROUP_INDICES = 1 << 20
"""Indices (8 MiB) of the resample blocks whose sums are taken together over one data block, a stretch at a time."""


def _pieces(plan: DrawPlan, workers: int) -> list[tuple[int, range]]:
    """The threads' tasks: each data block with its resample blocks cut into ``workers`` runs of about
    equal rows (the whole block's rows with one worker), data block by data block (public facts only).

    Cutting every data block, not handing each thread a run of whole blocks, keeps the threads' work equal
    where the data blocks are few and the last one short (n = 1e7 has 9.5 blocks' worth of records in 10).
    """
    blocks = len(plan.blocks)
    cuts = min(max(workers, 1), blocks)
    rows = np.cumsum([0] + [block.rows for block in plan.blocks])
    nearest = (int(np.abs(rows - rows[-1] * k / cuts).argmin()) for k in range(1, cuts))
    runs = [range(lo, hi) for lo, hi in pairwise(sorted({0, *nearest, blocks}))]
    return [(j, run) for j in range(len(plan.spans)) for run in runs]


def _block_partials(
    statistic: pp.DecomposableStatistic,
    x: pp.Array,
    plan: DrawPlan,
    streams: WorStreams | None,
    j: int,
    resample_blocks: range | None = None,
) -> pp.Array:
    """The partials of data block j of the rows of ``resample_blocks`` (all by default), ``(rows, p)``, in
    row order (``x`` all the records)."""
    return block_resample_partials(statistic, x, 0, plan, j, streams, resample_blocks)


def plan_streams(plan: DrawPlan) -> WorStreams | None:
    """The resample blocks' streams for :func:`~privframe_std.distributed._fused.wor_block_sums`, where the
    plan draws 'wor' rows over several data blocks; else None (public facts: the design and the seeds)."""
    if plan.design.replace or any(block.counts is None for block in plan.blocks):
        return None
    from privframe_std.distributed._fused import wor_streams

    return wor_streams([block.seed for block in plan.blocks], [block.rows for block in plan.blocks])


def block_resample_partials(
    statistic: pp.DecomposableStatistic,
    records: pp.Array,
    offset: int,
    plan: DrawPlan,
    j: int,
    streams: WorStreams | None = None,
    resample_blocks: range | None = None,
) -> pp.Array:
    """The partials of data block j of every resample, ``(B, p)``, in row order; ``records[i - offset]`` is
    record i (all of ``x`` with offset 0 in memory, the block's own records with its start on a worker).
    With ``resample_blocks`` (a step-1 range of the plan's resample blocks), only their rows, ``(rows, p)``:
    the rows the whole call gives them, the same doubles.

    The mean on scalars of 'wor' resamples takes one compiled call for the whole data block, which draws
    every resample's part and sums it (:func:`~privframe_std.distributed._fused.wor_block_sums`, with the
    plan's ``streams`` from :func:`plan_streams`, computed here when not given). With replacement, the
    mean on scalars sums through the indices in compiled passes (no gathered copy), the rows of several
    resample blocks together, a cache-sized stretch of the block at a time; each group's indices are drawn
    into one buffer reused for the whole data block. The mean on column-major vectors (as prepared) takes
    the same passes one coordinate's column at a time, with either sampler. Any other decomposable statistic
    gets the gathered records. Either way the doubles are those of ``partial_batch`` on the gathered records.
    """
    start, stop = plan.spans[j]
    chosen = range(len(plan.blocks)) if resample_blocks is None else resample_blocks
    if type(statistic) is Mean and records.ndim == 1:
        if streams is None:
            streams = plan_streams(plan)
        if streams is not None:
            fused = _fused_partials(records, offset, plan, j, streams, chosen)
            if fused is not None:
                return fused

    def gathered(index: IntArray, lengths: IntArray) -> pp.Array:
        return np.asarray(statistic.partial_batch(records[index - offset], lengths), dtype=np.float64)

    # Vectors of the prepared mean are laid out column by column: each coordinate is summed as a scalar is.
    columns = plain_sum_columns(records) if type(statistic) is Mean else None
    if columns is None:
        return np.concatenate([gathered(*plan.part(i, j)) for i in chosen], axis=0)
    parts: list[pp.Array] = []
    sizes = {i: int(plan.counts(i, j).sum()) for i in chosen}
    buffer = np.empty(max(GROUP_INDICES + max(sizes.values(), default=0), 1), dtype=np.intp)
    first = chosen.start
    while first < chosen.stop:
        # The parts of a group are drawn into one buffer, reused for every group of the data block: no
        # concatenated copy of the indices, no fresh allocation a part.
        group = [first]
        held = sizes[first]
        while held < GROUP_INDICES and group[-1] + 1 < chosen.stop:
            group.append(group[-1] + 1)
            held += sizes[group[-1]]
        at = 0
        lengths = []
        for i in group:
            lengths.append(plan.part(i, j, out=buffer[at : at + sizes[i]])[1])
            at += sizes[i]
        index, lengths_all = buffer[:at], np.concatenate(lengths)
        if offset:
            index -= offset  # in place: positions in ``records``
        sums = [
            grouped_plain_sum_partials(column, index, lengths_all, start - offset, stop - offset) for column in columns
        ]
        found = [part for part in sums if part is not None]
        summed: pp.Array | None = np.concatenate(found, axis=1) if len(found) == len(sums) else None
        if summed is None:
            offsets = np.cumsum([0] + [sizes[i] for i in group])
            summed = np.concatenate(
                [gathered(index[offsets[g] : offsets[g + 1]] + offset, lengths[g]) for g in range(len(group))],
                axis=0,
            )
        parts.append(summed)
        first = group[-1] + 1
    return np.concatenate(parts, axis=0)


def _fused_partials(
    records: pp.Array, offset: int, plan: DrawPlan, j: int, streams: WorStreams, chosen: range
) -> pp.Array | None:
    """``(rows, 1)`` partials ``SCALE * sum`` of data block j for the rows of the resample blocks ``chosen``
    by one compiled call; None where a sum overflows
    (the caller's gathered path then rescales: the same doubles as ``partial_batch``) or the records are not
    contiguous doubles (the prepared mean's are)."""
    from privframe_std.distributed._fused import wor_block_sums

    start, stop = plan.spans[j]
    if records.dtype != np.float64 or not records.flags.c_contiguous:
        return None
    counts = np.concatenate([plan.counts(i, j) for i in chosen]).astype(np.int64, copy=False)
    sums = wor_block_sums(
        streams, j, counts, stop - start, records, start - offset, GROUP_INDICES, _decompose.SUM_STRETCH, chosen
    )
    sums *= SCALE
    return sums[:, np.newaxis] if bool(np.isfinite(sums).all()) else None
