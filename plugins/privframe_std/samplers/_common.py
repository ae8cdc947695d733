"""Building :class:`privframe.Resamples` from a block generator."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import privframe as pf
from privframe.errors import ConfigError

__all__ = ["BLOCK_ENTRIES", "BLOCK_ROWS", "DEFAULT_MEMORY_BUDGET", "block_rows", "make_resamples"]

BLOCK_ROWS = 32
"""Rows per independently seeded block (fewer for very long rows, see :func:`block_rows`)."""

BLOCK_ENTRIES = 2**22
"""Most indices in one block (32 MiB of int64), so a single block stays small even for m ~ 10^6."""


def block_rows(m: int) -> int:
    """Rows per block: ``BLOCK_ROWS``, fewer when rows are so long that a block would exceed ``BLOCK_ENTRIES``.

    It depends on m only - never on the memory budget or the number of workers - so results do not
    depend on how the blocks are grouped into chunks.
    """
    return max(1, min(BLOCK_ROWS, BLOCK_ENTRIES // m))


DEFAULT_MEMORY_BUDGET = 256 * 2**20
"""Bytes one chunk of resamples may use (256 MiB)."""


def make_resamples(
    *,
    n: int,
    m: int,
    B: int,
    kappa: int,
    replace: bool,
    rng: np.random.Generator,
    draw_block: Callable[[np.random.Generator, int], pf.IndexMatrix],
    memory_budget: int,
    workers: int = 1,
    rho: float | None = None,
) -> pf.Resamples:
    """Spawn one seed per block of :func:`block_rows` rows from ``rng`` and wrap the block generator."""
    if memory_budget < 16 * B:
        raise ConfigError(
            f"B: {B} resamples need {16 * B} bytes for their values and roots, more than memory_budget = "
            f"{memory_budget}; lower B or raise memory_budget"
        )
    rows = block_rows(m)
    blocks = math.ceil(B / rows)
    seed_seq = rng.bit_generator.seed_seq
    if not isinstance(seed_seq, np.random.SeedSequence):
        seed_seq = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    return pf.Resamples(
        n=n,
        m=m,
        B=B,
        kappa=kappa,
        replace=replace,
        block_seeds=pf.BlockSeeds(seed_seq.spawn(1)[0], blocks),
        block_rows=rows,
        draw_block=draw_block,
        memory_budget=memory_budget,
        workers=workers,
        rho=rho,
    )
