"""The compiled SeedSequence and PCG64 of the data-block loop give numpy's words, word for word."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privframe_std.samplers import _pcg


def _compiled_words(seed: np.random.SeedSequence, block: int, count: int) -> tuple[Any, int, int]:
    prefix = _pcg.entropy_prefix(seed)
    assert prefix is not None
    state = np.empty(4, dtype=np.uint64)
    _pcg.seed_pcg64(prefix, prefix.size, block, seed.pool_size, np.empty(seed.pool_size, dtype=np.uint64), state)
    seeded = (int(state[0]) << 64 | int(state[1]), int(state[2]) << 64 | int(state[3]))
    words = np.empty(count, dtype=np.uint64)
    _pcg.pcg64_words(state, words)
    return words, *seeded


def _cases() -> list[tuple[Any, tuple[int, ...], int, int]]:
    rng = np.random.default_rng(2026)
    cases: list[tuple[Any, tuple[int, ...], int, int]] = [
        (0, (), 4, 0),
        (1, (0,), 4, 1),
        (2**128 - 1, (5, 2**40), 4, 2**32 - 1),
        ((123, 2**70), (1,), 4, 3),  # entropy given as a sequence of ints
        (987, (1, 2, 3, 4, 5, 6), 8, 17),  # a longer pool, a long spawn key
        (2**200 + 7, (3,), 5, 9),
    ]
    for _ in range(60):
        entropy = int(rng.integers(0, 2**63)) << int(rng.integers(0, 70))
        key = tuple(int(v) for v in rng.integers(0, 2 ** int(rng.integers(1, 40)), size=int(rng.integers(0, 4))))
        cases.append((entropy, key, int(rng.choice([4, 6])), int(rng.integers(0, 2**31))))
    return cases


@pytest.mark.parametrize(("entropy", "key", "pool", "block"), _cases())
def test_the_stream_of_a_data_block_is_numpys(entropy: Any, key: tuple[int, ...], pool: int, block: int) -> None:
    seed = np.random.SeedSequence(entropy, spawn_key=key, pool_size=pool)
    reference = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(*key, block), pool_size=pool))
    words, state, inc = _compiled_words(seed, block, 257)
    assert (state, inc) == (
        reference.bit_generator.state["state"]["state"],
        reference.bit_generator.state["state"]["inc"],
    )
    np.testing.assert_array_equal(words, reference.bit_generator.random_raw(257))


def test_fresh_os_entropy_and_block_seeds_are_covered() -> None:
    """The seeds privframe draws (``rng=None``: 128 bits of OS entropy; spawned block seeds) match too."""
    from privframe.resampling.seeds import BlockSeeds

    parent = np.random.SeedSequence()
    for i in (0, 1, 999):
        seed = BlockSeeds(parent, 1000)[i]
        reference = np.random.default_rng(np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, 4)))
        np.testing.assert_array_equal(_compiled_words(seed, 4, 64)[0], reference.bit_generator.random_raw(64))


def test_entropy_other_than_ints_is_left_to_numpy() -> None:
    assert _pcg.entropy_prefix(np.random.SeedSequence(np.array([1, 2], dtype=np.uint32))) is None
    assert _pcg.entropy_prefix(np.random.SeedSequence(5)) is not None
