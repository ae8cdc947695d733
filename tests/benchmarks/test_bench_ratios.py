"""Benchmarks: the ratios of issue 15's targets table, each measured within one run, contenders interleaved.

Not part of the default run. Run with::

    python -m pytest tests/benchmarks/test_bench_ratios.py --benchmark-only -m "benchmark or slow"

Each test times its contenders in alternation (a round runs every contender once; the median over rounds is
reported), so a busy machine slows them alike and the ratio stays meaningful. The ratio is printed after
the tables (see ``conftest.py``) and kept in the benchmark's ``extra_info``; the benchmark table itself
times the numerator alone. The PrivBoot case takes about ten seconds a call and is marked ``slow``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _timing import interleaved
from scipy import stats

import privframe as pf

pytestmark = pytest.mark.benchmark

TRUNC = stats.truncnorm(a=-3, b=2, scale=2)
BOUNDS = (-6.0, 4.0)


def _data(n: int) -> np.ndarray:
    return np.asarray(TRUNC.rvs(size=n, random_state=np.random.default_rng(n)), dtype=np.float64)


def _record(benchmark: Any, label: str, medians: dict[str, float], value: float, unit: str) -> None:
    benchmark.extra_info.update({f"median_{name}_s": t for name, t in medians.items()})
    timings = ", ".join(f"{name} {1000 * t:.0f} ms" for name, t in medians.items())
    benchmark.extra_info["ratio"] = f"{label}: {value:.2f}{unit} ({timings})"


def test_ratio_cr_ss_median_over_cr_gs_wor_mean(benchmark: Any) -> None:
    """Target: cr-ss median / cr-gs wor mean <= 2 at n = 50 000 (B = 1000)."""
    x = _data(50_000)

    def median() -> object:
        return pf.confidence_interval(
            x, "median", method="cr-ss", budget=pf.GDP(8.0, delta=1e-6), bounds=BOUNDS, B=1000, rng=1
        )

    def mean() -> object:
        return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=BOUNDS, B=1000, rng=1)

    medians = interleaved({"cr_ss_median": median, "cr_gs_mean": mean}, rounds=11)
    ratio = medians["cr_ss_median"] / medians["cr_gs_mean"]
    _record(benchmark, "cr-ss median / cr-gs wor mean, n=50000", medians, ratio, "x")
    benchmark.pedantic(median, rounds=3, iterations=1)


def test_ratio_blbquant_median_over_cr_gs_mean(benchmark: Any) -> None:
    """Target: blbquant median / cr-gs mean <= 20 at n = 20 000, PureDP(1).

    The rule gives s = 199 blocks of b = 100 records there, which ``min_block`` (default 200) refuses for a
    median; ``min_block=0`` runs the paper's construction, whose cost this measures.
    """
    x = _data(20_000)

    def median() -> object:
        return pf.confidence_interval(
            x, "median", method="blbquant", budget=pf.PureDP(1.0), bounds=BOUNDS, min_block=0, rng=1
        )

    def mean() -> object:
        return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.PureDP(1.0), bounds=BOUNDS, rng=1)

    medians = interleaved({"blbquant_median": median, "cr_gs_mean": mean}, rounds=5)
    ratio = medians["blbquant_median"] / medians["cr_gs_mean"]
    _record(benchmark, "blbquant median / cr-gs mean, n=20000", medians, ratio, "x")
    benchmark.pedantic(median, rounds=1, iterations=1)


@pytest.mark.slow
def test_privboot_gdp8_n20000(benchmark: Any) -> None:
    """Target: privboot at GDP(8), n = 20 000 (B = 2000 mu^2 = 128 000 resamples) in <= 10 s."""
    x = _data(20_000)

    def privboot() -> object:
        return pf.confidence_interval(x, "mean", method="privboot", budget=pf.GDP(8.0), bounds=BOUNDS, rng=1)

    medians = interleaved({"privboot": privboot}, rounds=1)
    _record(benchmark, "privboot GDP(8), n=20000", medians, medians["privboot"], " s")
    benchmark.pedantic(privboot, rounds=1, iterations=1)


def _fresh_import(module: str, env: dict[str, str]) -> Callable[[], object]:
    return lambda: subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=env)


def _bytecode_env(folder: Path) -> dict[str, str]:
    """The environment with bytecode caching on, the caches in ``folder``.

    An installed package has its bytecode compiled (pip does it at install); a machine that sets
    ``PYTHONDONTWRITEBYTECODE`` would otherwise make every fresh interpreter compile privframe's sources
    (about 0.1 s here) while numpy's installed bytecode is read, so the difference would time the compiler.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder)
    return env


def test_import_privframe_over_numpy(benchmark: Any, tmp_path: Path) -> None:
    """Target: ``import privframe`` takes at most 0.3 s more than ``import numpy`` (fresh interpreters, both
    with their bytecode compiled, as after ``pip install``)."""
    env = _bytecode_env(tmp_path)
    for module in ("numpy", "privframe"):
        _fresh_import(module, env)()  # writes the bytecode caches
    imports = {"numpy": _fresh_import("numpy", env), "privframe": _fresh_import("privframe", env)}
    medians = interleaved(imports, rounds=10)
    _record(benchmark, "import privframe - import numpy", medians, medians["privframe"] - medians["numpy"], " s")
    benchmark.pedantic(imports["privframe"], rounds=3, iterations=1)
