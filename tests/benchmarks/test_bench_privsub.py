"""Benchmarks: PrivSub (T = 60 subsamples of size n^(2/3)) per private estimator.

Not part of the default run. Run with::

    python -m pytest tests/benchmarks/test_bench_privsub.py --benchmark-only --benchmark-group-by=param:n

Issue acceptance: the median at n = 50 000 (exponential mechanism, T = 60) takes well under a second.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

import privframe as pf

pytestmark = pytest.mark.benchmark

SIZES = [2000, 10_000, 50_000]
BUDGET = pf.ApproxDP(1.0, 1e-6)


def _median_data(n: int) -> np.ndarray:
    return np.asarray(stats.truncnorm(a=-3, b=2, scale=2).rvs(n, random_state=n))


@pytest.mark.parametrize("n", SIZES)
def test_privsub_median(benchmark: Any, n: int) -> None:
    x = _median_data(n)
    benchmark(lambda: pf.confidence_interval(x, "median", method="privsub", budget=BUDGET, bounds=(-6, 4), rng=1))


@pytest.mark.parametrize("n", SIZES)
def test_privsub_mean(benchmark: Any, n: int) -> None:
    x = _median_data(n)
    benchmark(lambda: pf.confidence_interval(x, "mean", method="privsub", budget=BUDGET, bounds=(-6, 4), rng=1))


@pytest.mark.parametrize("n", SIZES)
def test_privsub_ks(benchmark: Any, n: int) -> None:
    x = np.random.default_rng(n).normal(size=n)
    reference = stats.norm(0, 1.5)
    benchmark(lambda: pf.confidence_interval(x, "ks", method="privsub", budget=BUDGET, reference=reference, rng=1))


@pytest.mark.parametrize("n", SIZES)
def test_privsub_logistic_slope(benchmark: Any, n: int) -> None:
    from privframe.experiments.generators import Logistic

    x = Logistic().sample(n, np.random.default_rng(n))
    bounds = pf.L2Ball(1.0)  # the generator's features (1, x) / sqrt(2) lie on the unit ball
    benchmark(
        lambda: pf.confidence_interval(x, "logistic-slope", method="privsub", budget=BUDGET, bounds=bounds, rng=1)
    )


def test_median_n50000_well_under_a_second() -> None:
    """The acceptance bound itself, as a plain check (the benchmark above reports the distribution)."""
    import time

    x = _median_data(50_000)
    pf.confidence_interval(x, "median", method="privsub", budget=BUDGET, bounds=(-6, 4), rng=0)  # warm-up
    times = []
    for seed in range(5):
        start = time.perf_counter()
        pf.confidence_interval(x, "median", method="privsub", budget=BUDGET, bounds=(-6, 4), rng=seed)
        times.append(time.perf_counter() - start)
    assert float(np.median(times)) < 0.25
