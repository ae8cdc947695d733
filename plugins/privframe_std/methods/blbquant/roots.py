"""BLBQuant's little bootstraps: roots ``tau_n (theta(block_j) - theta_tilde(resample_{j,r}))``.

See ``docs/algorithms.md``, section 5.

Each block j holds b records. Its R little-bootstrap resamples have n records drawn with replacement from
the block, represented by multinomial weights ``W_{j,r} ~ Multinomial(n; 1/b, ..., 1/b)`` (never as n
records), and the private estimator runs on each weighted resample (its noise is simulated, never
released). The estimator on weighted resamples comes from the parts' capabilities:

- a mechanism that selects from weighted data (``exponential``: ``pp.WeightedSelectionMechanism``);
- otherwise a statistic evaluated on weighted data (``pp.WeightedStatistic``: mean, quantiles) plus the
  additive mechanism's noise at the sensitivity of a size-n statistic.

Randomness: every block has its own generator (weights, estimator noise), so a block's roots depend on its
own records only. With a shared generator all blocks use the same weight matrix (drawn once from a separate
stream, independent of the data); each block's replicates are still i.i.d. with the exact law, but the
Monte Carlo errors of different blocks are correlated. Work is done in chunks of replicates so memory
stays bounded. The cost is of order ``R b`` per block, ``R n`` in all.

The mean (a statistic with the ``mean`` trait) under the standard Laplace mechanism takes a compiled path
when the weights are independent: each little bootstrap's multinomial weights are drawn one count at a time
and only their weighted sum is kept, then the exact lattice noise is added (``_jit.mean_replicates``), all
from one SFC64 stream seeded by the block's generator. The law of every root is the one of the generic path;
its draws are not the same ones. On either path blocks run on up to ``workers`` threads (each block has
its own generator, so the roots do not depend on the thread count).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError
from privframe.privacy import noise
from privframe_std.mechanisms.laplace import LaplaceMechanism
from privframe_std.samplers._kernels import SMALL_RANGE, fast_stream, lemire_threshold
from privframe_std.samplers.bootstrap import multinomial_counts, poisson_stage
from privframe_std.statistics._finite import headroom

__all__ = ["MeanTables", "WeightedEstimator", "block_roots", "mean_tables", "weighted_estimator"]

_CHUNK_CELLS = 2**22
"""Weight-matrix cells (8 bytes each) processed at once."""

Replicates = Callable[[pp.Array, pp.Array, np.random.Generator], pp.Array]
"""``estimate(values, weights, rng) -> (R,)`` on weighted resamples of one block of sorted values."""


@attrs.frozen
class WeightedEstimator:
    """The private estimator on weighted resamples of one block: the estimate function and what it uses."""

    estimate: Replicates = attrs.field(repr=False)
    mechanism: str
    event: pp.PrivacyEvent
    compiled_mean: noise.LatticePlan | None = None
    """The Laplace plan of a mean under the standard Laplace mechanism: the replicates may take the compiled
    path (see the module docstring); None otherwise."""


def weighted_estimator(
    statistic: pp.Statistic, mechanism: object, event: pp.PrivacyEvent, bounds: pp.Bounds
) -> WeightedEstimator:
    """The private estimator's replicates from the parts' weighted-data capabilities (see the module doc)."""
    if isinstance(mechanism, pp.WeightedSelectionMechanism):
        selector = mechanism

        def select(values: pp.Array, weights: pp.Array, rng: np.random.Generator) -> pp.Array:
            return selector.select_weighted(statistic, values, weights, bounds, event, rng)

        return WeightedEstimator(select, event.mechanism, event)
    if isinstance(mechanism, pp.Mechanism) and isinstance(statistic, pp.WeightedStatistic):
        additive, weighted = mechanism, statistic

        def perturb(values: pp.Array, weights: pp.Array, rng: np.random.Generator) -> pp.Array:
            return additive.apply(weighted.evaluate_weighted(values, weights), event, rng)

        plan = event.noise
        laplace = isinstance(plan, noise.LatticePlan) and plan.kind == "laplace"
        fast = pp.traits_of(statistic).mean and isinstance(mechanism, LaplaceMechanism) and laplace
        compiled = plan if fast and isinstance(plan, noise.LatticePlan) else None
        return WeightedEstimator(perturb, event.mechanism, event, compiled)
    raise ConfigError(
        f"blbquant needs a statistic it can evaluate on weighted resamples (mean, median, quantile) with an "
        f"additive mechanism, or a mechanism that selects from weighted data (exponential); '{statistic.name}' "
        "with this mechanism is neither",
        path="statistic",
    )


def _row_chunks(rows: int, width: int) -> Iterator[tuple[int, int]]:
    step = max(1, _CHUNK_CELLS // max(1, width))
    for start in range(0, rows, step):
        yield start, min(rows, start + step)


def block_roots(
    estimator: WeightedEstimator,
    blocks: pp.Array,
    block_values: pp.Array,
    *,
    n: int,
    R: int,
    tau_n: float,
    block_rngs: list[np.random.Generator],
    shared_rng: np.random.Generator | None,
    workers: int = 1,
    bound: float = math.inf,
    advance: Callable[[], None] | None = None,
) -> pp.Array:
    """Roots ``(s, R)``: row j holds ``tau_n (theta(block_j) - theta_tilde)`` over block j's R resamples.

    ``blocks`` is the ``(s, b)`` matrix of the blocks' record values and ``block_values`` the statistic on
    each block. ``shared_rng`` set: one weight matrix for all blocks (see the module docstring). ``workers``
    threads take the blocks (the roots do not depend on their number). ``bound`` is the public bound on
    ``|record|`` that decides whether the compiled mean's sums need rescaling to stay finite (by default
    they are rescaled). ``advance`` is called once per block done (a progress bar).
    """
    s, b = blocks.shape
    if estimator.compiled_mean is not None and shared_rng is None:
        return _compiled_mean_roots(
            estimator.compiled_mean,
            blocks,
            block_values,
            n=n,
            R=R,
            tau_n=tau_n,
            block_rngs=block_rngs,
            workers=workers,
            bound=bound,
            advance=advance,
        )
    roots = np.empty((s, R), dtype=np.float64)
    order = np.argsort(blocks, axis=1, kind="stable")
    sorted_blocks = np.take_along_axis(blocks, order, axis=1)
    done = _locked(advance)
    for start, stop in _row_chunks(R, b):
        rows = stop - start
        shared = None if shared_rng is None else multinomial_counts(shared_rng, rows, b, n)

        def run(j: int, start: int = start, stop: int = stop, shared: pp.Array | None = shared) -> None:
            # Shared: a record keeps its weight column whatever its rank. Independent: the columns are
            # exchangeable, so putting them in the sort order would not change their law. Each block
            # draws from its own generator, so the roots do not depend on the threads.
            if shared is not None:
                weights = shared[:, order[j]]
            else:
                weights = multinomial_counts(block_rngs[j], stop - start, b, n)
            estimates = estimator.estimate(sorted_blocks[j], weights, block_rngs[j])
            roots[j, start:stop] = tau_n * (block_values[j] - estimates)
            if stop == R:
                done()

        _each_block(run, s, workers)
    return roots


def _locked(advance: Callable[[], None] | None) -> Callable[[], None]:
    """``advance`` made safe to call from several threads (nothing when None)."""
    lock = threading.Lock()

    def done() -> None:
        if advance is not None:
            with lock:
                advance()

    return done


def _each_block(run: Callable[[int], None], s: int, workers: int) -> None:
    """``run(j)`` for every block j, on up to ``workers`` threads."""
    if workers <= 1 or s <= 1:
        for j in range(s):
            run(j)
        return
    with ThreadPoolExecutor(max_workers=min(workers, s)) as pool:
        list(pool.map(run, range(s)))


_DOUBLE_MAX = float(np.finfo(np.float64).max)

_PIECES = 1 << 16
"""Values of a 16-bit piece of a random word."""


@attrs.frozen
class MeanTables:
    """The public tables of the compiled mean replicates of k-record blocks weighted to ``total`` counts.

    They depend on k and ``total`` only, so one set serves every block (see ``_jit.mean_replicates``).
    """

    poisson: bool
    """Whether the counts start from i.i.d. Poisson draws (a rate of at least 1 a cell), else all are filled."""
    table: npt.NDArray[np.float64] = attrs.field(repr=False)
    """The Poisson count of each 16-bit prefix of a uniform, NaN where the CDF decides within it."""
    starts: npt.NDArray[np.int64] = attrs.field(repr=False)
    """For each prefix j, the number of CDF values at or below ``j / 2^16``."""
    cdf: npt.NDArray[np.float64] = attrs.field(repr=False)
    """The Poisson CDF on its support."""
    bits: int
    """Bits of a fill piece: 16 up to ``SMALL_RANGE`` cells, else 32."""
    threshold: int
    """Lemire's rejection threshold of a fill piece."""
    cells: npt.NDArray[np.uint16] = attrs.field(repr=False)
    """With 16-bit pieces, the cell of each piece (k where it is rejected); else unused."""


def mean_tables(k: int, total: int) -> MeanTables:
    """The tables :func:`_jit.mean_replicates` needs for blocks of k records drawn to ``total`` counts."""
    stage = poisson_stage(k, total)
    if stage is None:
        table = cdf = np.zeros(1, dtype=np.float64)
        starts = np.zeros(1, dtype=np.int64)
    else:
        _, table, cdf = stage
        starts = np.searchsorted(cdf, np.arange(_PIECES, dtype=np.float64) / _PIECES, side="right").astype(np.int64)
    bits = 16 if k <= SMALL_RANGE else 32
    threshold = lemire_threshold(k, bits)
    if bits == 16:
        products = np.arange(_PIECES, dtype=np.uint64) * np.uint64(k)
        accepted = (products & np.uint64(_PIECES - 1)) >= threshold
        cells = np.where(accepted, products >> np.uint64(16), np.uint64(k)).astype(np.uint16)
    else:
        cells = np.zeros(1, dtype=np.uint16)
    return MeanTables(stage is not None, table, starts, cdf, bits, threshold, cells)


def _compiled_mean_roots(
    plan: noise.LatticePlan,
    blocks: pp.Array,
    block_values: pp.Array,
    *,
    n: int,
    R: int,
    tau_n: float,
    block_rngs: list[np.random.Generator],
    workers: int,
    bound: float,
    advance: Callable[[], None] | None,
) -> pp.Array:
    from privframe_std.methods.blbquant import _jit

    s, b = blocks.shape
    tables = mean_tables(b, n)
    # A weighted sum of n records is at most n * bound: scale by an exact power of two (no rounding changes)
    # where that could overflow, as finite_weighted_mean does.
    scale = 1.0 if bound * n < _DOUBLE_MAX / 2 else headroom(n)
    values = np.ascontiguousarray(blocks, dtype=np.float64) * scale
    roots = np.empty((s, R), dtype=np.float64)

    def run(j: int) -> None:
        estimates = np.empty(R, dtype=np.float64)
        _jit.mean_replicates(
            fast_stream(block_rngs[j]),
            tables.table,
            tables.starts,
            tables.cdf,
            tables.cells,
            values[j],
            n,
            tables.poisson,
            tables.bits,
            tables.threshold,
            1.0 / scale,
            plan.grid,
            plan.t,
            estimates,
        )
        roots[j] = tau_n * (block_values[j] - estimates)
        done()

    done = _locked(advance)
    _each_block(run, s, workers)
    return roots
