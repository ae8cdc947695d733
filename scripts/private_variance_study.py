"""Coverage and width of the private-variance interval against NoisyVar and the non-private intervals.

Every shape x n x budget x bound width: seeded trials (``--trials``, default 200), the interval of
``privframe_std.methods.private_variance`` computed from its own plan, NoisyVar (tests/baselines/noisyvar.py,
Laplace, pure epsilon), the non-private Student t interval and the percentile bootstrap (``--boot``
resamples), all on the same data (common random numbers across methods and budgets). Prints a Markdown table
and a summary.

Noise: the private-variance releases are simulated as ``value + continuous noise`` at the exact lattice
plan's scale (``Release.lattice_law``): the lattice mechanisms of privframe.noise release the same law up to
2^-20 of its scale; the interval is computed from those laws exactly as a real run would. NoisyVar under
``ApproxDP(eps, delta)`` runs at pure eps (a stricter guarantee); under ``GDP(mu)`` at the largest pure eps
that implies mu-GDP (``privframe.accounting.gdp_pure_epsilon``), so every comparison is at the same or a
stricter guarantee.

Run: ``PYTHONPATH=.:plugins python scripts/private_variance_study.py [--trials 200] [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import integrate, special, stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from baselines.noisyvar import noisyvar_interval  # noqa: E402

import privframe as pf  # noqa: E402
from privframe.privacy.accounting import gdp_pure_epsilon  # noqa: E402
from privframe_std.methods import private_variance as pv  # noqa: E402

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Shape:
    """A data law: a sampler, its scale (the 'sd' the bound widths are counted in) and the bound placement."""

    name: str
    draw: Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
    sd: float
    lower: float | None  # natural lower bound (bounds [lower, lower + w]); None: centred bounds
    truth: Callable[[float, float], float]


def _clipped_mean(dist: stats.rv_continuous | stats.rv_frozen, low: float, high: float) -> float:
    inner = integrate.quad(lambda v: v * dist.pdf(v), low, high, limit=400)[0]
    return float(low * dist.cdf(low) + inner + high * dist.sf(high))


def _poisson_clipped(lam: float, low: float, high: float, zero: float = 0.0) -> float:
    k = np.arange(0, int(high) + 400)
    p = stats.poisson.pmf(k, lam)
    return float(zero * min(max(0.0, low), high) + (1 - zero) * np.sum(np.clip(k, low, high) * p))


def _mixture(low: float, high: float) -> float:
    return 0.5 * _clipped_mean(stats.norm(-2, 1), low, high) + 0.5 * _clipped_mean(stats.norm(2, 1), low, high)


SHAPES = [
    Shape(
        "lognormal",
        lambda r, s: r.lognormal(0.0, 1.0, s),
        math.sqrt((math.e - 1) * math.e),
        0.0,
        lambda lo, hi: _clipped_mean(stats.lognorm(1.0), lo, hi),
    ),
    Shape("normal", lambda r, s: r.normal(0.0, 1.0, s), 1.0, None, lambda lo, hi: _clipped_mean(stats.norm(), lo, hi)),
    Shape(
        "bimodal",
        lambda r, s: np.where(r.random(s) < 0.5, r.normal(-2, 1, s), r.normal(2, 1, s)),
        math.sqrt(5.0),
        None,
        _mixture,
    ),
    Shape("t2", lambda r, s: r.standard_t(2, s), 1.0, None, lambda lo, hi: _clipped_mean(stats.t(2), lo, hi)),
    Shape(
        "poisson3",
        lambda r, s: r.poisson(3.0, s).astype(float),
        math.sqrt(3.0),
        0.0,
        lambda lo, hi: _poisson_clipped(3.0, lo, hi),
    ),
    Shape(
        "zeros60",
        lambda r, s: np.where(r.random(s) < 0.6, 0.0, r.poisson(4.0, s).astype(float)),
        math.sqrt(0.4 * 20 - 1.6**2),
        0.0,
        lambda lo, hi: _poisson_clipped(4.0, lo, hi, zero=0.6),
    ),
    Shape(
        "bern02",
        lambda r, s: (r.random(s) < 0.02).astype(float),
        math.sqrt(0.02 * 0.98),
        0.0,
        lambda lo, hi: 0.02 * min(max(1.0, lo), hi),
    ),
]

WIDTHS = (3, 10, 50)
NS = (100, 500, 2000, 10000)
BUDGETS: list[tuple[str, pf.Budget]] = [
    ("PureDP(1)", pf.PureDP(1.0)),
    ("ApproxDP(1,1e-6)", pf.ApproxDP(1.0, 1e-6)),
    ("ApproxDP(5,1e-6)", pf.ApproxDP(5.0, 1e-6)),
    ("GDP(1)", pf.GDP(1.0)),
]


def bounds_for(shape: Shape, width_sd: int) -> tuple[float, float]:
    """Bernoulli: [0, 1] for the '3 sd' row (its natural range, about 7 sd), [0, 1.4] and [0, 7] after."""
    if shape.name == "bern02":
        return {3: (0.0, 1.0), 10: (0.0, 1.4), 50: (0.0, 7.0)}[width_sd]
    w = width_sd * shape.sd
    if shape.lower is None:
        return (-w / 2.0, w / 2.0)
    return (shape.lower, shape.lower + w)


def noisyvar_epsilon(budget: pf.Budget) -> float:
    """The pure epsilon NoisyVar runs at: the same or a stricter guarantee than ``budget``."""
    if isinstance(budget, pf.GDP):
        return gdp_pure_epsilon(budget.mu)
    return budget.epsilon


def draw_noise(law: pv.NoiseLaw, rng: np.random.Generator, size: int) -> np.ndarray:
    if law.kind == "laplace":
        return rng.laplace(0.0, law.scale, size)
    return rng.normal(0.0, law.scale, size)


def private_variance(x: np.ndarray, bounds: tuple[float, float], budget: pf.Budget, rng: np.random.Generator):
    trials, n = x.shape
    plan = pv.plan(n, bounds, budget, CONFIDENCE)
    values = np.array([pv.statistics(row, plan) for row in x])
    laws = pv.noise_laws(plan, exact=True)
    released = [values[:, i] + draw_noise(laws[i], rng, trials) for i in range(2)]
    low, high, _ = pv.interval(released, laws, plan)
    return low, high, plan


def t_interval(x: np.ndarray, bounds: tuple[float, float]):
    n = x.shape[1]
    y = np.clip(x, *bounds)
    half = special.stdtrit(n - 1, 0.5 + CONFIDENCE / 2) * y.std(axis=1, ddof=1) / math.sqrt(n)
    return np.clip(y.mean(axis=1) - half, *bounds), np.clip(y.mean(axis=1) + half, *bounds)


def bootstrap(x: np.ndarray, bounds: tuple[float, float], rng: np.random.Generator, resamples: int):
    trials, n = x.shape
    y = np.clip(x, *bounds)
    lows, highs = np.empty(trials), np.empty(trials)
    chunk = max(1, 4_000_000 // n)
    for i in range(trials):
        means = np.concatenate(
            [y[i, rng.integers(0, n, (min(chunk, resamples - j), n))].mean(axis=1) for j in range(0, resamples, chunk)]
        )
        lows[i], highs[i] = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return lows, highs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--boot", type=int, default=400, help="bootstrap resamples per trial")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--quick", action="store_true", help="n = 100 and 2000, widths 3 and 50 only")
    parser.add_argument("--shapes", default="", help="comma-separated subset of shapes")
    args = parser.parse_args()
    ns = (100, 2000) if args.quick else NS
    widths = (3, 50) if args.quick else WIDTHS
    shapes = [s for s in SHAPES if not args.shapes or s.name in args.shapes.split(",")]
    se = math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / args.trials)
    print(f"Trials per cell: {args.trials} (nominal {CONFIDENCE}: MC SE {se:.4f}); bootstrap {args.boot} resamples.\n")
    print(
        "| shape | width (sd) | n | budget | PV cover | NV cover | PV width | NV width | t width | boot width "
        "| PV/NV | PV/t | spelling, share, k |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    started = time.time()
    rows = []
    for shape in shapes:
        for width_sd in widths:
            bounds = bounds_for(shape, width_sd)
            truth = shape.truth(*bounds)
            for n in ns:
                key = (SHAPES.index(shape), width_sd, n)  # a cell's seeds do not depend on which cells run
                data_seed = np.random.SeedSequence(args.seed, spawn_key=key)
                # PureDP(eps) and ApproxDP(eps, delta) draw the same noise: their widths compare on the same draws.
                budget_seeds = [np.random.SeedSequence(args.seed, spawn_key=(*key, 1 + i)) for i in (0, 0, 1, 2)]
                rng = np.random.default_rng(data_seed)
                x = shape.draw(rng, (args.trials, n))
                t_lo, t_hi = t_interval(x, bounds)
                b_lo, b_hi = bootstrap(x, bounds, rng, args.boot)
                t_width, b_width = np.mean(t_hi - t_lo), np.mean(b_hi - b_lo)
                for (label, budget), seed in zip(BUDGETS, budget_seeds, strict=True):
                    rng = np.random.default_rng(seed)
                    lo, hi, plan = private_variance(x, bounds, budget, rng)
                    nv_lo, nv_hi = noisyvar_interval(x, bounds, noisyvar_epsilon(budget), rng, CONFIDENCE)
                    nv_lo, nv_hi = np.clip(nv_lo, *bounds), np.clip(nv_hi, *bounds)
                    pv_cover = np.mean((lo <= truth) & (truth <= hi))
                    nv_cover = np.mean((nv_lo <= truth) & (truth <= nv_hi))
                    pv_width, nv_width = np.mean(hi - lo), np.mean(nv_hi - nv_lo)
                    row = (shape.name, width_sd, n, label, pv_cover, nv_cover, pv_width, nv_width, t_width, b_width)
                    rows.append(row)
                    print(
                        f"| {shape.name} | {width_sd} | {n} | {label} | {pv_cover:.3f} | {nv_cover:.3f} "
                        f"| {pv_width:.4g} | {nv_width:.4g} | {t_width:.4g} | {b_width:.4g} "
                        f"| {pv_width / nv_width:.2f} "
                        f"| {pv_width / t_width:.2f} | {plan.spelling}, {plan.share:.3g}, {plan.inflation:.2f} |",
                        flush=True,
                    )
    print(f"\nRan {len(rows)} cells in {time.time() - started:.0f} s.\n")
    summarise(rows, se)


def summarise(rows: list[tuple], se: float) -> None:
    print(
        "| shape | worst PV cover (cell) | worst NV cover (cell) | PV/NV median [min, max] | PV/t median [min, max] |"
    )
    print("|---|---|---|---|---|")
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        worst = min(mine, key=lambda r: r[4])
        worst_nv = min(mine, key=lambda r: r[5])
        ratio = np.array([r[6] / r[7] for r in mine])
        ratio_t = np.array([r[6] / r[8] for r in mine])
        print(
            f"| {name} | {worst[4]:.3f} ({worst[1]} sd, n={worst[2]}, {worst[3]}) | {worst_nv[5]:.3f} "
            f"({worst_nv[1]} sd, n={worst_nv[2]}, {worst_nv[3]}) | {np.median(ratio):.2f} [{ratio.min():.2f}, "
            f"{ratio.max():.2f}] | {np.median(ratio_t):.2f} [{ratio_t.min():.2f}, {ratio_t.max():.2f}] |"
        )
    covers = np.array([r[4] for r in rows])
    print(
        f"\nPV cells below 0.95 - 2 SE ({0.95 - 2 * se:.3f}): {int(np.sum(covers < 0.95 - 2 * se))} of {len(rows)}; "
        f"NV: {int(np.sum(np.array([r[5] for r in rows]) < 0.95 - 2 * se))}."
    )


if __name__ == "__main__":
    main()
