"""A random partition into s disjoint blocks (``docs/algorithms.md``, section 2; the BLB methods)."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import ConfigError
from privframe.resampling.sizes import SizeRule, resolve_size

__all__ = ["Partition"]


@attrs.frozen
class Partition:
    """A uniformly random permutation of ``range(n)`` cut into s blocks of ``b = floor(n / s)`` records.

    The ``n - s b`` records left over after the last full block are in no block. Blocks are disjoint, so
    ``kappa = 1`` and a record influences exactly one block (at most one when it is left over).

    The rows of the resamples are the blocks (``B = s``, ``m = b``, each row sorted). A partition comes
    from one permutation, so all s rows form one seeded block (``Design.block_rows = s``); that matrix has
    at most n entries.

    Parameters
    ----------
    s : int, str or callable, optional
        Number of blocks, a rule in n (``"sqrt(n)"``, ``"n^0.4"``, rounded up) or a function of n;
        ``2 <= s < n``. Left unset, the method chooses it (BLBQuant: ``ceil(10 ln n / eps_cdf)``); drawing
        with ``s`` unset is a ``ConfigError``.
    """

    name: ClassVar[str] = "partition"
    s: SizeRule | None = attrs.field(
        default=None, converter=pp.validators.as_int, validator=pp.validators.optional(pp.validators.size)
    )

    def design(self, n: int) -> pp.Design:
        """s blocks of b records, one seeded block of rows."""
        if self.s is None:
            raise ConfigError("not set; give the number of blocks (s=...)", path="s")
        s = resolve_size("s", self.s, n)
        return pp.Design(n=n, m=n // s, B=s, kappa=1, replace=False, block_rows=s)

    def draw_block(self, design: pp.Design, rng: np.random.Generator, rows: int) -> pp.IndexMatrix:
        """The first ``rows`` blocks of one random permutation, each sorted."""
        b = design.m
        perm = rng.permutation(design.n)[: rows * b].reshape(rows, b)
        return np.sort(perm, axis=1).astype(np.intp, copy=False)
