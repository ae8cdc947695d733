"""Benchmarks: the one-shot methods beside the numpy floor and scipy.stats.bootstrap on the same data.

Not part of the default run. Run with::

    python -m pytest tests/benchmarks/test_bench_oneshot.py --benchmark-only --benchmark-group-by=param:n

The numpy floor draws the same B x m indices, gathers and reduces - nothing else; it is what any
resampling interval must at least pay. After the tables, a summary prints each call's median time as a
ratio to the floor and to scipy at the same n (see ``conftest.py``). The ``test_ratio_*`` benchmarks time
their contenders in alternation within one test (issue 15's targets: cr-gs wor / numpy floor <= 1.5 at
n = 50 000, cr-gs wr / cr-gs wor <= 1 at n >= 10 000) and print the ratios after the tables. The n = 10^8
scale check is a script: ``nice python tests/benchmarks/scale_1e8.py --workers 2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _timing import interleaved
from scipy import stats

import privframe as pf

pytestmark = pytest.mark.benchmark

SIZES = [2000, 10_000, 50_000]
B = 1000
TRUNC = stats.truncnorm(a=-3, b=2, scale=2)


def _data(n: int) -> np.ndarray:
    return np.random.default_rng(n).binomial(1, 0.05, size=n).astype(float)


@pytest.mark.parametrize("n", SIZES)
def test_numpy_floor(benchmark: Any, n: int) -> None:
    x = _data(n)
    m = math.ceil(n / math.log(n))

    def floor() -> np.ndarray:
        index = np.random.default_rng(1).integers(0, n, size=(B, m))
        return x[index].mean(axis=1)

    benchmark(floor)


@pytest.mark.parametrize("sampler", ["wor", "wr"])
@pytest.mark.parametrize("n", SIZES)
def test_cr_gs_mean(benchmark: Any, n: int, sampler: str) -> None:
    x = _data(n)
    options = {"on_reject": "redraw"} if sampler == "wr" else {}
    benchmark(
        lambda: pf.confidence_interval(
            x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), sampler=sampler, B=B, rng=1, **options
        )
    )


@pytest.mark.parametrize("n", SIZES)
def test_cr_ss_median(benchmark: Any, n: int) -> None:
    x = TRUNC.rvs(size=n, random_state=np.random.default_rng(n))
    benchmark(
        lambda: pf.confidence_interval(
            x, "median", method="cr-ss", budget=pf.GDP(8.0, delta=1e-6), bounds=(-6, 4), B=B, rng=1
        )
    )


@pytest.mark.parametrize("n", SIZES)
def test_cr_ss_ustat(benchmark: Any, n: int) -> None:
    x = np.random.default_rng(n).uniform(-0.5, 0.5, size=n)
    benchmark(
        lambda: pf.confidence_interval(
            x,
            "u-statistic",
            kernel="product",
            degenerate=True,
            method="cr-ss",
            budget=pf.GDP(8.0, delta=1e-6),
            bounds=(-0.5, 0.5),
            B=B,
            rng=1,
        )
    )


@pytest.mark.parametrize("n", SIZES)
def test_scipy_bootstrap_percentile(benchmark: Any, n: int) -> None:
    x = _data(n)
    benchmark.pedantic(
        lambda: stats.bootstrap((x,), np.mean, method="percentile", n_resamples=B, random_state=1),
        rounds=3,
        iterations=1,
    )


def _cr_gs(x: np.ndarray, sampler: str, workers: int = 1) -> Callable[[], object]:
    options = {"on_reject": "redraw"} if sampler == "wr" else {}
    return lambda: pf.confidence_interval(
        x,
        "mean",
        method="cr-gs",
        budget=pf.GDP(1.0),
        bounds=(0, 1),
        sampler=sampler,
        B=B,
        rng=1,
        workers=workers,
        **options,
    )


def test_ratio_cr_gs_wor_over_numpy_floor(benchmark: Any) -> None:
    """Target: cr-gs wor mean / numpy floor <= 1.5 at n = 50 000 (one thread; two threads shown beside)."""
    n = 50_000
    x = _data(n)
    m = math.ceil(n / math.log(n))

    def floor() -> object:
        return x[np.random.default_rng(1).integers(0, n, size=(B, m))].mean(axis=1)

    medians = interleaved({"floor": floor, "wor": _cr_gs(x, "wor"), "wor_2": _cr_gs(x, "wor", workers=2)}, 15)
    benchmark.extra_info.update({f"median_{name}_s": t for name, t in medians.items()})
    benchmark.extra_info["ratio"] = (
        f"cr-gs wor / numpy floor, n={n}: {medians['wor'] / medians['floor']:.2f}x "
        f"(workers=2: {medians['wor_2'] / medians['floor']:.2f}x)"
    )
    benchmark.pedantic(_cr_gs(x, "wor"), rounds=3, iterations=1)


@pytest.mark.parametrize("n", [10_000, 50_000])
def test_ratio_cr_gs_wr_over_wor(benchmark: Any, n: int) -> None:
    """Target: cr-gs wr mean / cr-gs wor mean <= 1 at n >= 10 000."""
    x = _data(n)
    medians = interleaved({"wr": _cr_gs(x, "wr"), "wor": _cr_gs(x, "wor")}, 15)
    benchmark.extra_info.update({f"median_{name}_s": t for name, t in medians.items()})
    benchmark.extra_info["ratio"] = f"cr-gs wr / cr-gs wor, n={n}: {medians['wr'] / medians['wor']:.2f}x"
    benchmark.pedantic(_cr_gs(x, "wr"), rounds=3, iterations=1)
