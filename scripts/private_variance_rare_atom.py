"""private-variance and NoisyVar on a two-point law with a rare far atom: a law the inflation is there for.

The data are ``{0, d}`` on the bounds ``[0, 1]`` with ``P(d) = p`` and ``d`` set so that the variance is
``sd^2`` (``p (1 - p) d^2 = sd^2``). Each trial draws n records, runs ``method="private-variance"`` (its
exact lattice releases, ``rng`` = the trial's index) and the test-only NoisyVar baseline
(``tests/baselines/noisyvar.py``, pure eps, its SIM step with ``--sim-draws`` draws: 20 000 approach its
exact quantiles), and prints each one's coverage of the mean ``p d`` with its Monte Carlo SE and its mean
width (NoisyVar's after intersecting with the bounds). Beside them, the non-private Student t interval
``mean +- t_(n-1) s / sqrt(n)`` on the same data: the normal approximation with no noise at all, which
shows how much of NoisyVar's shortfall on a law is the approximation's rather than privacy's.

usage: python scripts/private_variance_rare_atom.py [--n 10000] [--epsilon 5] [--p 0.001,0.002]
       [--sd 0.02] [--trials 1000] [--confidence 0.9] [--seed 11] [--sim-draws 20000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import stdtrit

import privframe as pf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from baselines.noisyvar import noisyvar_interval


def main(argv: list[str] | None = None) -> None:
    """Print one Markdown row per atom probability."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="records (default 10000)")
    parser.add_argument("--epsilon", type=float, default=5.0, help="pure eps (default 5)")
    parser.add_argument("--p", default="0.001,0.002", help="comma-separated probabilities of the atom d")
    parser.add_argument("--sd", type=float, default=0.02, help="the law's standard deviation (default 0.02)")
    parser.add_argument("--trials", type=int, default=1000, help="seeded trials (default 1000)")
    parser.add_argument("--confidence", type=float, default=0.9, help="confidence (default 0.9)")
    parser.add_argument("--seed", type=int, default=11, help="seed of the data (default 11)")
    parser.add_argument("--sim-draws", type=int, default=20_000, help="NoisyVar's SIM draws (default 20000)")
    args = parser.parse_args(argv)
    budget = pf.PureDP(args.epsilon)
    # At small n p some trials draw no atom at all and so the same (all-zero) data: the repeated-call hint is
    # right about them, and beside the point in a simulation.
    warnings.filterwarnings("ignore", category=pf.PrivacyWarning)
    se = math.sqrt(args.confidence * (1.0 - args.confidence) / args.trials)
    print(f"n = {args.n}, {budget}, sd {args.sd}, {args.trials} trials (SE at nominal {se:.4f}), seed {args.seed}")
    print(
        "| p | d | n p | private-variance coverage | width | NoisyVar coverage | width "
        "| non-private t coverage | width | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    t_factor = float(stdtrit(args.n - 1, 0.5 + args.confidence / 2.0))
    for p in (float(v) for v in args.p.split(",")):
        started = time.perf_counter()
        d = args.sd / math.sqrt(p * (1.0 - p))
        if d > 1.0:
            raise SystemExit(f"--p {p}: the atom would lie outside [0, 1] at sd {args.sd}")
        truth = p * d
        data = (np.random.default_rng([args.seed, round(p * 1e9)]).random((args.trials, args.n)) < p) * d
        covered, widths = [], []
        for trial, x in enumerate(data):
            res = pf.confidence_interval(
                x, "mean", method="private-variance", budget=budget, bounds=(0.0, 1.0),
                confidence=args.confidence, rng=trial,
            )  # fmt: skip
            covered.append(res.low <= truth <= res.high)
            widths.append(res.high - res.low)
        low, high = noisyvar_interval(
            data, (0.0, 1.0), args.epsilon, np.random.default_rng([args.seed, 1]), args.confidence,
            draws=args.sim_draws,
        )  # fmt: skip
        low, high = np.maximum(low, 0.0), np.minimum(high, 1.0)
        baseline = float(np.mean((low <= truth) & (truth <= high)))
        half = t_factor * data.std(axis=1, ddof=1) / math.sqrt(args.n)
        t_covered = np.abs(data.mean(axis=1) - truth) <= half
        print(
            f"| {p:g} | {d:.4f} | {args.n * p:.3g} | {np.mean(covered):.3f} | {np.mean(widths):.3g} | "
            f"{baseline:.3f} | {np.mean(high - low):.3g} | {np.mean(t_covered):.3f} | {np.mean(2.0 * half):.3g} | "
            f"{time.perf_counter() - started:.0f} |"
        )


if __name__ == "__main__":
    main()
