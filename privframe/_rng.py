"""RNG policy: turn the user's ``rng`` argument into independent, reproducible streams."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from privframe.errors import ConfigError

__all__ = ["RngLike", "as_seed_sequence", "spawn_generators"]

RngLike: TypeAlias = "int | np.random.SeedSequence | np.random.Generator | None"


def as_seed_sequence(rng: RngLike) -> np.random.SeedSequence:
    """Return a :class:`numpy.random.SeedSequence` for ``rng``.

    ``None`` draws fresh OS entropy (the only right choice for a real release). An int or a
    ``SeedSequence`` gives a reproducible run (the same object twice gives the same run). A ``Generator``
    is consumed to seed a new sequence, so passing the same generator twice gives two different,
    reproducible runs.
    """
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, np.random.SeedSequence):
        # A fresh copy: spawning from the caller's object would advance its counter, so passing the same
        # SeedSequence twice would give two different runs.
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key, pool_size=rng.pool_size)
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise ConfigError("an integer seed must be non-negative", path="rng")
        return np.random.SeedSequence(int(rng))
    raise ConfigError("expected None, a non-negative int, a numpy SeedSequence or a numpy Generator", path="rng")


def spawn_generators(seq: np.random.SeedSequence, count: int) -> list[np.random.Generator]:
    """Spawn ``count`` statistically independent generators from ``seq``."""
    return [np.random.default_rng(child) for child in seq.spawn(count)]
