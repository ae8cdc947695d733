"""The inflation each data variance needs on its own, against the plan's one k: an upper bound on what any
spread-dependent inflation of the private-variance interval could save.

For one (n, budget, confidence) this takes the plan's calibrated inflation k (the worst case over every
variance in (0, 1/4], every mean and coupling) and, at each listed variance sigma^2, the smallest k_local
whose model coverage at that variance alone (worst over the means and couplings the calibration checks,
``calibration._worst_at``) reaches the calibration's target. It prints both and the ratio of the expected
half-widths ``E H(sigma^2 + eta_2 + k b_2)`` at k_local and at k (``calibration.expected_half_width``). An
inflation that knew sigma^2 could use k_local; a real one sees only the released spread, so the ratio is a
floor on what it could gain. Everything is in width units and public: no data.

usage: python scripts/private_variance_local_inflation.py [--n 500,2000,10000] [--budget pure=5,gdp=4]
       [--sd 0.02,0.1] [--confidence 0.9]
"""

from __future__ import annotations

import argparse

import numpy as np

import privframe as pf
from privframe_std.methods.private_variance import calibration, core

_STEPS = 30
"""Bisection steps of k_local on [0, k] (2^-30 of k)."""


def parse_budget(text: str) -> pf.Budget:
    """``pure=5`` -> PureDP(5), ``gdp=4`` -> GDP(4)."""
    kind, _, value = text.partition("=")
    if kind == "pure":
        return pf.PureDP(float(value))
    if kind == "gdp":
        return pf.GDP(float(value))
    raise SystemExit(f"--budget: {text!r} is neither pure=EPS nor gdp=MU")


def local_inflation(sigma2: float, k: float, model: calibration.CoverageModel) -> float:
    """The smallest inflation in [0, k] whose worst model coverage at ``sigma2`` alone reaches the target."""
    target = model.confidence - calibration.CALIBRATION_SLACK

    def covers(value: float) -> bool:
        worst = calibration._worst_at(np.array([sigma2]), value, model, calibration.FULL_RANGE)[0]
        return bool(worst >= target)

    if covers(0.0):
        return 0.0
    low, high = 0.0, k
    for _ in range(_STEPS):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if covers(middle) else (middle, high)
    return high


def main(argv: list[str] | None = None) -> None:
    """Print one Markdown row per (n, budget, sd)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="500,2000,10000,50000", help="comma-separated record counts")
    parser.add_argument("--budget", default="pure=5,gdp=4", help="comma-separated pure=EPS or gdp=MU")
    parser.add_argument("--sd", default="0.02,0.1", help="data standard deviations, in widths")
    parser.add_argument("--confidence", type=float, default=0.9, help="confidence (default 0.9)")
    args = parser.parse_args(argv)
    print("| n | budget | sd / width | sigma^2 / b_2 | plan k | k this variance needs | half-width ratio |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(v) for v in args.n.split(",")):
        for budget in (parse_budget(v) for v in args.budget.split(",")):
            plan = core.plan(n, (0.0, 1.0), budget, args.confidence)
            model = core._model(n, args.confidence, plan.mean, plan.second_moment, 1.0)
            for sd in (float(v) for v in args.sd.split(",")):
                sigma2 = sd * sd
                k_local = local_inflation(sigma2, plan.inflation, model)
                widths = [
                    calibration.expected_half_width(np.array([sigma2]), k, model)[0] for k in (k_local, plan.inflation)
                ]
                print(
                    f"| {n} | {budget} | {sd:g} | {sigma2 / model.spread_law.scale:.3g} | {plan.inflation:.2f} | "
                    f"{k_local:.2f} | {widths[0] / widths[1]:.4f} |"
                )


if __name__ == "__main__":
    main()
