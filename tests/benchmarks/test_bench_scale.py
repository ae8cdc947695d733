"""Benchmarks: cr-gs at growing n, per resampled element, beside a chunked numpy floor and with two threads.

Not part of the default run (``slow``; about two minutes). Run with::

    python -m pytest tests/benchmarks/test_bench_scale.py --benchmark-only -m "benchmark and slow"

Issue 31's targets: cr-gs wor ns per element over the chunked numpy floor <= 0.8 at n = 1e7; ns per element
at n = 1e6 over n = 5e4 <= 1.2; workers=2 over workers=1 <= 0.55 at n = 1e6 and 1e7 and <= 1 at n = 5e4.
The floor draws the same number of i.i.d. indices (B x m, in chunks of rows of at most 2^24 indices), gathers
and sums them: what a resampling interval must at least pay. Contenders are interleaved (``_timing``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _timing import interleaved

import privframe as pf

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]

B = 1000
CHUNK_INDICES = 2**24


def _data(n: int) -> np.ndarray:
    return np.random.default_rng(n).uniform(size=n)


def _m(n: int) -> int:
    design = pf.registry.create("sampler", "wor", B=B).design(n)
    return int(design.m)


def _cr_gs(x: np.ndarray, workers: int = 1) -> Any:
    def run() -> object:
        return pf.confidence_interval(
            x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=B, rng=1, workers=workers
        )

    return run


def _floor(x: np.ndarray, m: int) -> Any:
    rows = max(1, CHUNK_INDICES // m)

    def run() -> object:
        rng = np.random.default_rng(1)
        sums = [
            x[rng.integers(0, x.shape[0], size=(min(rows, B - start), m))].sum(axis=1) for start in range(0, B, rows)
        ]
        return np.concatenate(sums)

    return run


def _record(benchmark: Any, label: str, medians: dict[str, float], value: float) -> None:
    benchmark.extra_info.update({f"median_{name}_s": t for name, t in medians.items()})
    timings = ", ".join(f"{name} {t:.2f} s" for name, t in medians.items())
    benchmark.extra_info["ratio"] = f"{label}: {value:.2f}x ({timings})"


def test_ratio_cr_gs_per_element_over_the_chunked_floor_at_1e7(benchmark: Any) -> None:
    n = 10_000_000
    x = _data(n)
    medians = interleaved({"cr_gs": _cr_gs(x), "cr_gs_2": _cr_gs(x, 2), "floor": _floor(x, _m(n))}, rounds=3)
    _record(benchmark, "cr-gs wor / chunked numpy floor, n=1e7", medians, medians["cr_gs"] / medians["floor"])
    ratio = medians["cr_gs_2"] / medians["cr_gs"]
    benchmark.extra_info["ratio"] += f"; workers=2 / workers=1: {ratio:.2f}x"
    benchmark.pedantic(_cr_gs(x, 2), rounds=1, iterations=1)


def test_ratio_cr_gs_ns_per_element_1e6_over_5e4(benchmark: Any) -> None:
    small, large = _data(50_000), _data(1_000_000)
    medians = interleaved(
        {"n5e4": _cr_gs(small), "n1e6": _cr_gs(large), "n5e4_2": _cr_gs(small, 2), "n1e6_2": _cr_gs(large, 2)},
        rounds=5,
    )
    per_element = {name: t / (B * _m(50_000 if name.startswith("n5e4") else 1_000_000)) for name, t in medians.items()}
    ratio = per_element["n1e6"] / per_element["n5e4"]
    _record(benchmark, "cr-gs wor ns per element, n=1e6 / n=5e4", medians, ratio)
    benchmark.extra_info["ratio"] += (
        f"; {1e9 * per_element['n5e4']:.1f} and {1e9 * per_element['n1e6']:.1f} ns; workers=2 / workers=1: "
        f"{medians['n5e4_2'] / medians['n5e4']:.2f}x at 5e4, {medians['n1e6_2'] / medians['n1e6']:.2f}x at 1e6"
    )
    benchmark.pedantic(_cr_gs(large), rounds=1, iterations=1)
