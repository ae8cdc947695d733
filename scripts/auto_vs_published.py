"""``method="auto"`` against the published constructions, on the method map's own datasets (docs/choosing.md).

For every cell of a method map (statistic, n, budget level) this replays the choice ``method="auto"``
makes there (``privframe.experiments.auto_choice``: public inputs only) and reads that method's measured
coverage and mean width on each data variant from the map. On the **same datasets** (the map experiment's
data seeds: trial t of variant v at size n is the dataset every method of the map saw) it runs the
published construction a statistician would pick instead, test-only reimplementations in
``tests/baselines``:

- the mean: NoisyVar (Du, Foot, Moniot, Bray and Groce 2020), pure eps-DP with Laplace noise;
- quantiles: the exponential-mechanism interval of Drechsler, Globus-Harris, McMillan, Sarathy and Smith
  (2022), pure eps-DP, granularity half a cell of the grid ``rank-quantile`` uses at that n and budget
  (``suggested_grid_size``), the rule of ``docs/methods/rank-quantile.md``'s study;

each at the same or a stricter guarantee than the cell's budget: pure eps for ``PureDP(eps)`` and for
``ApproxDP(eps, delta)``, and for ``GDP(mu)`` the pure eps whose mechanism is mu-GDP
(``gdp_pure_epsilon``; for the quantile's two selections, the largest per-run eps whose two pure runs
compose to mu-GDP). Widths are after intersecting with the bounds; the ratio is auto's mean width over the
baseline's, per variant. Prints Markdown tables and a summary per statistic, and the spelling check of the
mean (auto's width at ``ApproxDP(eps, 1e-6)`` over its width at ``PureDP(eps)``, per variant, on the same
datasets).

usage: python scripts/auto_vs_published.py [--map PATH] [--trials T] [--statistics mean,median,...] [--n 100,500]
       [--shapes-over R] [--sim-draws D]

``--sim-draws D`` runs NoisyVar's SIM step with D draws instead of the paper's 1000: its interpolated
sample quantiles of 1000 draws sit about 0.3% inside the exact ones, which is the whole of auto's 1.003 to
1.005 at n >= 10 000; with D = 20 000 the baseline is the exact construction to 0.02%.

Cells where auto's choice was not measured on every variant are left out.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from baselines import drechsler  # noqa: E402
from baselines.noisyvar import SIM_DRAWS, noisyvar_interval  # noqa: E402

import privframe as pf  # noqa: E402
from privframe.experiments import auto_choice, load_experiment  # noqa: E402
from privframe.experiments.cells import data_seed, expand  # noqa: E402
from privframe.experiments.generators import make_generator  # noqa: E402
from privframe.pipeline.methodmap import MapCell, MethodMap  # noqa: E402
from privframe.privacy import accounting  # noqa: E402
from privframe.privacy.budgets import budget_from_table  # noqa: E402
from privframe_std.methods.rank_quantile.core import suggested_grid_size  # noqa: E402


def pure_epsilon(budget: pf.Budget) -> float:
    """NoisyVar's pure eps at the same or a stricter guarantee than ``budget``."""
    if isinstance(budget, pf.GDP):
        return accounting.gdp_pure_epsilon(budget.mu)
    return float(budget.epsilon)


class Datasets:
    """The map experiment's datasets, generated once per (n, variant) and kept for every statistic."""

    def __init__(self, experiment: str) -> None:
        self.spec = load_experiment(experiment)
        self.tasks = {(t.cell.method, t.cell.n, t.cell.variant): t for t in expand(self.spec)}
        self._cache: dict[tuple[int, str], tuple[np.ndarray, tuple[float, float]]] = {}

    def truth(self, reference: str, n: int, variant: str) -> float:
        return float(self.tasks[(reference, n, variant)].truth)

    def get(self, reference: str, n: int, variant: str, trials: int) -> tuple[np.ndarray, tuple[float, float]]:
        key = (n, variant)
        if key not in self._cache or self._cache[key][0].shape[0] < trials:
            task = self.tasks[(reference, n, variant)]
            options = {k: v for k, v in task.data.items() if k != "generator"}
            generator = make_generator(task.data["generator"], options, "experiment.data")
            rows = [
                np.asarray(
                    generator.sample(n, np.random.default_rng(data_seed(task.seed, task.experiment, n, t, variant))),
                    dtype=float,
                )
                for t in range(trials)
            ]
            low, high = generator.record_bounds()  # type: ignore[attr-defined]
            self._cache = {k: v for k, v in self._cache.items() if k[0] == n}  # one n at a time in memory
            self._cache[key] = (np.stack(rows), (float(low), float(high)))
        data, bounds = self._cache[key]
        return data[:trials], bounds


def baseline(
    kind: str,
    data: np.ndarray,
    bounds: tuple[float, float],
    budget: pf.Budget,
    q: float,
    nominal: float,
    seed: Any,
    sim_draws: int = SIM_DRAWS,
) -> tuple[np.ndarray, np.ndarray]:
    """The published construction's interval on every row of ``data`` (the mean's unclamped, the quantile's
    within the bounds); ``sim_draws`` is NoisyVar's SIM size."""
    low, high = bounds
    rng = np.random.default_rng(seed)
    clipped = np.clip(data, low, high)
    if kind == "mean":
        return noisyvar_interval(clipped, bounds, pure_epsilon(budget), rng, nominal, draws=sim_draws)
    n = data.shape[1]
    eps_run = drechsler.run_epsilon(budget)
    granularity = (high - low) / (2.0 * suggested_grid_size(n, budget, "pure"))  # the method's default grid
    ranks = drechsler.calibrated_ranks(n, q, nominal, eps_run, low, high, granularity)
    ends = [drechsler.drechsler_interval(row, low, high, eps_run, granularity, ranks, rng) for row in clipped]
    return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])


def matched_width(lo: np.ndarray, hi: np.ndarray, truth: float, bounds: tuple[float, float], nominal: float) -> float:
    """The mean width of the intervals scaled about their centres by the one factor f that makes them cover
    ``truth`` in a ``nominal`` share of the trials (an oracle: f is read off the truth), within the bounds.

    NoisyVar's interval rests on a normal limit and under-covers at small n on skewed shapes; this is what it
    would cost at the nominal coverage on that shape, the fair width to compare a valid interval with.
    """
    centre, half = (lo + hi) / 2.0, (hi - lo) / 2.0
    needed = np.sort(np.abs(centre - truth) / half)  # trial t covers iff f >= needed[t]
    factor = float(needed[math.ceil(nominal * needed.size) - 1])
    scaled_lo = np.maximum(centre - factor * half, bounds[0])
    scaled_hi = np.minimum(centre + factor * half, bounds[1])
    return float(np.mean(scaled_hi - scaled_lo))


def quantile_level(table: Mapping[str, Any]) -> tuple[str, float] | None:
    """("mean", nan) or ("quantile", q) for the statistics the baselines cover; None for the others."""
    name = table["name"]
    if name == "mean":
        return "mean", math.nan
    if name == "median":
        return "quantile", 0.5
    if name == "quantile":
        return "quantile", float(table["options"]["q"])
    return None


def reference_label(method_map: MethodMap, cell: MapCell) -> str:
    """The label of the cell's non-private reference in the experiment (``mean/bootstrap``, ``q90/...``)."""
    label = cell.entries[0].label
    return label.split("/")[0] + "/bootstrap"


def compare_cell(
    method_map: MethodMap, cell: MapCell, data: Datasets, trials: int | None, sim_draws: int = SIM_DRAWS
) -> dict[str, Any]:
    """auto's entry and the baseline on every variant of one map cell."""
    kind, q = quantile_level(method_map.statistics[cell.statistic])  # type: ignore[misc]
    budget = budget_from_table(cell.budget_table)
    chosen = auto_choice(method_map, cell)
    reference = reference_label(method_map, cell)
    rows = []
    for variant in cell.variants:
        measured = None if chosen is None else next(m for m in chosen.measurements if m.variant == variant)
        count = trials or (measured.trials if measured is not None else method_map_trials(method_map))
        x, bounds = data.get(reference, cell.n, variant, count)
        seed = np.random.SeedSequence([29, cell.n, len(variant), *map(ord, variant + cell.budget + cell.statistic)])
        lo, hi = baseline(kind, x, bounds, budget, q, cell.nominal, seed, sim_draws)
        truth = data.truth(reference, cell.n, variant)
        matched = None if kind != "mean" else matched_width(lo, hi, truth, bounds, cell.nominal)
        lo, hi = np.maximum(lo, bounds[0]), np.minimum(hi, bounds[1])
        covered = (lo <= truth) & (truth <= hi)
        width_range = bounds[1] - bounds[0]
        rows.append(
            {
                "variant": variant,
                "auto_coverage": None if measured is None else measured.coverage,
                "auto_width": None if measured is None else measured.mean_width,
                "baseline_coverage": float(covered.mean()),
                "baseline_width": float(np.mean(hi - lo)),
                "matched_width": matched,
                "range": width_range,
            }
        )
    return {"cell": cell, "method": None if chosen is None else chosen.name, "rows": rows}


def method_map_trials(method_map: MethodMap) -> int:
    return int(method_map.to_dict()["trials"])


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def report(results: list[dict[str, Any]], nominal: float, trials: int) -> Iterator[str]:
    """Markdown: one table per statistic, then its summary."""
    se = math.sqrt(nominal * (1 - nominal) / trials)
    by_statistic: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_statistic.setdefault(result["cell"].statistic, []).append(result)
    for statistic, cells in by_statistic.items():
        yield f"\n### {statistic}\n"
        has_matched = any(r["matched_width"] is not None for c in cells for r in c["rows"])
        yield (
            "| n | budget | auto runs | auto min coverage | baseline min coverage | width auto / baseline: "
            "median [min, max] | whole range where the baseline < half |"
            + (" auto / baseline at nominal coverage: median [min, max] |" if has_matched else "")
        )
        yield "|---|---|---|---|---|---|---|" + ("---|" if has_matched else "")
        medians: list[float] = []
        matched_medians: list[float] = []
        matched_worst: list[float] = []
        worst: list[float] = []
        whole = 0
        for result in cells:
            cell = result["cell"]
            rows = result["rows"]
            ratios = [r["auto_width"] / r["baseline_width"] for r in rows if r["auto_width"] is not None]
            flags = sum(
                1
                for r in rows
                if r["auto_width"] is not None
                and r["auto_width"] >= 0.99 * r["range"]
                and r["baseline_width"] < 0.5 * r["range"]
            )
            whole += flags
            auto_cov = [r["auto_coverage"] for r in rows if r["auto_coverage"] is not None]
            if ratios:
                medians.append(float(np.median(ratios)))
                worst.append(max(ratios))
            fair = [
                r["auto_width"] / r["matched_width"]
                for r in rows
                if r["auto_width"] is not None and r["matched_width"] is not None
            ]
            if fair:
                matched_medians.append(float(np.median(fair)))
                matched_worst.append(max(fair))
            extra = f" {_fmt(float(np.median(fair)))} [{_fmt(min(fair))}, {_fmt(max(fair))}] |" if fair else ""
            yield (
                "| "
                + " | ".join(
                    [
                        str(cell.n),
                        cell.budget,
                        result["method"] or "refuses",
                        _fmt(min(auto_cov) if auto_cov else None, 3),
                        _fmt(min(r["baseline_coverage"] for r in rows), 3),
                        f"{_fmt(float(np.median(ratios)))} [{_fmt(min(ratios))}, {_fmt(max(ratios))}]"
                        if ratios
                        else "-",
                        str(flags),
                    ]
                )
                + " |"
                + extra
            )
        if medians:
            narrower = sum(m <= 1.0 for m in medians)
            within = sum(m <= 1.01 for m in medians)
            yield (
                f"\n{statistic}: auto's median width ratio <= 1 in {narrower} of {len(medians)} cells (<= 1.01 in "
                f"{within}); median of the "
                f"cells' medians {np.median(medians):.2f}, largest per-variant ratio {max(worst):.2f}; "
                f"whole-range intervals where the baseline is under half the range: {whole}; "
                f"2-SE line for coverage {nominal - 2 * se:.3f}."
            )
        if matched_medians:
            yield (
                f"{statistic}, against the baseline scaled to nominal coverage on each shape (an oracle factor read "
                f"off the truth): auto's median ratio <= 1 in {sum(m <= 1.0 for m in matched_medians)} of "
                f"{len(matched_medians)} cells; median of the cells' medians {np.median(matched_medians):.2f}, "
                f"largest per-variant ratio {max(matched_worst):.2f}."
            )


def spelling(method_map: MethodMap) -> Iterator[str]:
    """auto's mean width at ApproxDP(eps, delta) over PureDP(eps), per variant, from the map (same datasets)."""
    cells = {(c.statistic, c.n, c.budget): c for c in method_map.cells}
    pairs = [("eps=1", "pure-eps=1")]
    yield "\n### The spelling of a budget (the mean): auto's width at (eps, 1e-6) over pure eps\n"
    yield "| n | (eps, delta) / pure | auto runs | width ratio: median [min, max] |"
    yield "|---|---|---|---|"
    for (statistic, n, label), cell in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if method_map.statistics[statistic]["name"] != "mean":
            continue
        for approx, pure in pairs:
            if label != approx or (statistic, n, pure) not in cells:
                continue
            a, p = auto_choice(method_map, cell), auto_choice(method_map, cells[(statistic, n, pure)])
            if a is None or p is None:
                continue
            ratios = [
                ma.mean_width / mp.mean_width
                for ma in a.measurements
                for mp in p.measurements
                if ma.variant == mp.variant and ma.mean_width and mp.mean_width
            ]
            yield (
                f"| {n} | {approx} / {pure} | {a.name} / {p.name} | "
                f"{np.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}] |"
            )


def wide_shapes(results: list[dict[str, Any]], over: float) -> Iterator[str]:
    """The shapes on which auto's mean width exceeds ``over`` times the baseline's, as a Markdown table."""
    yield f"\n### shapes where auto is more than {over:g}x the baseline's width\n"
    yield (
        "| statistic | n | budget | shape | auto coverage | baseline coverage | auto width | baseline width | ratio "
        "| baseline at nominal coverage |"
    )
    yield "|---|---|---|---|---|---|---|---|---|---|"
    for result in results:
        cell = result["cell"]
        for row in result["rows"]:
            if row["auto_width"] is None or not row["auto_width"] > over * row["baseline_width"]:
                continue
            yield (
                f"| {cell.statistic} | {cell.n} | {cell.budget} | {row['variant']} | {_fmt(row['auto_coverage'], 3)} | "
                f"{_fmt(row['baseline_coverage'], 3)} | {row['auto_width']:.4g} | {row['baseline_width']:.4g} | "
                f"{row['auto_width'] / row['baseline_width']:.2f} | "
                f"{'-' if row['matched_width'] is None else format(row['matched_width'], '.4g')} |"
            )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--map", type=Path, default=ROOT / "privframe" / "maps" / "method-map.json")
    parser.add_argument("--trials", type=int, default=None, help="the first T trials (default: the map's)")
    parser.add_argument("--statistics", default=None, help="comma-separated statistic names, e.g. mean,median")
    parser.add_argument("--n", default=None, help="comma-separated sample sizes (default: every n of the map)")
    parser.add_argument(
        "--shapes-over",
        type=float,
        default=None,
        metavar="R",
        help="also list every shape where auto's width over the baseline's exceeds R, with both coverages",
    )
    parser.add_argument(
        "--sim-draws",
        type=int,
        default=SIM_DRAWS,
        metavar="D",
        help=f"draws of NoisyVar's SIM step (default the paper's {SIM_DRAWS}; more approach its exact quantiles)",
    )
    args = parser.parse_args(argv)
    if args.sim_draws < 2:
        parser.error("--sim-draws must be at least 2")
    method_map = MethodMap.read(args.map)
    payload = method_map.to_dict()
    data = Datasets(payload["experiment"])
    wanted = None if args.statistics is None else set(args.statistics.split(","))
    sizes = None if args.n is None else {int(v) for v in args.n.split(",")}
    results = []
    started = time.perf_counter()
    cells = sorted(method_map.cells, key=lambda c: (c.n, c.statistic))  # one n's datasets in memory at a time
    for cell in cells:
        table = method_map.statistics[cell.statistic]
        if quantile_level(table) is None or (wanted is not None and table["name"] not in wanted):
            continue
        if sizes is not None and cell.n not in sizes:
            continue
        chosen = auto_choice(method_map, cell)
        if chosen is None or chosen.missing:  # auto's choice not measured on every variant: nothing to compare
            continue
        results.append(compare_cell(method_map, cell, data, args.trials, args.sim_draws))
    results.sort(key=lambda r: (r["cell"].statistic, r["cell"].n, r["cell"].budget))
    trials = args.trials or method_map_trials(method_map)
    nominal = results[0]["cell"].nominal if results else 0.9
    print(
        f"map {args.map.name}: experiment {payload['experiment']}, {trials} trials a variant, nominal {nominal}"
        + ("" if args.sim_draws == SIM_DRAWS else f"; NoisyVar's SIM step with {args.sim_draws} draws")
    )
    for line in report(results, nominal, trials):
        print(line)
    for line in spelling(method_map):
        print(line)
    if args.shapes_over is not None:
        for line in wide_shapes(results, args.shapes_over):
            print(line)
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
