"""Coverage and width study of the rank-quantile interval (docs/methods/rank-quantile.md).

For every cell (shape, n, q, budget, bound width) it draws ``--trials`` datasets and computes, on the same
data: the rank-quantile interval (the core's ``plan`` defaults, ``--grid`` cells), the published
exponential-mechanism construction (``tests/baselines/drechsler.py``, at the same budget, or stricter:
pure eps for an (eps, delta) budget and the exact pure conversion for GDP, granularity half a grid cell),
the core without its refinements (``ablation``: independent selections, no tilt, pure-DP accounting of
GDP) when ``--ablation`` is given, and the non-private exact binomial order-statistic interval.

Each finished cell is appended as one JSON line to ``--out`` (default ``rank_quantile_study.jsonl``);
a rerun skips the cells already there, so the study is resumable and can be split between processes
(``--part 0/2`` and ``--part 1/2``). ``--report`` prints the Markdown tables from the file.

    python scripts/rank_quantile_study.py --part 0/2 &
    python scripts/rank_quantile_study.py --part 1/2 &
    python scripts/rank_quantile_study.py --report
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from baselines import drechsler  # noqa: E402

import privframe as pf  # noqa: E402
from privframe_std.methods.rank_quantile import core  # noqa: E402

CONFIDENCE = 0.95
NS = (100, 500, 2000, 10000)
QS = (0.1, 0.5, 0.9)
WIDTHS = (3, 10, 50)
BUDGETS: dict[str, pf.Budget] = {
    "pure1": pf.PureDP(1.0),
    "approx1": pf.ApproxDP(1.0, 1e-6),
    "approx5": pf.ApproxDP(5.0, 1e-6),
    "gdp1": pf.GDP(1.0),
}

Sampler = Callable[[np.random.Generator, int], np.ndarray]


def _mixture_quantile(q: float) -> float:
    return float(optimize.brentq(lambda x: 0.5 * stats.norm.cdf(x + 2) + 0.5 * stats.norm.cdf(x - 2) - q, -10, 10))


def _ties_quantile(q: float) -> float:
    # 60% exactly at 0, 40% N(0, 1): F(x) = 0.4 Phi(x) below 0, F(0) = 0.8.
    if q <= 0.2:
        return float(stats.norm.ppf(q / 0.4))
    if q <= 0.8:
        return 0.0
    return float(stats.norm.ppf((q - 0.6) / 0.4))


T2_SCALE = 2 * float(stats.t.ppf(0.75, 2)) / 1.349  # an sd-equivalent for t_2 (IQR / 1.349)

# name -> (sampler, population quantile, scale, lower bound at width W or None for symmetric)
SHAPES: dict[str, tuple[Sampler, Callable[[float], float], float, str]] = {
    "normal": (lambda r, n: r.normal(size=n), lambda q: float(stats.norm.ppf(q)), 1.0, "centred"),
    "lognormal": (
        lambda r, n: r.lognormal(size=n),
        lambda q: math.exp(stats.norm.ppf(q)),
        math.sqrt((math.e - 1) * math.e),
        "zero",
    ),
    "bimodal": (
        lambda r, n: r.normal(size=n) + np.where(r.random(n) < 0.5, -2.0, 2.0),
        _mixture_quantile,
        math.sqrt(5.0),
        "centred",
    ),
    "t2": (lambda r, n: r.standard_t(2, size=n), lambda q: float(stats.t.ppf(q, 2)), T2_SCALE, "centred"),
    "poisson": (
        lambda r, n: r.poisson(3.0, n).astype(np.float64),
        lambda q: float(stats.poisson.ppf(q, 3.0)),
        math.sqrt(3.0),
        "poisson",
    ),
    "ties": (
        lambda r, n: np.where(r.random(n) < 0.6, 0.0, r.normal(size=n)),
        _ties_quantile,
        math.sqrt(0.4),
        "centred",
    ),
}


def bounds(shape: str, width: int) -> tuple[float, float]:
    """Public bounds ``width`` scales wide (Poisson: [0, 50] at width 10, as in the brief)."""
    _, _, scale, kind = SHAPES[shape]
    if kind == "zero":
        return 0.0, width * scale
    if kind == "poisson":
        return (0.0, 50.0) if width == 10 else (0.0, float(round(width * scale)))
    return -width * scale / 2, width * scale / 2


def _seed(*key: Any) -> np.random.SeedSequence:
    digest = hashlib.sha256(repr(key).encode()).digest()
    return np.random.SeedSequence(int.from_bytes(digest[:8], "little"))


def run_cell(
    shape: str, n: int, q: float, budget: str, width: int, trials: int, grid: int, ablation: bool, tag: str = ""
) -> dict[str, Any]:
    sampler, quantile, _, _ = SHAPES[shape]
    low, high = bounds(shape, width)
    theta = min(max(quantile(q), low), high)
    spec = BUDGETS[budget]
    plan = core.plan(n, q, CONFIDENCE, spec, grid)
    variants: dict[str, core.RankPlan] = {"ours": plan}
    if ablation:
        variants["ablation"] = core.plan(n, q, CONFIDENCE, spec, grid, variant="independent", tilt=False,
                                         gdp_accounting="pure")  # fmt: skip
    eps_run = drechsler.run_epsilon(spec)
    granularity = (high - low) / (2 * grid)
    base_ranks = drechsler.calibrated_ranks(n, q, CONFIDENCE, eps_run, low, high, granularity)
    np_low, np_high = core.order_statistic_ranks(n, q, CONFIDENCE)
    rng = np.random.default_rng(_seed(shape, n, q, budget, width, grid, *((tag,) if tag else ())))
    names = [*variants, "baseline", "nonprivate"]
    cover = {name: 0 for name in names}
    widths: dict[str, list[float]] = {name: [] for name in names}
    start = time.time()
    for _ in range(trials):
        x = sampler(rng, n)
        clipped = np.clip(x, low, high)
        counts = core.histogram(clipped, low, high, grid)
        results: dict[str, tuple[float, float]] = {}
        for name, variant in variants.items():
            results[name] = core.interval(core.select(counts, variant, rng), variant, low, high)
        results["baseline"] = drechsler.drechsler_interval(clipped, low, high, eps_run, granularity, base_ranks, rng)
        ordered = np.sort(clipped)
        results["nonprivate"] = (
            low if np_low == 0 else float(ordered[np_low - 1]),
            high if np_high == n + 1 else float(ordered[np_high - 1]),
        )
        for name, (lo, hi) in results.items():
            cover[name] += int(lo <= theta <= hi)
            widths[name].append(hi - lo)
    return {
        "shape": shape, "n": n, "q": q, "budget": budget, "width": width, "grid": grid, "trials": trials,
        "theta": theta, "range": high - low, "seconds": round(time.time() - start, 2),
        "plan": {"variant": plan.variant, "ranks": [plan.lower_rank, plan.upper_rank],
                 "eps": list(plan.selection_epsilons), "route": plan.route,
                 "tilt": [plan.lower.tilt_block, plan.upper.tilt_block]},
        "baseline_ranks": list(base_ranks), "baseline_eps_run": eps_run, "nonprivate_ranks": [np_low, np_high],
        "coverage": {k: v / trials for k, v in cover.items()},
        "mean_width": {k: float(np.mean(v)) for k, v in widths.items()},
    }  # fmt: skip


def _cells(args: argparse.Namespace) -> list[tuple[str, int, float, str, int]]:
    cells = [
        (shape, n, q, budget, width)
        for width in args.widths
        for n in args.n
        for shape in args.shapes
        for q in args.q
        for budget in args.budgets
    ]
    part, parts = (int(v) for v in args.part.split("/"))
    return [cell for i, cell in enumerate(cells) if i % parts == part]


def _done(path: Path) -> set[tuple[Any, ...]]:
    if not path.exists():
        return set()
    keys = set()
    for line in path.read_text().splitlines():
        row = json.loads(line)
        keys.add((row["shape"], row["n"], row["q"], row["budget"], row["width"], row["grid"]))
    return keys


def _se(p: float, trials: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.25 / trials) / trials)  # floor: p = 1 would show SE 0


def _ratio(a: float, b: float) -> float:
    """a / b, with 0 / 0 = 1 (both intervals a single point, e.g. on an atom) and a / 0 = inf."""
    if a == b:
        return 1.0
    return a / b if b else math.inf


def report(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows.sort(key=lambda r: (r["width"], r["grid"], r["budget"], list(SHAPES).index(r["shape"]), r["n"], r["q"]))
    lines: list[str] = []
    key = None
    for row in rows:
        head = (row["width"], row["grid"], row["budget"])
        if head != key:
            key = head
            ablation = "ablation" in row["coverage"]
            lines += ["", f"### bounds {row['width']} sd wide, G = {row['grid']}, budget {row['budget']}", ""]
            cols = "| shape | n | q | plan | cover ours | cover base | cover non-priv | width ours | ours/base "
            cols += "| ours/non-priv |"
            if ablation:
                cols += " ours/ablation |"
            lines += [cols, "|" + "---|" * (cols.count("|") - 1)]
        c, w, t = row["coverage"], row["mean_width"], row["trials"]
        nominal = CONFIDENCE - 2 * _se(CONFIDENCE, t)
        flag = "" if c["ours"] >= nominal else " **low**"
        cells = [
            row["shape"], str(row["n"]), str(row["q"]), row["plan"]["variant"],
            f"{c['ours']:.3f} ± {_se(c['ours'], t):.3f}{flag}", f"{c['baseline']:.3f}", f"{c['nonprivate']:.3f}",
            f"{w['ours']:.4g}", f"{_ratio(w['ours'], w['baseline']):.3f}", f"{_ratio(w['ours'], w['nonprivate']):.2f}",
        ]  # fmt: skip
        if "ablation" in w:
            cells.append(f"{_ratio(w['ours'], w['ablation']):.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    out = []
    for width in sorted({r["width"] for r in rows}):
        sub = [r for r in rows if r["width"] == width]
        low = [r for r in sub if r["coverage"]["ours"] < CONFIDENCE - 2 * _se(CONFIDENCE, r["trials"])]
        ratios = np.array([_ratio(r["mean_width"]["ours"], r["mean_width"]["baseline"]) for r in sub])
        nonpriv = np.array([_ratio(r["mean_width"]["ours"], r["mean_width"]["nonprivate"]) for r in sub])
        out.append(
            f"bounds {width} sd: {len(sub)} cells, {sum(r['trials'] for r in sub)} trials; coverage below "
            f"nominal - 2 SE: {len(low)} cells; min coverage {min(r['coverage']['ours'] for r in sub):.3f}; "
            "ours/baseline width: "
            f"narrower in {int(np.sum(ratios < 0.9995))}, equal in {int(np.sum(np.abs(ratios - 1) <= 5e-4))}, wider in "
            f"{int(np.sum(ratios > 1.0005))}; median ratio {np.median(ratios):.3f}, max {ratios.max():.3f}; "
            f"ours/non-private median {np.median(nonpriv):.2f}"
        )
    return "\n".join(out)


def condensed(path: Path) -> str:
    """One row per (bounds, budget, n): over the shapes and q, the lowest coverage and the width ratios."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    groups: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["width"], row["budget"], row["n"]), []).append(row)
    lines = [
        "| bounds | budget | n | cells | lowest coverage (SE) | ours/baseline: median [min, max] | "
        "ours/non-private: median | one-sided or none |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = list(BUDGETS)
    for (width, budget, n), sub in sorted(groups.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]), kv[0][2])):
        lowest = min(sub, key=lambda r: r["coverage"]["ours"])
        ratio = np.array([_ratio(r["mean_width"]["ours"], r["mean_width"]["baseline"]) for r in sub])
        nonpriv = np.array([_ratio(r["mean_width"]["ours"], r["mean_width"]["nonprivate"]) for r in sub])
        finite = nonpriv[np.isfinite(nonpriv)]
        trivial = sum(r["plan"]["variant"] in ("one-sided", "none") for r in sub)
        cover = lowest["coverage"]["ours"]
        lines.append(
            f"| {width} sd | {budget} | {n} | {len(sub)} | {cover:.3f} ({_se(cover, lowest['trials']):.3f}) "
            f"| {np.median(ratio):.3f} [{ratio.min():.3f}, {ratio.max():.3f}] "
            f"| {np.median(finite) if finite.size else math.nan:.2f} | {trivial} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("rank_quantile_study.jsonl"))
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--grid", type=int, default=2**16)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    parser.add_argument("--n", nargs="+", type=int, default=list(NS))
    parser.add_argument("--q", nargs="+", type=float, default=list(QS))
    parser.add_argument("--budgets", nargs="+", default=list(BUDGETS))
    parser.add_argument("--widths", nargs="+", type=int, default=list(WIDTHS))
    parser.add_argument("--part", default="0/1")
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--tag", default="", help="a label mixed into the seeds: an independent replication")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--condensed", action="store_true", help="print the one-row-per-(bounds, budget, n) table")
    args = parser.parse_args()
    if args.condensed:
        print(summary(args.out))
        print(condensed(args.out))
        return
    if args.report:
        print(summary(args.out))
        print(report(args.out))
        return
    done = _done(args.out)
    for shape, n, q, budget, width in _cells(args):
        if (shape, n, q, budget, width, args.grid) in done:
            continue
        row = run_cell(shape, n, q, budget, width, args.trials, args.grid, args.ablation, args.tag)
        with args.out.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(f"{shape} n={n} q={q} {budget} W={width}: cover {row['coverage']} width {row['mean_width']}", flush=True)


if __name__ == "__main__":
    main()
