"""Subsampling without replacement (kappa = 1; never rejects)."""

from __future__ import annotations

import functools
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe_std._validation import int_at_least
from privframe_std.samplers._blocks import distinct_rows
from privframe_std.samplers._common import DEFAULT_MEMORY_BUDGET, make_resamples
from privframe_std.samplers._sizes import resolve_size, size_rule

__all__ = ["WithoutReplacement"]


@attrs.frozen
class WithoutReplacement:
    """B uniform size-m subsets drawn without replacement.

    Parameters
    ----------
    m : int or str, default "n/log(n)"
        Subsample size, or a rule in n (rounded up). Must satisfy ``2 <= m < n``.
    B : int, default 1000
        Number of subsamples.
    memory_budget : int, default 256 MiB
        Bytes the chunks of index rows (and the values gathered through them) in flight may use together.
    workers : int, default 1
        Threads evaluating chunks in parallel. Results are bit-identical for any value (each 32-row block
        has its own seed).
    """

    name: ClassVar[str] = "wor"
    m: int | str = attrs.field(default="n/log(n)", validator=size_rule)
    B: int = attrs.field(default=1000, validator=int_at_least(1))
    memory_budget: int = attrs.field(default=DEFAULT_MEMORY_BUDGET, validator=int_at_least(2**16))
    workers: int = attrs.field(default=1, validator=int_at_least(1))

    def draw(self, n: int, rng: np.random.Generator) -> pf.Resamples:
        """Resamples of ``range(n)``; rows are sorted."""
        m = resolve_size("m", self.m, n)
        return make_resamples(
            n=n,
            m=m,
            B=self.B,
            kappa=1,
            replace=False,
            rng=rng,
            draw_block=functools.partial(distinct_rows, n=n, m=m),
            memory_budget=self.memory_budget,
            workers=self.workers,
        )
