"""Subsampling without replacement (kappa = 1; never rejects)."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.resampling.sizes import SizeRule, resolve_size
from privframe_std.samplers._blocks import distinct_rows, distinct_sorted_rows, row_sums

__all__ = ["WithoutReplacement"]


@attrs.frozen
class WithoutReplacement:
    """B uniform size-m subsets drawn without replacement.

    Parameters
    ----------
    m : int, str or callable, default "n/log(n)"
        Subsample size, a rule in n (rounded up) or a function of n. Must satisfy ``2 <= m < n``.
    B : int, default 1000
        Number of subsamples.
    """

    name: ClassVar[str] = "wor"
    m: SizeRule = attrs.field(default="n/log(n)", converter=pp.validators.as_int, validator=pp.validators.size)
    B: int = attrs.field(default=1000, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(1))

    def design(self, n: int) -> pp.Design:
        """n, m, B; kappa = 1."""
        return pp.Design(n=n, m=resolve_size("m", self.m, n), B=self.B, kappa=1, replace=False)

    def draw_block(self, design: pp.Design, rng: np.random.Generator, rows: int) -> pp.IndexMatrix:
        """``rows`` uniform size-m subsets of ``range(n)``, each sorted."""
        return distinct_rows(rng, rows, design.n, design.m)

    def draw_block_sums(
        self, design: pp.Design, rng: np.random.Generator, rows: int, x: pp.Array
    ) -> list[pp.Array] | None:
        """The sums of ``x`` over the rows :meth:`draw_block` would draw, per data block, without the rows
        (``pp.SummingSampler``); None for a small block while numba is not loaded."""
        summed = row_sums(rng, rows, design.n, design.m, False, x)
        return None if summed is None else summed[0]

    def draw_block_sorted(
        self, design: pp.Design, rng: np.random.Generator, rows: int, ranked: pp.RankedData
    ) -> pp.Array | None:
        """The values of the rows :meth:`draw_block` would draw, each row ascending, without the rows
        (``pp.SortingSampler``); None beyond one data block or for a small block while numba is not loaded."""
        return distinct_sorted_rows(rng, rows, design.m, ranked)
