"""The resampling engine: lazy block seeds, chunking invariance, and plugin-error hygiene."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.resampling.blocks import RunOptions, draw
from privframe.resampling.seeds import BlockSeeds


def test_block_seeds_equal_eager_spawning() -> None:
    parent = np.random.SeedSequence(1234)
    lazy = BlockSeeds(parent, 50)
    eager = np.random.SeedSequence(1234).spawn(50)
    assert len(lazy) == 50
    for i in (0, 1, 17, 49, -1):
        assert lazy[i].generate_state(4).tolist() == eager[i].generate_state(4).tolist()
    assert [s.spawn_key for s in lazy[10:13]] == [(10,), (11,), (12,)]
    with pytest.raises(IndexError):
        lazy[50]
    huge = BlockSeeds(parent, 10**15)  # costs nothing until a seed is asked for
    assert len(huge) == 10**15


def test_huge_b_is_refused_before_any_work() -> None:
    sampler = pf.registry.create("sampler", "wor", {"B": 10**9})
    with pytest.raises(pf.ConfigError, match=r"^B: .*memory_budget"):
        draw(sampler, 1000, np.random.default_rng(0))
    x = np.random.default_rng(0).uniform(size=1000)
    with pytest.raises(pf.ConfigError, match=r"^sampler\.B: .*memory_budget"):
        pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=10**9, rng=0)


@pytest.mark.parametrize("sampler", ["wor", "wr"])
def test_rows_do_not_depend_on_chunking_or_workers(sampler: str) -> None:
    options: dict[str, Any] = {"m": 300, "B": 257}
    part = pf.registry.create("sampler", sampler, options)
    full = draw(part, 5000, np.random.default_rng(3)).matrix()
    for extra in ({"memory_budget": 2**16}, {"workers": 3}, {"workers": 2, "memory_budget": 2**17}):
        other = draw(part, 5000, np.random.default_rng(3), RunOptions(**extra))
        assert np.array_equal(np.concatenate(list(other.chunks(300 * 24)), axis=0), full), extra
        blocks = other.map_blocks(lambda index: index.copy())
        assert np.array_equal(np.concatenate(blocks, axis=0), full), extra


def test_block_rows_shrink_for_very_long_rows() -> None:
    from privframe.resampling.blocks import BLOCK_ENTRIES, BLOCK_ROWS, block_rows

    assert block_rows(1000) == BLOCK_ROWS
    assert block_rows(BLOCK_ENTRIES // 4) == 4
    assert block_rows(10 * BLOCK_ENTRIES) == 1


class _Leaky:
    """A third-party statistic whose error message quotes a data value."""

    name: ClassVar[str] = "leaky"

    def evaluate_batch(self, x: np.ndarray, index: np.ndarray) -> np.ndarray:
        raise ValueError(f"cannot handle value {x[0]!r}")

    def sensitivity(self, k: int, bounds: Any) -> float:
        return 1.0 / k


def test_plugin_exceptions_are_wrapped_without_their_message() -> None:
    x = np.full(50, 0.123456789)
    with pytest.raises(pf.PluginError, match="ValueError") as info:
        pp.RunContext(method="probe", statistic=_Leaky(), data=x, bounds=None, confidence=0.9).evaluate()
    assert "0.123" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
