"""Acceptance of ``method="auto"`` at the budgets people use (``docs/choosing.md``).

(eps, 1e-6)-DP budgets at eps 1 and 5; the mean, median and 0.9-quantile of exp(N(0, 1)) data clipped to the
public bounds [0, 20]; n in {500, 2000, 10 000}; TRIALS seeded trials per row. Prints a Markdown table:
coverage with its SE against nominal 0.9, the method auto ran, the mean width relative to the non-private
percentile bootstrap on the same data, and the shares of zero-width intervals and of intervals outside
[0, 20]. One timing comment per row goes to standard error.

usage: python scripts/auto_acceptance.py TRIALS [N,N,...]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np
from scipy import integrate, stats

import privframe as pf

HIGH = 20.0
NOMINAL = 0.9
LAW = stats.lognorm(1.0)
STATISTICS: dict[str, Any] = {"mean": "mean", "median": "median", "q90": {"name": "quantile", "q": 0.9}}


def truths() -> dict[str, float]:
    """The parameters of the clipped law: its mean by quadrature, its quantiles in closed form."""
    mean = integrate.quad(lambda t: min(t, HIGH) * LAW.pdf(t), 0, 400, limit=400)[0]
    return {"mean": mean, "median": min(float(LAW.ppf(0.5)), HIGH), "q90": min(float(LAW.ppf(0.9)), HIGH)}


def row(label: str, truth: float, eps: float, n: int, trials: int) -> str:
    """One table row: ``trials`` calls of auto on fresh data, seeds spawned from ``[14, n, eps]``."""
    hits, zero, outside = 0, 0, 0
    widths: list[float] = []
    references: list[float] = []
    ran: dict[str, int] = {}
    for trial in np.random.SeedSequence([14, n, int(eps)]).spawn(trials):
        data_seed, run_seed, ref_seed = trial.spawn(3)
        x = np.exp(np.random.default_rng(data_seed).normal(size=n))
        common: dict[str, Any] = {"bounds": (0, HIGH), "confidence": NOMINAL}
        res = pf.confidence_interval(
            x, STATISTICS[label], method="auto", budget=pf.ApproxDP(eps, 1e-6), rng=run_seed, **common
        )
        ran[res.method] = ran.get(res.method, 0) + 1
        hits += res.contains(truth)
        widths.append(res.width)
        zero += res.width == 0
        outside += res.low < 0 or res.high > HIGH
        if len(references) < 20:
            ref = pf.confidence_interval(x, STATISTICS[label], method="bootstrap", budget=None, rng=ref_seed, **common)
            references.append(ref.width)
    coverage = hits / trials
    se_nominal = math.sqrt(NOMINAL * (1 - NOMINAL) / trials)
    verdict = "yes" if coverage >= NOMINAL - 2 * se_nominal else "NO"
    if coverage > NOMINAL + 2 * se_nominal:
        verdict += " (over)"
    methods = ", ".join(f"{name} x{count}" for name, count in ran.items())
    cells = [
        label,
        f"({eps:g}, 1e-6)",
        str(n),
        methods,
        f"{coverage:.3f}",
        f"{math.sqrt(coverage * (1 - coverage) / trials):.3f}",
        verdict,
        f"{np.mean(widths) / np.mean(references):.2f}",
        f"{zero / trials:.2f}",
        f"{outside / trials:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str]) -> None:
    """Print the table (``argv`` without the program name)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", type=int, help="seeded trials per row")
    parser.add_argument("sizes", nargs="?", default="500,2000,10000", help="comma-separated n (default 500,2000,10000)")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("TRIALS must be at least 1")
    trials = args.trials
    sizes = [int(v) for v in args.sizes.split(",")]
    columns = ["statistic", "budget", "n", "auto ran", "coverage", "SE", "within 2 SE", "width / bootstrap"]
    columns += ["zero width", "outside"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for label, truth in truths().items():
        for eps in (1.0, 5.0):
            for n in sizes:
                started = time.time()
                print(row(label, truth, eps, n, trials), flush=True)
                print(f"<!-- {time.time() - started:.0f} s -->", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
