"""theta on the full data and on every resample of a Dask array: partial sums on the workers, combined here.

One task per public data block (the array is rechunked on the workers so that chunk j is data block j):
it checks its records are finite, prepares (clips) them, and returns the statistic's partials of the full
data and of the indices of every resample that fall in the block. Only those ``(B, p)`` arrays come back;
the client combines them in block order, which is the order the in-memory evaluation uses, so both give
the same doubles. Tasks run on the current ``distributed`` client if there is one, else on Dask's threaded
scheduler.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError
from privframe.plugin.evaluation import finite, guarded
from privframe_std.distributed.plan import DrawPlan, draw_plan
from privframe_std.samplers._blocks import data_blocks

__all__ = ["evaluate_distributed", "evaluate_full_distributed", "gather_rows"]

BlockResult = tuple[bool, pp.Array | None, pp.Array | None]


def evaluate_distributed(ctx: pp.RunContext[Any], resamples: pp.Resamples) -> tuple[pp.Array, pp.Array]:
    """theta on the full data ``(d,)`` and on every resample ``(B, d)``, computed where the data live."""
    statistic = _decomposable(ctx)
    plan = draw_plan(ctx.sampler, resamples)
    results = _run_blocks(ctx, plan)
    with guarded("statistic", ctx.statistic.name, "combine"):
        theta_hat = _full_value(statistic, results, ctx.n)
        theta_star = np.asarray(
            statistic.combine([r[2] for r in results if r[2] is not None], resamples.m), dtype=float
        )
    if theta_star.shape != (resamples.B, theta_hat.shape[0]):
        expected = (resamples.B, theta_hat.shape[0])
        raise DataError(
            f"'{ctx.statistic.name}' combined to shape {theta_star.shape}, expected {expected}", path="statistic"
        )
    return theta_hat, finite(theta_star)


def evaluate_full_distributed(ctx: pp.RunContext[Any]) -> pp.Array:
    """theta on the full data ``(d,)`` only, from partial sums on the workers (every record checked finite)."""
    statistic = _decomposable(ctx)
    results = _run_blocks(ctx, None)
    with guarded("statistic", ctx.statistic.name, "combine"):
        return _full_value(statistic, results, ctx.n)


def gather_rows(ctx: pp.RunContext[Any], index: pp.IndexMatrix) -> tuple[pp.Array, pp.IndexMatrix]:
    """The prepared records that ``index`` names, fetched from the workers, and ``index`` remapped to them.

    Only the distinct rows named travel to the client (for PrivSub: at most T m of the n). Their order is
    the rows' order in the data, so a sorted index row stays sorted after the remapping.
    """
    source = ctx.distributed
    if source is None:
        raise ConfigError("needs distributed data", path="method")
    wanted = np.unique(index)
    values = np.ascontiguousarray(source.array[wanted].compute(), dtype=np.float64)
    if not bool(np.all(np.isfinite(values))):
        raise DataError("contains NaN or infinite values (they are never silently dropped)", path="x")
    prepared = np.ascontiguousarray(_preparation(ctx)(values))
    return prepared, np.searchsorted(wanted, index).astype(np.intp)


def _preparation(ctx: pp.RunContext[Any]) -> pp.Preparation:
    """How the workers prepare their records: as the context's data were (shifted, clipped)."""
    return pp.Preparation(ctx.statistic, ctx.coordinates)


def _decomposable(ctx: pp.RunContext[Any]) -> pp.DecomposableStatistic:
    statistic = ctx.statistic
    if ctx.distributed is None or not isinstance(statistic, pp.DecomposableStatistic):
        raise ConfigError("needs distributed data and a decomposable statistic", path="method")
    return statistic


def _run_blocks(ctx: pp.RunContext[Any], plan: DrawPlan | None) -> tuple[BlockResult, ...]:
    """One task per public data block (the array rechunked to the blocks); a ``DataError`` if any record is
    not finite, before anything is released."""
    source = ctx.distributed
    statistic = ctx.statistic
    assert source is not None
    dask: Any = importlib.import_module("dask")  # the dask extra; only reached with a Dask array in hand
    spans = data_blocks(source.n)
    chunks: dict[int, Any] = {0: tuple(stop - start for start, stop in spans)}
    if len(source.shape) == 2:
        chunks[1] = -1
    pieces = source.array.rechunk(chunks).to_delayed().reshape(-1)
    task = dask.delayed(_block_partials)
    tasks = [
        task(piece, j, start, statistic, _preparation(ctx), None if plan is None else plan.for_data_block(j))
        for j, (piece, (start, _)) in enumerate(zip(pieces, spans, strict=True))
    ]
    with guarded("statistic", statistic.name, "partial_batch"):
        results: tuple[BlockResult, ...] = dask.compute(*tasks)
    if not all(ok for ok, _, _ in results):
        raise DataError("contains NaN or infinite values (they are never silently dropped)", path="x")
    return results


def _full_value(statistic: pp.DecomposableStatistic, results: tuple[BlockResult, ...], n: int) -> pp.Array:
    theta = np.asarray(statistic.combine([r[1] for r in results if r[1] is not None], n), dtype=float)
    return finite(theta[0].reshape(-1))


def _block_partials(
    chunk: Any,
    j: int,
    start: int,
    statistic: pp.DecomposableStatistic,
    preparation: pp.Preparation,
    plan: DrawPlan | None,
) -> BlockResult:
    """On a worker: data block j's finiteness, and its partials of the full data and (with a plan) of every
    resample."""
    values = np.ascontiguousarray(chunk, dtype=np.float64)
    if not bool(np.all(np.isfinite(values))):
        return False, None, None
    prepared = np.ascontiguousarray(preparation(values))
    full = statistic.partial_batch(prepared, np.array([prepared.shape[0]], dtype=np.int64))
    if plan is None:
        return True, np.asarray(full, dtype=np.float64), None
    from privframe_std.distributed.local import block_resample_partials

    return True, np.asarray(full, dtype=np.float64), block_resample_partials(statistic, prepared, start, plan, j)
