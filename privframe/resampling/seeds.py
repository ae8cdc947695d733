"""Seeds of resample blocks: independent, reproducible, derived lazily so that B = 10^9 costs no memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

__all__ = ["BlockSeeds", "seed_sequence_of"]


class BlockSeeds(Sequence[np.random.SeedSequence]):
    """``count`` independent seeds derived lazily from one parent, so B = 10^9 costs no memory up front.

    Seed i is ``SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (i,))``, exactly what
    ``parent.spawn(count)[i]`` would return for a parent that has spawned nothing; the caller must not spawn
    from ``parent`` elsewhere (spawn a dedicated child for it).
    """

    def __init__(self, parent: np.random.SeedSequence, count: int) -> None:
        self._parent = parent
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> np.random.SeedSequence: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[np.random.SeedSequence]: ...

    def __getitem__(self, i: int | slice) -> np.random.SeedSequence | Sequence[np.random.SeedSequence]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError("block index out of range")
        parent = self._parent
        return np.random.SeedSequence(parent.entropy, spawn_key=(*parent.spawn_key, i), pool_size=parent.pool_size)

    def __repr__(self) -> str:
        return f"BlockSeeds(count={self._count})"


def seed_sequence_of(rng: np.random.Generator) -> np.random.SeedSequence:
    """The seed sequence ``rng`` was built from (a fresh one drawn from ``rng`` if it has none)."""
    seed_seq = rng.bit_generator.seed_seq
    if isinstance(seed_seq, np.random.SeedSequence):
        return seed_seq
    return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
