"""The private-variance interval's expected half-width at every budget share, against a known-variance oracle.

For one (n, pure eps) this calibrates the inflation k at each share of the budget spent on the mean (the
split search's coarse calibration, ``core._plan_at(..., precise=False)``) and prints the coverage model's
expected half-width (``calibration.expected_half_width``) over the half-width of a known-variance interval
with the whole budget on the mean (``calibration.oracle_half_width``), at data variances from 2.5e-5 to
1/4 of the squared width. Everything is in width units and public: no data.

What it shows: where the data's variance is small against the second release's noise (wide bounds, small n,
a large eps: the mean's noise is then small too), no share brings the ratio near 1. Spending more on the
variance raises the mean's noise, spending less raises the inflation k the calibration needs, and the
criterion's share is within a few percent of the best share at every variance.

usage: python scripts/private_variance_shares.py [--n 100] [--epsilon 5] [--confidence 0.95]
"""

from __future__ import annotations

import argparse

import numpy as np

import privframe as pf
from privframe_std.methods.private_variance import calibration, core

VARIANCES = np.array([2.5e-5, 1e-4, 4e-4, 1e-3, 4e-3, 1e-2, 0.05, 0.25])
"""Data variances in units of the squared width (4e-4: a standard deviation of 1/50 of the bounds)."""

SHARES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def main(argv: list[str] | None = None) -> None:
    """Print one Markdown row per share, and the share the plan picks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="records (default 100)")
    parser.add_argument("--epsilon", type=float, default=5.0, help="pure eps (default 5)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence (default 0.95)")
    args = parser.parse_args(argv)
    budget = pf.PureDP(args.epsilon)
    chosen = core.plan(args.n, (0.0, 1.0), budget, args.confidence)
    oracle = calibration.oracle_half_width(VARIANCES, args.n, core._full_budget_laws(args.n, budget), args.confidence)
    print(f"n = {args.n}, PureDP({args.epsilon:g}), confidence {args.confidence:g}; the plan's share {chosen.share:g}")
    print()
    print("| share | k | " + " | ".join(f"var {v:g}" for v in VARIANCES) + " |")
    print("|---|---|" + "---|" * VARIANCES.size)
    for share in SHARES:
        plan = core._plan_at(args.n, 0.0, 1.0, 1.0, budget, args.confidence, core.LAPLACE, share, precise=False)
        model = core._model(args.n, args.confidence, plan.mean, plan.second_moment, 1.0)
        ratio = calibration.expected_half_width(VARIANCES, plan.inflation, model) / oracle
        print(f"| {share:g} | {plan.inflation:.2f} | " + " | ".join(f"{r:.2f}" for r in ratio) + " |")


if __name__ == "__main__":
    main()
