"""Loading the plugins stays light (issue 31.3): scipy.stats, scipy.optimize and scipy.interpolate (about a
second of a fresh process's first call) are imported only when a part that needs them runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "scipy.optimize", "scipy.interpolate")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_loading_every_plugin_imports_no_heavy_scipy_module() -> None:
    assert _loaded_after("import privframe as pf\npf.registry.entries()") == set()


@pytest.mark.parametrize("sampler", ["wor", "wr"])
def test_a_cr_gs_mean_imports_no_heavy_scipy_module(sampler: str) -> None:
    code = (
        "import numpy as np, privframe as pf\n"
        "x = np.random.default_rng(0).uniform(size=500)\n"
        f"pf.confidence_interval(x, 'mean', method='cr-gs', sampler={sampler!r}, budget=pf.GDP(1.0), bounds=(0, 1),"
        " rng=1)"
    )
    assert _loaded_after(code) == set()


def test_no_part_of_a_run_imports_scipy_stats() -> None:
    """The binomial and Poisson tails the plugins need come from scipy.special (``privframe_std._binomial``,
    the Poisson table), so scipy.stats is never imported by a run: here rank-quantile, BLBQuant, Dette-Graw
    and PrivBoot, the parts that used it."""
    code = (
        "import warnings, numpy as np, privframe as pf\n"
        "warnings.simplefilter('ignore')\n"
        "x = np.random.default_rng(0).uniform(size=500)\n"
        "pf.confidence_interval(x, 'median', method='rank-quantile', budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)\n"
        "y = np.random.default_rng(1).uniform(size=50_000)\n"
        "pf.confidence_interval(y, 'mean', method='blbquant', budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)\n"
        "pf.confidence_interval(x, 'mean', method='dette-graw', budget=pf.GDP(1.0), bounds=(0, 1), rng=1, B=50)\n"
        "pf.confidence_interval(x, 'mean', method='privboot', budget=pf.GDP(1.0), bounds=(0, 1), rng=1,"
        " accounting='asymptotic')\n"
        "pf.confidence_interval(x, 'mean', method='privboot', budget=pf.ApproxDP(1.0, 1e-6), bounds=(0, 1), rng=1,"
        " B=50)"
    )
    assert "scipy.stats" not in _loaded_after(code)


def test_a_part_that_needs_scipy_optimize_still_gets_it() -> None:
    """The private-variance plan search (no plan stored) uses scipy.optimize: the lazy import still loads it."""
    code = (
        "import os\nos.environ['PRIVFRAME_PLAN_CACHE'] = '0'\n"
        "import numpy as np, privframe as pf\n"
        "x = np.random.default_rng(0).uniform(size=500)\n"
        "pf.confidence_interval(x, 'mean', method='private-variance', budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)"
    )
    assert "scipy.optimize" in _loaded_after(code)
