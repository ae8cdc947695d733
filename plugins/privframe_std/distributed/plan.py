"""Which indices of every resample fall in each public data block: what a worker holding one block draws.

The client fixes, for every block of resamples, its seed and (with more than one data block) the
allocation of each row's m indices to the data blocks, drawn from the block's generator exactly as the
sampler draws it in memory (:mod:`privframe_std.samplers._blocks`). A worker holding data block j then draws
the indices of every row that fall in block j from the stream seeded by (resample block seed, j): the same
indices, in the same order, as the in-memory rows cut at the block.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError, SamplerRejected
from privframe_std.samplers._blocks import DATA_BLOCK, allocate, data_blocks, draw_data_block_and_multiplicity
from privframe_std.samplers.wor import WithoutReplacement
from privframe_std.samplers.wr import MultiplicityConstrained

__all__ = ["DrawPlan", "ResampleBlock", "check_multiplicity", "draw_plan", "draws_blockwise"]

IntArray = npt.NDArray[np.integer[Any]]


@attrs.frozen(eq=False)
class ResampleBlock:
    """One block of resample rows: its seed, its row count and its allocation to the data blocks.

    Attributes
    ----------
    seed : numpy.random.SeedSequence
        The block's seed (``Resamples.block_seeds[i]``).
    rows : int
        Rows in the block.
    counts : ndarray or None
        ``(rows, data blocks)`` counts of each row's indices per data block; None with one data block.
    """

    seed: np.random.SeedSequence
    rows: int
    counts: IntArray | None


@attrs.frozen(eq=False)
class DrawPlan:
    """The draws of every resample, data block by data block (picklable: it travels to the workers).

    Attributes
    ----------
    sampler : Sampler
        The sampler (its ``draw_block`` draws the rows when there is one data block).
    design : Design
        Its design at n.
    blocks : tuple of ResampleBlock
        The blocks of resample rows, in row order.
    """

    sampler: pp.Sampler
    design: pp.Design
    blocks: tuple[ResampleBlock, ...]

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """``(start, stop)`` of every public data block of ``range(n)``."""
        return data_blocks(self.design.n)

    def for_data_block(self, j: int) -> DrawPlan:
        """The plan with only data block j's column of the allocations (what that block's task needs)."""
        blocks = tuple(
            ResampleBlock(b.seed, b.rows, None if b.counts is None else b.counts[:, j : j + 1]) for b in self.blocks
        )
        return DrawPlan(self.sampler, self.design, blocks)

    def counts(self, i: int, j: int) -> IntArray:
        """How many indices of each row of resample block i fall in data block j (public: the allocation)."""
        block = self.blocks[i]
        if block.counts is None:
            return np.full(block.rows, self.design.m, dtype=np.int64)
        return block.counts[:, 0] if block.counts.shape[1] == 1 else block.counts[:, j]

    def part(self, i: int, j: int, out: IntArray | None = None) -> tuple[IntArray, IntArray]:
        """The indices of resample block i that fall in data block j (row by row: each row's sorted
        ascending for 'wor', in the order drawn for 'wr') and how many each row has.

        On a plan from :meth:`for_data_block` (j), the allocation's only column is j's. ``out``, an ``intp``
        array of ``counts(i, j).sum()`` values, receives the indices (with several data blocks; a buffer
        reused across parts spares an allocation a part).
        """
        block, design = self.blocks[i], self.design
        if block.counts is None:
            index: IntArray = self.sampler.draw_block(design, np.random.default_rng(block.seed), block.rows).reshape(-1)
            if out is not None:
                out[:] = index
                index = out
            return index, np.full(block.rows, design.m, dtype=np.int64)
        counts = self.counts(i, j)
        part, most = draw_data_block_and_multiplicity(block.seed, j, counts, design.n, replace=design.replace, out=out)
        if most is not None:
            check_multiplicity(most, design.kappa)
        return part, counts


def check_multiplicity(most: IntArray, kappa: int) -> None:
    """``wr``'s cap, checked on one data block's part of every row (``most``: each part's largest
    multiplicity): equal indices fall in the same data block, so a row breaks the cap iff one of its parts
    does. Raises as the in-memory sampler does on the same draws.
    """
    if bool(np.any(most > kappa)):
        raise SamplerRejected(
            f"a record appeared more than kappa* = {kappa} times in a resample (an event of "
            "probability <= rho that depends only on the indices); nothing was released. "
            "Retry with fresh randomness or use on_reject='redraw'.",
            path="sampler",
        )


def draws_blockwise(sampler: pp.Sampler) -> bool:
    """Whether ``sampler`` draws a row data block by data block with no step that needs the whole row:
    'wor', and 'wr' with ``on_reject="raise"`` (a redraw round needs every part of a row)."""
    return isinstance(sampler, WithoutReplacement) or (
        isinstance(sampler, MultiplicityConstrained) and sampler.on_reject == "raise"
    )


def draw_plan(sampler: pp.Sampler, resamples: pp.Resamples) -> DrawPlan:
    """The plan of ``resamples`` drawn by ``sampler``: the seeds and, with several data blocks, the
    allocations, computed on the client from public quantities (n, m, B) and the seeds.

    With one data block (n <= ``DATA_BLOCK``) every sampler works: the single task draws whole rows. With
    more, 'wor' and 'wr' with ``on_reject="raise"`` draw data block by data block (a rejection raises
    ``SamplerRejected`` exactly when the in-memory draw does); others are a ``ConfigError``.
    """
    design = resamples.design
    spans = data_blocks(design.n)
    if len(spans) > 1 and not draws_blockwise(sampler):
        raise ConfigError(
            f"on distributed data with n > {DATA_BLOCK}, only 'wor' and 'wr' with on_reject='raise' draw "
            f"resamples data block by data block; '{sampler.name}' (as configured) needs whole rows in one "
            "place (a redraw round needs every part of a row)",
            path="sampler",
        )
    blocks = []
    for i, seed in enumerate(resamples.block_seeds):
        rows = min(resamples.block_rows, design.B - i * resamples.block_rows)
        counts = None
        if len(spans) > 1:
            counts = allocate(np.random.default_rng(seed), rows, design.n, design.m, replace=design.replace)
        blocks.append(ResampleBlock(seed, rows, counts))
    return DrawPlan(sampler, design, tuple(blocks))
