"""Executing a sampler's design: block seeding, chunking under a memory budget, and worker threads.

A sampler (:class:`privframe.plugin.Sampler`) only says *what* it draws: a :class:`Design` (n, m, B,
kappa, with or without replacement, rejection bound rho) and how to draw one block of rows from a
generator. This module decides *how*: the B rows are cut into blocks of ``block_rows`` rows, block i is
drawn from its own seed (so any grouping of blocks gives the same rows), and consumers walk the blocks
in chunks that fit ``memory_budget`` on up to ``workers`` threads. Neither run option changes a result.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import attrs
import numpy as np

from privframe import validators
from privframe._progress import Progress
from privframe._typing import Array, IndexMatrix
from privframe.errors import ConfigError, PluginError
from privframe.resampling.design import Design
from privframe.resampling.ranked import RankedData
from privframe.resampling.seeds import BlockSeeds, seed_sequence_of

if TYPE_CHECKING:
    from privframe.plugin.protocols import Sampler

__all__ = [
    "BLOCK_ENTRIES",
    "BLOCK_ROWS",
    "DEFAULT_MEMORY_BUDGET",
    "PROGRESS_INDICES",
    "Resamples",
    "RunOptions",
    "block_rows",
    "checked_design",
    "draw",
    "settle_allocator",
]

T = TypeVar("T")

BLOCK_ROWS = 128
"""Rows per independently seeded block (fewer for very long rows, see :func:`block_rows`)."""

BLOCK_ENTRIES = 2**20
"""Most indices in one block (8 MiB of int64, as much again for the gathered values), so a block stays
cache-sized: 128 rows of n = 20 000 bootstrap indices (twice this) made PrivBoot a third slower than 52."""

DEFAULT_MEMORY_BUDGET = 256 * 2**20
"""Bytes the chunks of resamples in flight may use together (256 MiB)."""

PROGRESS_INDICES = 2 * 10**8
"""B m from which a call draws a progress bar by default: a few seconds at tens of ns an index."""


def block_rows(m: int) -> int:
    """Rows per block: ``BLOCK_ROWS``, fewer when rows are so long that a block would exceed ``BLOCK_ENTRIES``.

    It depends on m only - never on the memory budget or the number of workers - so results do not
    depend on how the blocks are grouped into chunks.
    """
    return max(1, min(BLOCK_ROWS, BLOCK_ENTRIES // m))


@attrs.frozen
class RunOptions:
    """How a call executes; results never depend on these.

    Parameters
    ----------
    memory_budget : int, default 256 MiB
        Bytes the chunks of resamples (and the values gathered through them) in flight may use together.
    workers : int, default 1
        Threads evaluating blocks in parallel; results are bit-identical for any value.
    progress : bool or None, default None
        A bar on standard error counting the blocks of resamples. None: only when standard error is a
        terminal and the call draws at least ``PROGRESS_INDICES`` indices (a few seconds); True: always
        (still only on a terminal); False: never.
    """

    memory_budget: int = attrs.field(
        default=DEFAULT_MEMORY_BUDGET, converter=validators.as_int, validator=validators.integer_at_least(2**16)
    )
    workers: int = attrs.field(default=1, converter=validators.as_int, validator=validators.integer_at_least(1))
    progress: bool | None = attrs.field(default=None, validator=validators.optional(validators.boolean))


@attrs.frozen
class Resamples:
    """The B resamples of a design, produced block by block on demand.

    Rows come in fixed blocks of ``block_rows``, each from its own seed, so the result is bit-identical
    whatever chunk size or worker count the consumer uses.

    Attributes
    ----------
    design : Design
        What is drawn.
    block_seeds : sequence of SeedSequence
        One seed per block of rows.
    draw_block : callable
        ``draw_block(generator, rows) -> (rows, m)`` index matrix; may raise ``SamplerRejected``.
    options : RunOptions
        Memory budget and worker threads.
    sum_block : callable or None
        ``sum_block(generator, rows, x)``: per data block, the ``(rows,)`` sums of ``x`` over the rows
        ``draw_block`` would draw from that generator, or None (draw them); None when the sampler cannot
        (see ``pp.SummingSampler``).
    sort_block : callable or None
        ``sort_block(generator, rows, ranked)``: the ``(rows, m)`` values of the rows ``draw_block`` would
        draw from that generator, each row ascending, or None (draw them); None when the sampler cannot
        (see ``pp.SortingSampler``).
    """

    design: Design
    block_seeds: Sequence[np.random.SeedSequence]
    draw_block: Callable[[np.random.Generator, int], IndexMatrix] = attrs.field(repr=False)
    options: RunOptions = RunOptions()
    sum_block: Callable[[np.random.Generator, int, Array], list[Array] | None] | None = attrs.field(
        default=None, repr=False
    )
    sort_block: Callable[[np.random.Generator, int, RankedData], Array | None] | None = attrs.field(
        default=None, repr=False
    )

    @property
    def n(self) -> int:
        """Population size."""
        return self.design.n

    @property
    def m(self) -> int:
        """Resample size."""
        return self.design.m

    @property
    def B(self) -> int:  # noqa: N802 (the papers' name)
        """Number of resamples."""
        return self.design.B

    @property
    def kappa(self) -> int:
        """Largest multiplicity of one record within one resample."""
        return self.design.kappa

    @property
    def replace(self) -> bool:
        """Whether rows are drawn with replacement."""
        return self.design.replace

    @property
    def rho(self) -> float | None:
        """Rejection-probability bound (None for samplers that never reject)."""
        return self.design.rho

    @property
    def block_rows(self) -> int:
        """Rows per block (the last block may be shorter)."""
        return self.design.block_rows or block_rows(self.design.m)

    @property
    def memory_budget(self) -> int:
        """Bytes the chunks in flight may use together."""
        return self.options.memory_budget

    @property
    def workers(self) -> int:
        """Threads evaluating blocks in parallel."""
        return self.options.workers

    def chunk_rows(self, bytes_per_row: int) -> int:
        """Rows per chunk so that ``workers`` chunks in flight fit the memory budget.

        A multiple of ``block_rows`` and at least one block (a single block may exceed the budget when one
        row alone is larger than it).
        """
        rows = self.memory_budget // (max(1, bytes_per_row) * max(1, self.workers))
        return max(self.block_rows, (rows // self.block_rows) * self.block_rows)

    def chunk_spans(self, bytes_per_row: int | None = None) -> list[tuple[int, int]]:
        """``(first_block, stop_block)`` of each chunk, in row order."""
        per_row = 16 * self.m if bytes_per_row is None else bytes_per_row
        total = len(self.block_seeds)
        blocks_per_chunk = self.chunk_rows(per_row) // self.block_rows
        if self.workers > 1:  # at least one chunk per worker, so every thread has work
            blocks_per_chunk = min(blocks_per_chunk, max(1, -(-total // self.workers)))
        return [(start, min(start + blocks_per_chunk, total)) for start in range(0, total, blocks_per_chunk)]

    def rows(self, span: tuple[int, int]) -> IndexMatrix:
        """The index rows of the blocks ``span[0] <= i < span[1]``."""
        parts = [self.block(i) for i in range(*span)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def chunks(self, bytes_per_row: int | None = None) -> Iterator[IndexMatrix]:
        """Yield consecutive ``(rows, m)`` index matrices covering all B rows."""
        for span in self.chunk_spans(bytes_per_row):
            yield self.rows(span)

    def map_blocks(self, function: Callable[[IndexMatrix], T]) -> list[T]:
        """``function`` applied to every block, in row order, on up to ``workers`` threads.

        The hot path: a block (at most 128 rows) keeps its index rows and gathered values cache-sized, and
        no chunk is ever concatenated. Workers take contiguous runs of blocks, so results are identical for
        any worker count. Threads pay because numpy releases the GIL in the heavy kernels (random integers,
        sorting, gathering).
        """
        return self.map_block_numbers(lambda i: function(self.block(i)))

    def map_block_numbers(self, function: Callable[[int], T]) -> list[T]:
        """``function(i)`` for every block number i, in row order, on up to ``workers`` threads (as
        :meth:`map_blocks`, for a function that draws block i itself: :meth:`block` or :meth:`block_sums`)."""
        blocks = range(len(self.block_seeds))
        bar = self.progress_bar(len(blocks))
        lock = threading.Lock()

        def counted(i: int) -> T:
            value = function(i)
            with lock:
                bar.advance()
            return value

        try:
            if self.workers <= 1 or len(blocks) <= 1:
                return [counted(i) for i in blocks]
            per_task = -(-len(blocks) // self.workers)
            state = np.geterr()  # worker threads do not inherit the caller's floating-point error state

            def task(start: int) -> list[T]:
                with np.errstate(**state):
                    return [counted(i) for i in range(start, min(start + per_task, len(blocks)))]

            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                return [value for run in pool.map(task, range(0, len(blocks), per_task)) for value in run]
        finally:
            bar.close()

    def progress_bar(
        self, total: int, unit: str = "blocks", work: int | None = None, label: str | None = None
    ) -> Progress:
        """A started bar for a walk over ``total`` pieces of these resamples (blocks of rows, or data blocks),
        drawn per :attr:`RunOptions.progress`; ``advance()`` it per piece and ``close()`` it. Never changes a
        result.

        By default the bar is drawn when the walk touches :data:`PROGRESS_INDICES` indices or more: ``B m``,
        or ``work`` when the walk does more per row than read its indices (BLBQuant's ``R n`` draws). The bar is
        labelled ``label``, by default "B resamples of m"."""
        wanted = self.options.progress
        if wanted is None:
            wanted = (self.B * self.m if work is None else work) >= PROGRESS_INDICES
        text = f"{self.B} resamples of {self.m}" if label is None else label
        bar = Progress(total, text, unit=unit, enabled=None if wanted else False)
        bar.start()
        return bar

    def block(self, i: int) -> IndexMatrix:
        """The i-th block of rows."""
        return self.draw_block(np.random.default_rng(self.block_seeds[i]), self.rows_in_block(i))

    def rows_in_block(self, i: int) -> int:
        """Rows of the i-th block (``block_rows``, fewer in the last)."""
        return min(self.block_rows, self.B - i * self.block_rows)

    def block_sums(self, i: int, x: Array) -> list[Array] | None:
        """Per data block, the ``(rows,)`` sums of ``x`` over the rows of the i-th block, drawn from its seed as
        :meth:`block` draws them but never written; None where the sampler cannot (:meth:`block` then)."""
        if self.sum_block is None:
            return None
        return self.sum_block(np.random.default_rng(self.block_seeds[i]), self.rows_in_block(i), x)

    def block_sorted(self, i: int, ranked: RankedData) -> Array | None:
        """The ``(rows, m)`` values of the i-th block's rows, each ascending, drawn from its seed as :meth:`block`
        draws them but never written as indices; None where the sampler cannot (:meth:`block` then)."""
        if self.sort_block is None:
            return None
        rows = self.rows_in_block(i)
        values = self.sort_block(np.random.default_rng(self.block_seeds[i]), rows, ranked)
        if values is not None and (values.shape != (rows, self.m) or values.dtype != np.float64):
            raise PluginError(
                f"the sampler's sorted rows have shape {values.shape} and dtype {values.dtype}, expected "
                f"{(rows, self.m)} doubles",
                path="sampler",
            )
        return values

    def matrix(self) -> IndexMatrix:
        """All B rows at once (small problems and tests only; ignores the memory budget)."""
        return np.concatenate([self.block(i) for i in range(len(self.block_seeds))], axis=0)


@functools.cache
def settle_allocator() -> None:
    """Allocate and free one 16 MiB array, once per process.

    Blocks allocate and free arrays of about a MiB each. glibc's malloc serves them by mmap, or returns them
    to the system when the top of the heap is free, until it has seen a large mapped chunk freed; then it
    keeps up to twice that size. Without this, every block's arrays were faulted in afresh (about 18 000
    page faults and a third of a CR-GS call at n = 50 000). Other allocators ignore it; results never depend
    on it.
    """
    scratch = np.empty(2**21)
    del scratch


def checked_design(sampler: Sampler, n: int, options: RunOptions) -> Design:
    """The sampler's design at n, refused (``ConfigError``, path ``B``) when B resamples' values and roots alone
    exceed the memory budget; public inputs only, so :meth:`privframe.Pipeline.check` refuses it too."""
    design = sampler.design(n)
    if not isinstance(design, Design):
        raise PluginError(f"sampler '{sampler.name}'.design must return a pp.Design")
    if options.memory_budget < 16 * design.B:
        raise ConfigError(
            f"{design.B} resamples need {16 * design.B} bytes for their values and roots, more than "
            f"memory_budget = {options.memory_budget}; lower B or raise memory_budget",
            path="B",
        )
    return design


def draw(sampler: Sampler, n: int, rng: np.random.Generator, options: RunOptions | None = None) -> Resamples:
    """The resamples of ``sampler`` for a population of n records, seeded from ``rng``.

    Errors about the sampler's options carry paths relative to the sampler (``m``); the caller adds its
    prefix. A B whose values and roots alone exceed the memory budget is a ``ConfigError``.
    """
    settle_allocator()
    options = options or RunOptions()
    design = checked_design(sampler, n, options)
    rows = design.block_rows or block_rows(design.m)
    parent = seed_sequence_of(rng).spawn(1)[0]

    def draw_block(block_rng: np.random.Generator, count: int) -> IndexMatrix:
        return sampler.draw_block(design, block_rng, count)

    from privframe.plugin.protocols import SortingSampler, SummingSampler  # the protocols import the engine's Design

    sum_block = None
    if isinstance(sampler, SummingSampler):
        summing = sampler

        def sum_block(block_rng: np.random.Generator, count: int, x: Array) -> list[Array] | None:
            return summing.draw_block_sums(design, block_rng, count, x)

    sort_block = None
    if isinstance(sampler, SortingSampler):
        sorting = sampler

        def sort_block(block_rng: np.random.Generator, count: int, ranked: RankedData) -> Array | None:
            return sorting.draw_block_sorted(design, block_rng, count, ranked)

    seeds = BlockSeeds(parent, math.ceil(design.B / rows))
    return Resamples(design, seeds, draw_block, options, sum_block, sort_block)
