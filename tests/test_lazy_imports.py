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


def test_a_part_that_needs_scipy_stats_still_gets_it() -> None:
    code = (
        "import numpy as np, privframe as pf\n"
        "x = np.random.default_rng(0).uniform(size=500)\n"
        "pf.confidence_interval(x, 'median', method='rank-quantile', budget=pf.PureDP(1.0), bounds=(0, 1), rng=1)"
    )
    assert "scipy.stats" in _loaded_after(code)
