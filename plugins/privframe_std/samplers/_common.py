"""Building :class:`privframe.Resamples` from a block generator."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import privframe as pf

__all__ = ["BLOCK_ROWS", "DEFAULT_MEMORY_BUDGET", "make_resamples"]

BLOCK_ROWS = 32
"""Rows per independently seeded block; fixed so results do not depend on the chunk size."""

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
) -> pf.Resamples:
    """Spawn one seed per block of ``BLOCK_ROWS`` rows from ``rng`` and wrap the block generator."""
    blocks = math.ceil(B / BLOCK_ROWS)
    seed_seq = rng.bit_generator.seed_seq
    if not isinstance(seed_seq, np.random.SeedSequence):
        seed_seq = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    return pf.Resamples(
        n=n,
        m=m,
        B=B,
        kappa=kappa,
        replace=replace,
        block_seeds=tuple(seed_seq.spawn(blocks)),
        block_rows=BLOCK_ROWS,
        draw_block=draw_block,
        memory_budget=memory_budget,
    )
