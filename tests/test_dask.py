"""Dask arrays through the one-shot front door (issue 17): partial sums on the workers, never a gather."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest

import privframe as pf
import privframe.plugin as pp
from privframe.cli import main
from privframe.plugin.registry import PluginRegistry
from privframe.resampling.blocks import draw
from privframe_std.distributed.plan import check_multiplicity, draw_plan
from privframe_std.samplers import _blocks
from privframe_std.samplers._blocks import DATA_BLOCK, data_blocks

da = pytest.importorskip("dask.array")

BIG = DATA_BLOCK + 54_321  # two public data blocks
GDP = pf.GDP(1.0)


def _interval(x: Any, seed: int, **options: Any) -> tuple[float, float, float]:
    options = {"method": "cr-gs", "budget": GDP, "bounds": (-3.0, 3.0), "rng": seed, **options}
    res = pf.confidence_interval(x, "mean", **options)
    return res.low, res.high, res.center


@pytest.fixture(scope="module")
def big() -> np.ndarray:
    return np.random.default_rng(17).normal(size=BIG)


@pytest.fixture
def no_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any conversion of a Dask array to numpy on the client fails."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Dask array was gathered on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    with pytest.raises(AssertionError, match="gathered"):
        np.asarray(da.zeros(3, chunks=2))


@pytest.mark.parametrize("n", [3_000, BIG])
def test_same_seed_any_chunking_is_identical_to_in_memory(n: int, big: np.ndarray, no_gather: None) -> None:
    x = big[:n]
    expected = _interval(x, 5, B=32)
    assert _interval(x, 5, B=32, workers=2, memory_budget=2**20) == expected  # run options change nothing
    for chunks in (n, n // 3 + 1, 250_007):
        assert _interval(da.from_array(x, chunks=chunks), 5, B=32) == expected


def test_vector_mean_region_is_identical_to_in_memory(no_gather: None) -> None:
    x = np.random.default_rng(3).normal(size=(4_000, 3))
    options = {"method": "cr-gs", "budget": GDP, "bounds": pf.L2Ball(3.0), "rng": 9, "B": 100}
    expected = pf.confidence_region(x, "mean", **options)
    for chunks in ((700, 2), (4_000, 3), (1_001, 1)):
        got = pf.confidence_region(da.from_array(x, chunks=chunks), "mean", **options)
        assert np.array_equal(got.center, expected.center)
        assert got.radius == expected.radius


def test_twenty_seeds_identical_so_coverage_is_identical(no_gather: None) -> None:
    # Results are bit-identical to in-memory on every seed, so coverage on Dask data equals in-memory coverage.
    rng = np.random.default_rng(0)
    for seed in range(20):
        x = rng.normal(0.2, 1.0, size=1_500)
        assert _interval(da.from_array(x, chunks=400), seed, B=100) == _interval(x, seed, B=100)


def test_dette_graw_on_dask_is_identical_to_in_memory(no_gather: None) -> None:
    x = np.random.default_rng(4).normal(size=3_000)
    expected = _interval(x, 2, method="dette-graw", B=200)
    assert _interval(da.from_array(x, chunks=700), 2, method="dette-graw", B=200) == expected


@pytest.mark.parametrize("name", ["wor", "wr"])
def test_the_plan_draws_the_in_memory_rows_cut_at_the_data_blocks(name: str) -> None:
    sampler = pf.registry.create("sampler", name, B=40, m=5_000)
    resamples = draw(sampler, BIG, np.random.default_rng(1))
    plan = draw_plan(sampler, resamples)
    spans = data_blocks(BIG)
    for i in range(len(resamples.block_seeds)):
        rows = resamples.block(i)
        for j, (start, stop) in enumerate(spans):
            index, lengths = plan.for_data_block(j).part(i, j)
            inside = [row[(row >= start) & (row < stop)] for row in rows]  # in the row's order
            assert np.array_equal(lengths, [len(part) for part in inside])
            assert np.array_equal(index, np.concatenate(inside))


def test_a_statistic_that_is_not_decomposable_is_refused_naming_what_works(no_gather: None) -> None:
    x = da.from_array(np.linspace(0, 1, 500), chunks=100)
    with pytest.raises(pf.ConfigError, match=r"^statistic: statistic 'median' is not decomposable;.*\(mean\).*cr-gs"):
        pf.confidence_interval(x, "median", method="cr-gs", budget=GDP, bounds=(0, 1), rng=1)
    with pytest.raises(pf.ConfigError, match=r"^method: method 'privboot' needs the data in memory;.*cr-gs"):
        pf.confidence_interval(x, "mean", method="privboot", budget=pf.ApproxDP(4.89, 1e-6), bounds=(0, 1), rng=1)


def test_privsub_gathers_only_its_subsamples_and_matches_in_memory(
    big: np.ndarray, no_gather: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full-data mean from partial sums, the T subsamples fetched (at most T m distinct rows of n): the
    same interval as in memory, bit for bit (n below one data block, where both sum in the same order)."""
    from privframe_std.distributed import evaluate

    x = big[:200_000]
    options = {"method": "privsub", "budget": pf.ApproxDP(1.0, 1e-6), "bounds": (-3.0, 3.0), "rng": 4}
    expected = pf.confidence_interval(x, "mean", **options)
    fetched: list[int] = []
    gather = evaluate.gather_rows

    def counted(ctx: Any, index: Any) -> Any:
        records, remapped = gather(ctx, index)
        fetched.append(records.shape[0])
        assert remapped.shape == index.shape
        return records, remapped

    monkeypatch.setattr(evaluate, "gather_rows", counted)
    monkeypatch.setattr("privframe_std.methods.privsub.method.gather_rows", counted)
    for chunks in (200_000, 33_333):
        res = pf.confidence_interval(da.from_array(x, chunks=chunks), "mean", **options)
        assert (res.low, res.high, res.center) == (expected.low, expected.high, expected.center)
        assert [e.to_dict() for e in res.privacy.events] == [e.to_dict() for e in expected.privacy.events]
    m, count = expected.parameters["m"], expected.parameters["T"]
    assert len(fetched) == 2
    assert all(size <= min(m * count, x.shape[0] - 1) for size in fetched)  # distinct rows of the subsamples


def test_privsub_on_dask_refuses_an_estimator_that_needs_the_records(no_gather: None) -> None:
    estimator = pp.CallableEstimator(lambda subset, rng: float(np.mean(subset)), pf.PureDP(0.5))
    x = da.from_array(np.random.default_rng(3).uniform(size=5000), chunks=1000)
    with pytest.raises(pf.ConfigError, match=r"^mechanism: privsub on distributed data"):
        pf.confidence_interval(x, "mean", method="privsub", estimator=estimator, budget=pf.ApproxDP(2.0, 1e-6),
                               bounds=(0, 1))  # fmt: skip


def test_bad_distributed_data_are_refused_without_values(no_gather: None) -> None:
    with pytest.raises(pf.DataError, match=r"^x: contains NaN or infinite values"):
        _interval(da.from_array(np.array([0.1] * 300 + [np.nan] + [0.2] * 300), chunks=100), 1, B=50)
    with pytest.raises(pf.DataError, match=r"^x: expected real numbers"):
        _interval(da.from_array(np.array(["a", "b"] * 100), chunks=50), 1)
    with pytest.raises(pf.DataError, match=r"^x: expected shape \(n,\) or \(n, d\)"):
        _interval(da.zeros((10, 2, 2), chunks=5), 1)
    lazy = da.arange(10.0, chunks=5)
    with pytest.raises(pf.DataError, match=r"^x: is a Dask array of unknown length"):
        _interval(lazy[lazy > 3], 1)
    with pytest.raises(pf.DataError, match=r"^x: is empty"):
        _interval(da.zeros(0, chunks=5), 1)


def test_with_replacement_beyond_one_data_block_matches_in_memory(big: np.ndarray, no_gather: None) -> None:
    x = da.from_array(big, chunks=500_000)
    for method in ("cr-gs", "dette-graw"):
        expected = _interval(big, 1, method=method, sampler="wr", B=32)
        assert _interval(x, 1, method=method, sampler="wr", B=32) == expected
    with pytest.raises(pf.ConfigError, match=r"^sampler: on distributed data with n > .*on_reject='raise'"):
        _interval(x, 1, sampler="wr", on_reject="redraw", B=32)


def test_the_cap_is_checked_on_the_multiplicity_of_each_row_part(monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker checks the largest multiplicity of each row's part in its data block: counted as the part is
    # drawn, it equals a count of the part's indices (0 for an empty part), and the check raises exactly
    # when one exceeds kappa.
    monkeypatch.setattr(_blocks, "DATA_BLOCK", 40)
    n, m, rows = 100, 90, 8
    seed = np.random.SeedSequence(5, spawn_key=(1,))
    counts = _blocks.allocate(np.random.default_rng(seed), rows, n, m, True)
    for j in range(len(_blocks.data_blocks(n))):
        part, most = _blocks.draw_data_block_and_multiplicity(seed, j, counts[:, j], n, True)
        pieces = np.split(part, np.cumsum(counts[:, j])[:-1])
        assert most is not None
        assert most.tolist() == [int(np.bincount(piece).max()) if piece.size else 0 for piece in pieces]
    check_multiplicity(np.array([3, 0, 2]), kappa=3)
    with pytest.raises(pf.SamplerRejected, match=r"more than kappa\* = 2 times"):
        check_multiplicity(np.array([3, 0, 2]), kappa=2)


def test_rows_in_no_block_order_are_cut_as_the_same_rows_in_block_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # A decomposable statistic sums each row's part in each data block in the row's order: a row in no
    # block order (a third-party sampler's) gives exactly what the same row stably put in block order gives
    # (the order a worker holding each block sees), and the mean of the row.
    from privframe_std.statistics import _decompose

    monkeypatch.setattr(_blocks, "DATA_BLOCK", 7)
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    index = rng.integers(0, 30, size=(6, 11))
    in_block_order = np.take_along_axis(index, np.argsort(index // 7, axis=1, kind="stable"), axis=1)
    statistic = pf.registry.create("statistic", "mean")
    got = _decompose.decomposed_batch(statistic, x, index)
    assert np.array_equal(got, _decompose.decomposed_batch(statistic, x, in_block_order))
    assert np.allclose(got[:, 0], x[index].mean(axis=1), rtol=1e-14, atol=0)


@attrs.frozen
class Share:
    """A third-party proportion: decomposable through exact counts, so any summation order gives its bits."""

    name: ClassVar[str] = "share-positive"
    traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(requires_bounds=False)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        share: pp.Array = np.count_nonzero(x[index] > 0, axis=1)[:, np.newaxis] / index.shape[1]
        return share

    def sensitivity(self, k: int, bounds: Any) -> float:
        return 1.0 / k

    def partial_batch(self, values: pp.Array, lengths: np.ndarray) -> pp.Array:
        rows = np.repeat(np.arange(lengths.shape[0]), lengths)
        counts: pp.Array = np.bincount(rows, weights=values > 0, minlength=lengths.shape[0])[:, np.newaxis]
        return counts

    def combine(self, partials: Sequence[pp.Array], k: int) -> pp.Array:
        share: pp.Array = np.sum(partials, axis=0) / k
        return share


def test_a_third_party_decomposable_statistic_runs_on_dask(big: np.ndarray, no_gather: None) -> None:
    class Plugin:
        @pp.hookimpl
        def privframe_register_statistics(self, registry: pp.StatisticRegistry) -> None:
            registry.add(Share)

    private = PluginRegistry()
    private.register(Plugin(), name="test-share-positive")
    pipe = pf.Pipeline.build("share-positive", method="cr-gs", budget=GDP, B=32, reg=private)
    expected = pipe.run(big, rng=2)
    got = pipe.run(da.from_array(big, chunks=300_000), rng=2)
    assert (got.low, got.high) == (expected.low, expected.high)
    assert isinstance(Share(), pp.DecomposableStatistic)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as local,
        distributed.Client(local) as client,
    ):
        yield client


def test_two_worker_processes_compute_without_gathering(cluster: Any, no_gather: None) -> None:
    # The data are made on the workers (nothing to ship), as the same doubles numpy makes here.
    expected = _interval(np.sin(np.arange(BIG) * 0.37), 8, B=32)
    x = da.sin(da.arange(BIG, chunks=400_000) * 0.37)
    assert _interval(x, 8, B=32) == expected
    assert len(cluster.scheduler_info()["workers"]) == 2


@pytest.mark.slow
def test_acceptance_n_2e7_on_two_workers(cluster: Any, no_gather: None) -> None:
    """n = 2e7 generated on the workers and never gathered; the client's peak RSS stays far below the data."""
    n = 20_000_000
    x = da.random.default_rng(0).normal(0.3, 1.0, size=n, chunks=2_500_000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    low, high, _ = _interval(x, 1, bounds=(-5.0, 5.0))
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"n = {n}: {elapsed:.1f} s, client peak RSS {peak / 1024:.0f} MiB (was {before / 1024:.0f} MiB)")
    assert low < 0.3 < high
    if os.environ.get("PRIVFRAME_STRICT_RSS"):
        assert peak - before < 100 * 1024  # the data alone are 160 MB


CONFIG = """
[pipeline]
method = "cr-gs"
statistic = "mean"
bounds = [0.0, 1.0]

[pipeline.budget]
unit = "gdp"
mu = 1.0

[pipeline.sampler]
name = "wor"
B = 200
"""


def test_cli_reads_a_csv_glob_through_dask_as_the_same_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_gather: None
) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    values = np.random.default_rng(0).uniform(size=900)
    for part in range(3):
        rows = values[300 * part : 300 * (part + 1)]
        text = "id,value\n" + "".join(f"{i},{float(v)!r}\n" for i, v in enumerate(rows))
        (tmp_path / f"part-{part}.csv").write_text(text)
    np.save(tmp_path / "all.npy", values)
    runs = []
    for data in (str(tmp_path / "part-*.csv"), str(tmp_path / "all.npy")):
        column = ["--column", "value"] if data.endswith(".csv") else []
        assert main(["run", str(config), "--data", data, *column, "--seed", "4", "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["parameters"]["n"] == 900
    assert (runs[0]["low"], runs[0]["high"]) == (runs[1]["low"], runs[1]["high"])


def test_cli_glob_errors_name_the_file_never_a_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    assert main(["run", str(config), "--data", str(tmp_path / "none-*.csv"), "--seed", "1"]) == 2
    assert "data: no file matches none-*.csv" in capsys.readouterr().err
    (tmp_path / "a.csv").write_text("value\n0.5\nSECRET-42\n")
    assert main(["run", str(config), "--data", str(tmp_path / "*.csv"), "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "non-numeric or missing cell in column 'value' at line 3" in err
    assert "SECRET" not in err
    assert main(["run", str(config), "--demo", "--scheduler", "tcp://nowhere:1"]) == 2
    assert "scheduler: only meaningful with a glob or Parquet --data" in capsys.readouterr().err


def test_cli_reads_parquet_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    config = tmp_path / "pipe.toml"
    config.write_text(CONFIG)
    values = np.random.default_rng(1).uniform(size=600)
    for part in range(2):
        table = pyarrow.table({"v": values[300 * part : 300 * (part + 1)], "label": ["a"] * 300})
        parquet.write_table(table, tmp_path / f"part-{part}.parquet")
    data = str(tmp_path / "*.parquet")
    assert main(["run", str(config), "--data", data, "--column", "v", "--seed", "3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    expected = pf.Pipeline.from_config(config).run(values, rng=3)
    assert (got["low"], got["high"]) == (expected.low, expected.high)
    assert main(["run", str(config), "--data", data, "--column", "label"]) == 2
    assert "column 'label' of part-0.parquet is not numeric" in capsys.readouterr().err


def test_a_session_charges_a_run_on_a_dask_array(tmp_path: Path, no_gather: None) -> None:
    session = pf.Session.open(tmp_path / "ledger.json", pf.GDP(2.0))
    pipe = pf.Pipeline.build("mean", method="cr-gs", budget=GDP, bounds=(-3.0, 3.0), B=50)
    x = np.random.default_rng(6).normal(size=1_000)
    got = session.run(pipe, da.from_array(x, chunks=300), rng=1)
    expected = pipe.run(x, rng=1)
    assert (got.low, got.high) == (expected.low, expected.high)
    assert len(session.calls) == 1


# ---------------------------------------------------------------------------------------------------------
# Quantiles beyond one machine (issue 31.4): rank-quantile reads per-chunk counts on its public grid


def _rank(x: Any, statistic: str, seed: int, budget: Any = GDP, **options: Any) -> tuple[Any, ...]:
    res = pf.confidence_interval(
        x, statistic, method="rank-quantile", budget=budget, bounds=(0.0, 20.0), rng=seed, **options
    )
    return res.low, res.high, res.center, res.privacy.total, tuple(sorted(res.diagnostics))


@pytest.mark.parametrize("budget", [pf.PureDP(1.0), pf.ApproxDP(1.0, 1e-7), GDP], ids=str)
def test_rank_quantile_on_dask_is_identical_to_in_memory(budget: Any, no_gather: None) -> None:
    """Counts are integers: any chunking gives the same counts, so the same interval bit for bit, on tied
    (rounded) and continuous data, for the median and two quantiles."""
    rng = np.random.default_rng(31)
    continuous = rng.lognormal(size=12_000)
    for x in (continuous, np.round(continuous)):  # the second is mostly ties
        for statistic, options in (("median", {}), ("quantile", {"q": 0.1}), ("quantile", {"q": 0.9})):
            expected = _rank(x, statistic, 7, budget, **options)
            for chunks in (12_000, 7_919, 1_000):
                assert _rank(da.from_array(x, chunks=chunks), statistic, 7, budget, **options) == expected


def test_rank_quantile_counts_never_leave_the_workers_as_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client receives rows of 2 G + 2 integers per chunk, summed in a tree; never the records."""
    from privframe_std.distributed import counts

    seen: list[tuple[int, ...]] = []
    original = counts._chunk_counts

    def spy(chunk: Any, low: float, high: float, grid_size: int) -> Any:
        row = original(chunk, low, high, grid_size)
        seen.append(row.shape)
        return row

    monkeypatch.setattr(counts, "_chunk_counts", spy)
    x = da.from_array(np.random.default_rng(2).uniform(0, 20, size=20_000), chunks=2_000)
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="sync"):  # in this process (a cluster fixture may be the default client)
        res = pf.confidence_interval(x, "median", method="rank-quantile", budget=pf.PureDP(1.0), bounds=(0, 20), rng=1)
    grid_size = res.parameters["grid_size"]
    assert seen == [(1, 2 * grid_size + 2)] * 10  # one row per chunk, nothing else computed on them


def test_rank_quantile_on_dask_refuses_non_finite_records_without_values(no_gather: None) -> None:
    values = np.random.default_rng(3).uniform(size=3_000)
    values[2_500] = np.nan
    with pytest.raises(pf.DataError, match=r"^x: the data must be finite"):
        pf.confidence_interval(
            da.from_array(values, chunks=1_000), "median", method="rank-quantile", budget=pf.PureDP(1.0), bounds=(0, 1)
        )
    with pytest.raises(pf.DataError, match="one-dimensional"):
        pf.confidence_interval(
            da.zeros((3_000, 2), chunks=(1_000, 2)),
            "median",
            method="rank-quantile",
            budget=pf.PureDP(1.0),
            bounds=(0, 1),
        )


def test_the_refusal_of_a_median_on_dask_names_rank_quantile(no_gather: None) -> None:
    x = da.from_array(np.linspace(0, 1, 500), chunks=100)
    with pytest.raises(pf.ConfigError, match=r"methods that read the blocks themselves \(rank-quantile\)"):
        pf.confidence_interval(x, "median", method="cr-gs", budget=GDP, bounds=(0, 1), rng=1)


def test_cli_runs_a_quantile_on_a_csv_glob_as_in_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "pipe.toml"
    config.write_text(
        '[pipeline]\nmethod = "rank-quantile"\nstatistic = "median"\nbounds = [0.0, 1.0]\n\n'
        '[pipeline.budget]\nunit = "pure-dp"\nepsilon = 1.0\n'
    )
    values = np.round(np.random.default_rng(4).uniform(size=900), 2)
    for part in range(3):
        rows = values[300 * part : 300 * (part + 1)]
        (tmp_path / f"part-{part}.csv").write_text("value\n" + "".join(f"{float(v)!r}\n" for v in rows))
    assert (
        main(["run", str(config), "--data", str(tmp_path / "part-*.csv"), "--column", "value", "--seed", "4", "--json"])
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    expected = pf.Pipeline.from_config(config).run(values, rng=4)
    assert (got["low"], got["high"]) == (expected.low, expected.high)
