"""Above one data block, in-memory resamples are evaluated data block by data block (the cluster's plan on
one machine): the same doubles as row by row, whatever the number of threads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import privframe as pf
from privframe_std.distributed import local
from privframe_std.samplers import _blocks


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Data blocks of 1000 records, so that a few thousand records span several."""
    monkeypatch.setattr(_blocks, "DATA_BLOCK", 1000)


def _run(monkeypatch: pytest.MonkeyPatch, blockwise: bool, call: Any) -> tuple[Any, int]:
    """``call()`` with the data-block loop on or off, and how many data blocks the loop evaluated."""
    seen = []
    partials = local._block_partials

    def counted(*args: Any) -> Any:
        seen.append(args[-1])
        return partials(*args)

    with monkeypatch.context() as patch:
        patch.setattr(local, "_block_partials", counted)
        if not blockwise:
            patch.setattr(local, "evaluates_blockwise", lambda ctx: False)
        return call(), len(seen)


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("cr-gs", {}),
        ("cr-gs", {"sampler": "wr", "m": 900}),
        ("cr-gs", {"m": 4900}),  # above half of a block: complements
        ("dette-graw", {}),
    ],
)
def test_the_data_block_loop_gives_the_row_by_row_doubles(
    method: str, options: dict[str, Any], small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.random.default_rng(3).lognormal(size=5_500)

    def interval(workers: int = 1) -> tuple[float, float, float]:
        res = pf.confidence_interval(
            x, "mean", method=method, budget=pf.GDP(1.0), bounds=(0.0, 30.0), B=300, rng=9, workers=workers, **options
        )
        return res.low, res.high, res.center

    rows, untouched = _run(monkeypatch, False, interval)
    blockwise, blocks = _run(monkeypatch, True, interval)
    threaded, pieces = _run(monkeypatch, True, lambda: interval(workers=2))
    assert untouched == 0
    assert blocks == 6
    assert pieces == 12  # two threads: every data block's resample blocks in two runs
    assert blockwise == rows == threaded


def test_the_vector_mean_sums_its_columns_blockwise_with_the_same_doubles(
    small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.random.default_rng(4).normal(size=(3_200, 3))
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True) / 2.0)

    def region() -> tuple[float, ...]:
        res = pf.confidence_region(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=pf.L2Ball(2.0), B=48, rng=2)
        return (*np.asarray(res.center).tolist(), float(res.radius))

    rows, _ = _run(monkeypatch, False, region)
    blockwise, blocks = _run(monkeypatch, True, region)
    assert blocks == 4
    assert blockwise == rows
    columns = []
    found = local.plain_sum_columns
    monkeypatch.setattr(local, "plain_sum_columns", lambda *args: columns.append(found(*args)) or columns[-1])
    assert _run(monkeypatch, True, region)[0] == rows
    assert columns
    assert all(found is not None and len(found) == 3 for found in columns)  # column by column
    monkeypatch.setattr(local, "plain_sum_columns", lambda *args: None)  # the gathered rows: the same doubles
    assert _run(monkeypatch, True, region)[0] == rows


def test_one_data_block_and_other_samplers_keep_the_row_path(
    small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interval(n: int, **options: Any) -> Any:
        x = np.random.default_rng(5).uniform(size=n)
        return pf.confidence_interval(
            x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=16, rng=1, **options
        )

    assert _run(monkeypatch, True, lambda: interval(900))[1] == 0
    assert _run(monkeypatch, True, lambda: interval(3_000, sampler="wr", on_reject="redraw"))[1] == 0


@pytest.mark.parametrize(("group", "stretch"), [(1, 1000), (700, 64), (5_000, 7)])
def test_grouped_sums_read_a_stretch_at_a_time_with_the_same_doubles(
    group: int, stretch: int, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'wor' rows of several resample blocks are summed together, a stretch of the data block at a time:
    whatever the group size and the stretch, the row-by-row doubles."""
    from privframe_std.statistics import _decompose

    x = np.random.default_rng(6).lognormal(size=4_321)

    def interval() -> tuple[float, float, float]:
        res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0.0, 30.0), B=300, rng=4)
        return res.low, res.high, res.center

    rows, _ = _run(monkeypatch, False, interval)
    monkeypatch.setattr(local, "GROUP_INDICES", group)
    monkeypatch.setattr(_decompose, "SUM_STRETCH", stretch)
    blockwise, blocks = _run(monkeypatch, True, interval)
    assert blocks == 5
    assert blockwise == rows


@pytest.mark.parametrize("sampler", ["wor", "wr"])
def test_a_part_drawn_into_a_buffer_holds_the_same_indices(sampler: str, small_blocks: None) -> None:
    """``DrawPlan.part(i, j, out=...)`` (the data-block loop's reused buffer) writes what ``part(i, j)`` returns,
    and a buffer of the wrong length is refused."""
    from privframe.resampling.blocks import draw
    from privframe_std.distributed.plan import draw_plan

    n, B = 5_500, 7
    options: dict[str, Any] = {"on_reject": "raise"} if sampler == "wr" else {}
    sampler_obj = pf.registry.create("sampler", sampler, B=B, m=900, **options)
    resamples = draw(sampler_obj, n, np.random.default_rng(4))
    plan = draw_plan(sampler_obj, resamples)
    assert len(plan.spans) > 1
    for i in range(len(plan.blocks)):
        for j in range(len(plan.spans)):
            index, lengths = plan.part(i, j)
            np.testing.assert_array_equal(lengths, plan.counts(i, j))
            buffer = np.full(index.size + 5, -1, dtype=np.intp)
            written, again = plan.part(i, j, out=buffer[: index.size])
            np.testing.assert_array_equal(written, index)
            np.testing.assert_array_equal(buffer[: index.size], index)
            assert (buffer[index.size :] == -1).all()
            np.testing.assert_array_equal(again, lengths)
    if sampler == "wor":
        with pytest.raises(pf.ConfigError, match="out"):
            plan.part(0, 0, out=np.empty(int(plan.counts(0, 0).sum()) + 1, dtype=np.intp))


def _wor_plan(n: int, B: int, m: int, rng: int) -> Any:
    from privframe.resampling.blocks import draw
    from privframe_std.distributed.plan import draw_plan

    sampler = pf.registry.create("sampler", "wor", B=B, m=m)
    return draw_plan(sampler, draw(sampler, n, np.random.default_rng(rng)))


@pytest.mark.parametrize(
    ("n", "B", "m", "group"),
    [
        (5_500, 300, 900, 1 << 20),  # many rows per resample block
        (5_500, 40, 4_900, 2_000),  # most of every block: complements; groups of a few resample blocks
        (3_001, 9, 1_500, 1),  # one resample block per group; a short last data block
    ],
)
def test_the_fused_data_block_call_draws_and_sums_what_the_parts_give(
    n: int, B: int, m: int, group: int, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One compiled call per data block (streams seeded in compiled code) gives the doubles of the parts
    drawn in Python and summed, for records at an offset too (a worker's own block)."""
    from privframe_std.statistics.mean import Mean

    monkeypatch.setattr(local, "GROUP_INDICES", group)
    plan = _wor_plan(n, B, m, rng=n + B)
    streams = local.plan_streams(plan)
    assert streams is not None
    x = np.round(np.random.default_rng(1).lognormal(size=n) * 2**20) / 2**20  # a dyadic grid: exact sums
    statistic = Mean()
    for j, (start, stop) in enumerate(plan.spans):
        fused = local.block_resample_partials(statistic, x, 0, plan, j, streams)
        with monkeypatch.context() as patch:
            patch.setattr(local, "plan_streams", lambda plan: None)
            parts = local.block_resample_partials(statistic, x, 0, plan, j, None)
        assert fused.shape == (B, 1)
        np.testing.assert_array_equal(fused, parts)
        own = local.block_resample_partials(statistic, x[start:stop].copy(), start, plan, j)
        np.testing.assert_array_equal(own, parts)
        by_hand = np.array([x[index].sum() for index in _rows_of(plan, j)]) * 2.0**-64
        np.testing.assert_array_equal(fused[:, 0], by_hand)
        for workers in (2, 3):  # a thread's run of resample blocks: those rows of the whole call
            for piece_j, run in local._pieces(plan, workers):
                if piece_j != j:
                    continue
                first, stop = (sum(block.rows for block in plan.blocks[:i]) for i in (run.start, run.stop))
                alone = local.block_resample_partials(statistic, x, 0, plan, j, streams, run)
                np.testing.assert_array_equal(alone, parts[first:stop])
                with monkeypatch.context() as patch:
                    patch.setattr(local, "plan_streams", lambda plan: None)
                    drawn = local.block_resample_partials(statistic, x, 0, plan, j, None, run)
                np.testing.assert_array_equal(drawn, parts[first:stop])


def test_the_threads_runs_cut_the_resample_blocks_into_near_equal_rows(small_blocks: None) -> None:
    plan = _wor_plan(5_500, 300, 900, rng=1)
    assert [block.rows for block in plan.blocks] == [128, 128, 44]
    pieces = local._pieces(plan, 2)
    assert pieces[:2] == [(0, range(0, 1)), (0, range(1, 3))]  # 128 and 172 rows, not 256 and 44
    assert [j for j, _ in pieces] == [j for j in range(len(plan.spans)) for _ in range(2)]
    assert local._pieces(plan, 1) == [(j, range(3)) for j in range(len(plan.spans))]
    assert local._pieces(plan, 5) == [(j, range(i, i + 1)) for j in range(len(plan.spans)) for i in range(3)]
    one_block = _wor_plan(3_001, 9, 1_500, rng=1)
    assert local._pieces(one_block, 2) == [(j, range(1)) for j in range(len(one_block.spans))]


def _rows_of(plan: Any, j: int) -> list[Any]:
    rows = []
    for i in range(len(plan.blocks)):
        index, lengths = plan.part(i, j)
        rows.extend(np.split(index, np.cumsum(lengths)[:-1]))
    return rows


def test_the_fused_call_leaves_overflowing_sums_to_the_rescaling_path(
    small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sums that overflow (records near the largest double) come from the gathered path, which rescales:
    the doubles of the parts path, finite."""
    from privframe_std.statistics.mean import Mean

    plan = _wor_plan(2_500, 20, 1_200, rng=3)
    x = np.full(2_500, 1.5e308)
    fused = local.block_resample_partials(Mean(), x, 0, plan, 0)
    monkeypatch.setattr(local, "plan_streams", lambda plan: None)
    parts = local.block_resample_partials(Mean(), x, 0, plan, 0)
    assert np.isfinite(fused).all()
    np.testing.assert_array_equal(fused, parts)
