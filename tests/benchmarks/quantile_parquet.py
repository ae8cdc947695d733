"""Opt-in scale check: the rank-quantile interval of records in Parquet files, on a Dask LocalCluster.

Not collected by pytest. Run alone (it writes the files first: 8 bytes a record, ~8 GB at n = 1e9)::

    python tests/benchmarks/quantile_parquet.py --n 1e9 --files 100 --dir /tmp/pf-parquet
    python tests/benchmarks/quantile_parquet.py --n 1e7 --files 10 --dir /tmp/pf-parquet-small --check

Target (issue "Speed and scale, next level"): the 0.9-quantile interval at n = 1e9 from Parquet files on a
LocalCluster of 2 workers runs with a client peak RSS of at most 500 MiB, and at n = 1e7 it is identical to
the in-memory interval (``--check``). The records are lognormal, rounded to three decimals (ties), in
column ``x``; the files are read on the workers (``privframe.data.files.load_distributed``, the CLI's
``--data 'dir/*.parquet'``), so only per-file counts on the public grid reach the client. The time counts
the ``confidence_interval`` call (row counts, reading and counting), the peak RSS the client process.
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

import privframe as pf
from privframe.data.files import load_distributed

BOUNDS = (0.0, 50.0)
OPTIONS = {"q": 0.9, "method": "rank-quantile", "budget": pf.PureDP(1.0), "bounds": BOUNDS, "rng": 1}


def _peak_rss_mib() -> float:
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def _records(rows: int, seed: int) -> np.ndarray:
    return np.round(np.random.default_rng(seed).lognormal(size=rows), 3)


def write_files(directory: Path, n: int, files: int) -> list[str]:
    """``files`` Parquet files of ``n // files`` records each (the last takes the rest), unless present."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    per_file = n // files
    paths = []
    for i in range(files):
        path = directory / f"part-{i:05d}.parquet"
        rows = per_file if i < files - 1 else n - per_file * (files - 1)
        if not path.exists() or pq.read_metadata(path).num_rows != rows:
            pq.write_table(pa.table({"x": _records(rows, i)}), path, row_group_size=1 << 20)
        paths.append(str(path))
    return paths


def main(argv: list[str] | None = None) -> None:
    """Write the files if needed, then one rank-quantile call on a LocalCluster (and in memory with --check)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e9, help="records (default 1e9)")
    parser.add_argument("--files", type=int, default=100, help="Parquet files (default 100)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pf-parquet"), help="where the files are written")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    parser.add_argument("--check", action="store_true", help="also compute the interval in memory and compare")
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    n = int(args.n)
    started = time.perf_counter()
    write_files(args.dir, n, args.files)
    print(f"files ready in {time.perf_counter() - started:.0f} s", flush=True)
    with (
        LocalCluster(
            n_workers=args.workers, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster),
    ):
        start = time.perf_counter()
        x = load_distributed(os.path.join(args.dir, "*.parquet"), column="x")
        on_cluster = pf.confidence_interval(x, "quantile", **OPTIONS)
        seconds = time.perf_counter() - start
    print(
        f"rank-quantile q=0.9 from {args.files} Parquet files, n = {n:.3g}, {args.workers} workers: {seconds:.1f} s, "
        f"client peak RSS {_peak_rss_mib():.0f} MiB, interval ({on_cluster.low!r}, {on_cluster.high!r})"
    )
    if args.check:
        import pyarrow.parquet as pq

        data = np.concatenate(
            [pq.read_table(path).column("x").to_numpy() for path in sorted(glob.glob(f"{args.dir}/*.parquet"))]
        )
        in_memory = pf.confidence_interval(data, "quantile", **OPTIONS)
        same = (in_memory.low, in_memory.high, in_memory.center) == (on_cluster.low, on_cluster.high, on_cluster.center)
        print(f"in memory ({in_memory.low!r}, {in_memory.high!r}): identical = {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
