"""A random partition into s disjoint blocks (algorithms.md section 2; the BLB methods)."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError
from privframe_std._validation import int_at_least
from privframe_std.samplers._common import DEFAULT_MEMORY_BUDGET
from privframe_std.samplers._sizes import check_size_rule, resolve_size

__all__ = ["Partition"]


def _optional_size(_: Any, attribute: Any, value: Any) -> None:
    if value is not None:
        check_size_rule(attribute.name, value)


@attrs.frozen
class Partition:
    """A uniformly random permutation of ``range(n)`` cut into s blocks of ``b = floor(n / s)`` records.

    The ``n - s b`` records left over after the last full block are in no block. Blocks are disjoint, so
    ``kappa = 1`` and a record influences exactly one block (at most one when it is left over).

    The rows of the returned :class:`privframe.Resamples` are the blocks (``B = s``, ``m = b``, each row
    sorted). A partition comes from one permutation, so all s rows form one block of the ``Resamples``
    (one seed); that matrix has at most n entries.

    Parameters
    ----------
    s : int or str, optional
        Number of blocks, or a rule in n (``"sqrt(n)"``, ``"n^0.4"``, rounded up); ``2 <= s < n``. Left
        unset, the method chooses it (BLBQuant: ``ceil(10 ln n / eps_cdf)``); drawing with ``s`` unset is a
        ``ConfigError``.
    memory_budget : int, default 256 MiB
        Accepted for uniformity with the other samplers (a partition never needs more than n indices).
    """

    name: ClassVar[str] = "partition"
    s: int | str | None = attrs.field(default=None, validator=_optional_size)
    memory_budget: int = attrs.field(default=DEFAULT_MEMORY_BUDGET, validator=int_at_least(2**16))

    def draw(self, n: int, rng: np.random.Generator) -> pf.Resamples:
        """The s blocks as an ``(s, b)`` index matrix (one block of rows)."""
        if self.s is None:
            raise ConfigError("s: not set; give the number of blocks (s=...)")
        s = resolve_size("s", self.s, n)
        b = n // s

        def draw_block(block_rng: np.random.Generator, rows: int) -> pf.IndexMatrix:
            perm = block_rng.permutation(n)[: rows * b].reshape(rows, b)
            return np.sort(perm, axis=1).astype(np.intp, copy=False)

        seed_seq = rng.bit_generator.seed_seq
        if not isinstance(seed_seq, np.random.SeedSequence):
            seed_seq = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
        return pf.Resamples(
            n=n,
            m=b,
            B=s,
            kappa=1,
            replace=False,
            block_seeds=tuple(seed_seq.spawn(1)),
            block_rows=s,
            draw_block=draw_block,
            memory_budget=self.memory_budget,
        )
