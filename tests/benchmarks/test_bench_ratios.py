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


@pytest.mark.parametrize("mu", [8.0, 1.0], ids=["GDP8", "GDP1"])
def test_ratio_cr_ss_median_over_cr_gs_wor_mean(benchmark: Any, mu: float) -> None:
    """Target: cr-ss median / cr-gs wor mean <= 2 at n = 50 000 (B = 1000), at GDP(8, 1e-6) and at the
    realistic GDP(1, 1e-6), whose smaller beta makes the smooth-sensitivity search reach further."""
    x = _data(50_000)

    def median() -> object:
        return pf.confidence_interval(
            x, "median", method="cr-ss", budget=pf.GDP(mu, delta=1e-6), bounds=BOUNDS, B=1000, rng=1
        )

    def mean() -> object:
        return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=BOUNDS, B=1000, rng=1)

    medians = interleaved({"cr_ss_median": median, "cr_gs_mean": mean}, rounds=11)
    ratio = medians["cr_ss_median"] / medians["cr_gs_mean"]
    _record(benchmark, f"cr-ss median (GDP({mu:g}, 1e-6)) / cr-gs wor mean, n=50000", medians, ratio, "x")
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


@pytest.mark.parametrize("n", [50_000, 200_000])
def test_ratio_blbquant_mean_over_cr_gs_mean(benchmark: Any, n: int) -> None:
    """Target: blbquant mean / cr-gs mean <= 20 at n = 50 000 and 200 000, PureDP(1), one thread each.

    blbquant runs R s little bootstraps of n draws each (R s = 1.0e6 rows of b = 230 counts at n = 50 000,
    2.45e6 rows of b = 816 at n = 200 000, where R reaches its cap of 10 000); cr-gs runs B = 1000
    resamples of n / 2 records.
    """
    x = _data(n)

    def blb_mean() -> object:
        return pf.confidence_interval(x, "mean", method="blbquant", budget=pf.PureDP(1.0), bounds=BOUNDS, rng=1)

    def mean() -> object:
        return pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.PureDP(1.0), bounds=BOUNDS, rng=1)

    medians = interleaved({"blbquant_mean": blb_mean, "cr_gs_mean": mean}, rounds=3)
    ratio = medians["blbquant_mean"] / medians["cr_gs_mean"]
    _record(benchmark, f"blbquant mean / cr-gs mean, n={n}", medians, ratio, "x")
    benchmark.pedantic(blb_mean, rounds=1, iterations=1)


def test_ratio_rank_quantile_interval_over_opendp_point_quantile(benchmark: Any) -> None:
    """Target: the rank-quantile median interval at n = 1e6 / OpenDP's ``make_private_quantile`` point release
    (1001 candidates on the public bounds, pure eps = 1) <= 2.

    OpenDP gets the records as a Python list made beforehand (its FFI takes a list; making it from the array
    costs another 0.05 s, left out in OpenDP's favour).
    """
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n, bounds = 10**6, (0.0, 50.0)
    x = np.random.default_rng(n).lognormal(0.0, 1.0, n).clip(*bounds)
    records = x.tolist()
    candidates = np.linspace(*bounds, 1001).tolist()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    point = dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(), candidates, 0.5, 1.0)
    assert point.map(1) == pytest.approx(1.0)  # scale 1 with alpha = 0.5: eps = 1 at one changed record

    def interval() -> object:
        return pf.confidence_interval(x, "median", method="rank-quantile", budget=pf.PureDP(1.0), bounds=bounds, rng=1)

    def opendp_point() -> object:
        return point(records)

    medians = interleaved({"rank_quantile_interval": interval, "opendp_point": opendp_point}, rounds=5)
    ratio = medians["rank_quantile_interval"] / medians["opendp_point"]
    _record(benchmark, "rank-quantile interval / OpenDP point quantile, n=1e6", medians, ratio, "x")
    benchmark.pedantic(interval, rounds=1, iterations=1)


@pytest.mark.slow
def test_privboot_gdp8_n20000(benchmark: Any) -> None:
    """Target: privboot at GDP(8), n = 20 000 (B = 2000 mu^2 = 128 000 resamples) in <= 10 s, with the paper's
    asymptotic accounting (the exact default refuses a GDP budget: it proves an (eps, delta) guarantee)."""
    x = _data(20_000)
    method = {"name": "privboot", "accounting": "asymptotic"}

    def privboot() -> object:
        return pf.confidence_interval(x, "mean", method=method, budget=pf.GDP(8.0), bounds=BOUNDS, rng=1)

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


_FIRST_CALL = """
import numpy as np
import privframe as pf
x = np.random.default_rng(0).uniform(size=1000)
pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=1)
"""


def _first_call(benchmark: Any, env: dict[str, str], code: str, name: str, label: str, rounds: int = 3) -> None:
    """Time ``code`` in fresh interpreters beside ``import numpy`` alone, after one run that writes the
    bytecode caches and warms numba's compile cache."""

    def first() -> object:
        return subprocess.run([sys.executable, "-c", code], check=True, env=env)

    first()
    medians = interleaved({name: first, "numpy": _fresh_import("numpy", env)}, rounds=rounds)
    _record(benchmark, label, medians, medians[name], " s")
    benchmark.pedantic(first, rounds=1, iterations=1)


def test_first_interval_in_a_fresh_process(benchmark: Any, tmp_path: Path) -> None:
    """Target: a fresh interpreter's first interval (import, plugin loading, the compiled kernels' cache
    loads, one cr-gs call at n = 1000) in at most 0.5 s, the compile cache warm; ``import numpy`` alone is
    timed beside it."""
    env = _bytecode_env(tmp_path)
    _first_call(benchmark, env, _FIRST_CALL, "first_interval", "first interval in a fresh process", rounds=5)


_FIRST_AUTO_MEAN = """
import numpy as np
import privframe as pf
x = np.random.default_rng(0).uniform(size=1000)
pf.confidence_interval(x, "mean", method="auto", budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)
"""


def test_first_auto_mean_interval_in_a_fresh_process(benchmark: Any, tmp_path: Path) -> None:
    """The same for the default path of a mean, ``method="auto"`` at ``PureDP(1)``, n = 1000: auto runs
    private-variance, whose plan (the budget split and the calibrated inflation, public arithmetic cached
    per process and on disk) is computed on the first call at each (n, budget, confidence). Measured beside
    the cr-gs figure above; the 0.5 s target was set on cr-gs."""
    env = _bytecode_env(tmp_path)
    _first_call(benchmark, env, _FIRST_AUTO_MEAN, "first_auto_mean", "first auto mean interval in a fresh process")


_FIRST_AUTO_MEDIAN = """
import numpy as np
import privframe as pf
x = np.random.default_rng(0).lognormal(size=1000).clip(0, 20)
pf.confidence_interval(x, "median", method="auto", budget=pf.PureDP(1.0), bounds=(0, 20), rng=1)
"""


def test_first_auto_median_interval_in_a_fresh_process(benchmark: Any, tmp_path: Path) -> None:
    """The default path of a median, ``method="auto"`` at ``PureDP(1)``, n = 1000 (auto runs rank-quantile,
    whose plan calibrates its ranks with binomial tails), measured as the mean's above."""
    env = _bytecode_env(tmp_path)
    label = "first auto median interval in a fresh process"
    _first_call(benchmark, env, _FIRST_AUTO_MEDIAN, "first_auto_median", label)


@pytest.mark.parametrize(
    "budget",
    [
        "PureDP(1.0)",
        pytest.param("ApproxDP(5.0, 1e-6)", marks=pytest.mark.slow),
        pytest.param("GDP(1.0)", marks=pytest.mark.slow),
    ],
)
def test_first_auto_mean_interval_at_a_new_n(benchmark: Any, tmp_path: Path, budget: str) -> None:
    """The same call with no plan stored (``PRIVFRAME_PLAN_CACHE=0``): a fresh process at an n it has not
    seen, which searches the private-variance plan (nine coarse calibrations, one precise)."""
    env = _bytecode_env(tmp_path) | {"PRIVFRAME_PLAN_CACHE": "0"}
    code = _FIRST_AUTO_MEAN.replace("pf.PureDP(1.0)", f"pf.{budget}")
    label = f"first auto mean interval at a new n, {budget}"
    _first_call(benchmark, env, code, "first_auto_mean_new_n", label)


_FAULTS = """
import resource, sys
import numpy as np
import privframe as pf
method, n = sys.argv[1], int(sys.argv[2])
x = np.clip(np.random.default_rng(0).normal(size=n), -6.0, 4.0)
budget = pf.GDP(1.0, delta=1e-8) if method == "cr-ss" else pf.ApproxDP(1.0, 1e-8)
call = lambda: pf.confidence_interval(x, "median", method=method, budget=budget, bounds=(-6.0, 4.0), rng=1)
call()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
call()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cr-ss", "privsub"])
def test_minor_page_faults_of_a_median_call(benchmark: Any, method: str) -> None:
    """Target: at most 19 600 minor page faults (10% of the ~196 000 measured before) for the second cr-ss or
    privsub median call in a process at n = 1e6 (fresh pages the allocator hands back and takes again)."""

    def faults() -> int:
        run = subprocess.run(
            [sys.executable, "-c", _FAULTS, method, "1000000"], check=True, capture_output=True, text=True
        )
        return int(run.stdout.split()[-1])

    counts = sorted(faults() for _ in range(3))
    benchmark.extra_info["ratio"] = f"minor page faults, second {method} median call, n=1e6: {counts[1]}"
    benchmark.pedantic(faults, rounds=1, iterations=1)
