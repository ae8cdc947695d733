"""A seeded sweep over every method x statistic x budget pair, printed bit for bit (floats as hex).

Run it before and after a change that must not move any result (a refactor), and diff the outputs:

    python scripts/seeded_sweep.py > before.txt
    ... change ...
    python scripts/seeded_sweep.py > after.txt && diff before.txt after.txt

Only the front door is used (``pf.confidence_interval``, ``pf.confidence_region``), so the script runs on
any layout of the package. A refused combination prints its error type and message, which must not move
either. Released numbers print as ``float.hex``; the ledger prints each event's label, mechanism, budget,
count and noise scale.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from typing import Any

import numpy as np
from scipy import stats

import privframe as pf

BUDGETS: dict[str, Any] = {
    "gdp1": pf.GDP(1.0),
    "gdp2-d": pf.GDP(2.0, delta=1e-6),
    "adp": pf.ApproxDP(2.0, 1e-6),
    "pure": pf.PureDP(2.0),
}

METHODS = ("cr-gs", "cr-ss", "privsub", "blbquant", "dette-graw", "privboot", "subsampling", "bootstrap", "auto")

# A small, fast setting for each method (the front door's own defaults are used otherwise).
METHOD_OPTIONS: dict[str, dict[str, Any]] = {
    "cr-gs": {"B": 200},
    "cr-ss": {"B": 200},
    "privsub": {},
    "blbquant": {"R": 60, "min_block": 0},
    "dette-graw": {"B": 200, "on_reject": "redraw"},
    "privboot": {"B": 300},
    "subsampling": {"B": 200},
    "bootstrap": {"B": 200},
    "auto": {},
}


def _hex(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, np.ndarray):
        return "[" + ",".join(float(v).hex() for v in value.reshape(-1)) + "]"
    return repr(value)


def _statistics(rng: np.random.Generator) -> dict[str, tuple[Any, Any, dict[str, Any], bool]]:
    """name -> (data, bounds, statistic options, region?)."""
    n = 2000
    scalar = rng.beta(2, 5, size=n) * 10.0
    vectors = rng.normal(size=(n, 3)) * 0.4
    features = rng.normal(size=(n, 1))
    labels = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + 0.8 * features[:, 0])))).astype(float)
    table = np.column_stack([features, labels])
    return {
        "mean": (scalar, (0.0, 10.0), {}, False),
        "mean-vector": (vectors, pf.L2Ball(2.0), {}, True),
        "median": (scalar, (0.0, 10.0), {}, False),
        "quantile": (scalar, (0.0, 10.0), {"q": 0.8}, False),
        "u-statistic": (scalar / 10.0 - 0.3, (-1.0, 1.0), {}, False),
        "ks": (rng.normal(size=n), None, {"reference": stats.norm(0.0, 1.2)}, False),
        "logistic-slope": (table, None, {"feature_bounds": [[-4.0, 4.0]]}, False),
    }


def _describe(result: Any) -> str:
    if isinstance(result, pf.RegionResult):
        head = f"center={_hex(result.center)} radius={_hex(result.radius)}"
    else:
        head = f"low={_hex(result.low)} high={_hex(result.high)} center={_hex(result.center)}"
    events = ";".join(
        f"{e.label}|{e.mechanism}|{e.budget}|{e.count}|{_hex(e.noise_scale)}|{_hex(e.sensitivity)}"
        for e in result.privacy.events
    )
    return f"{result.method} {head} total={result.privacy.total} events={events}"


def main(argv: list[str] | None = None) -> None:
    """Print one line per (statistic, method, budget), then ``done``; takes no arguments."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    # The sweep calls every method on the same data by design: the repeated-call hint is beside the point.
    warnings.filterwarnings("ignore", category=pf.PrivacyWarning)
    rng = np.random.default_rng(20261201)
    for stat_name, (data, bounds, stat_options, region) in _statistics(rng).items():
        statistic = "mean" if stat_name == "mean-vector" else stat_name
        for method in METHODS:
            for budget_name, budget in BUDGETS.items():
                private_budget = None if method in ("subsampling", "bootstrap") else budget
                if private_budget is None and budget_name != "gdp1":
                    continue
                call = pf.confidence_region if region else pf.confidence_interval
                options = {**METHOD_OPTIONS[method], **stat_options}
                key = f"{stat_name} {method} {budget_name}"
                try:
                    result = call(
                        data, statistic, method=method, budget=private_budget, bounds=bounds, rng=7, **options
                    )
                except pf.PrivframeError as exc:
                    print(f"{key}: {type(exc).__name__}: {exc}")
                    continue
                print(f"{key}: {_describe(result)}")
                sys.stdout.flush()
    print("done", math.pi.hex())


if __name__ == "__main__":
    main()
