"""The gap guard of rank-quantile's tilt (docs/methods/rank-quantile.md): exact expected widths, capped over uncapped.

For each cell (shape, bounds, n, q, budget) one dataset is drawn from the shapes of
``scripts/rank_quantile_study.py`` and, at the method's default grid (``suggested_grid_size``), the exact
law of each end is computed from its distances (no sampling), for the tilt cap ``16 / rate + c sds`` at
each ``c`` of ``--sds`` and without the cap (the share of the depth alone). Prints one line per cell and,
per shape, the geometric mean and the range of capped / uncapped (cells whose uncapped width is below 1e-6
are left out of the summary: a ratio of two zero widths).

    python scripts/rank_quantile_tilt_cap.py                 # about 10 minutes on one core
    python scripts/rank_quantile_tilt_cap.py --shapes poisson --sds 2,4,8
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import rank_quantile_study as study  # noqa: E402

from privframe_std.methods.rank_quantile import core  # noqa: E402

UNCAPPED = 1e12


def _law(counts: np.ndarray, plan: core.RankPlan, side: str) -> np.ndarray:
    end = plan.lower if side == "lower" else plan.upper
    size = plan.grid_size + 1
    if end.trivial:
        law = np.zeros(size)
        law[0 if side == "lower" else -1] = 1.0
        return law
    return core._end_pmf(core.end_distances(counts, plan, side), end.rate)


def expected_width(counts: np.ndarray, plan: core.RankPlan, low: float, high: float) -> float:
    """``E |hi - lo|`` for independent ends, exactly (cumulative sums over the grid)."""
    lower, upper = _law(counts, plan, "lower"), _law(counts, plan, "upper")
    points = core.grid_edges(low, high, plan.grid_size)
    above_p = lower.sum() - np.cumsum(lower)  # P(lower > point j)
    above_x = (lower * points).sum() - np.cumsum(lower * points)
    crossed = float(upper @ (above_x - points * above_p))  # E (lower - upper)+
    return float(upper @ points - lower @ points + 2.0 * crossed)


def _bounds(shape: str, width: int) -> tuple[float, float]:
    _, _, scale, kind = study.SHAPES[shape]
    if kind == "poisson" and width == 3:
        return 0.0, 3 * scale  # 3 sd: [0, 5.2], as in the method map
    return study.bounds(shape, width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="normal,lognormal,bimodal,poisson,ties")
    parser.add_argument("--sds", default="4", help="comma-separated cap coefficients c (16 / rate + c sds)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sds = [float(v) for v in args.sds.split(",")]
    rng = np.random.default_rng(args.seed)
    ratios: dict[tuple[str, float], list[float]] = {}
    for shape in args.shapes.split(","):
        sampler = study.SHAPES[shape][0]
        for width in (3, 10, 50):
            low, high = _bounds(shape, width)
            for n in (500, 2000, 10000):
                x = np.clip(sampler(rng, n), low, high)
                for q in (0.1, 0.5, 0.9):
                    for name in ("pure1", "gdp1", "approx5"):
                        budget = study.BUDGETS[name]
                        size = core.suggested_grid_size(n, budget, "pure")
                        counts = core.histogram(x, low, high, size)
                        widths = []
                        for rates, c in [(UNCAPPED, UNCAPPED), *((core.TILT_CAP_RATES, c) for c in sds)]:
                            saved = core.TILT_CAP_RATES, core.TILT_CAP_SDS
                            core.TILT_CAP_RATES, core.TILT_CAP_SDS = rates, c
                            core.plan.cache_clear()
                            try:
                                plan = core.plan(n, q, 0.95, budget, size, gdp_accounting="pure", variant="independent")
                                widths.append(expected_width(counts, plan, low, high))
                            except core.ConfigError:
                                widths.append(math.nan)
                            finally:
                                core.TILT_CAP_RATES, core.TILT_CAP_SDS = saved
                                core.plan.cache_clear()
                        base = widths[0]
                        cells = " ".join(
                            f"c{c:g}={w / base:.3f}" if base > 0 else f"c{c:g}: {w:.3g}"
                            for c, w in zip(sds, widths[1:], strict=True)
                        )
                        print(f"{shape} W={width} n={n} q={q} {name}: uncapped {base:.4g} {cells}", flush=True)
                        if base > 1e-6:
                            for c, w in zip(sds, widths[1:], strict=True):
                                ratios.setdefault((shape, c), []).append(max(w / base, 1e-4))
    for (shape, c), values in ratios.items():
        geo = math.exp(sum(map(math.log, values)) / len(values))
        spread = f"[{min(values):.4f}, {max(values):.3f}]"
        print(f"{shape}, c = {c:g}: {len(values)} cells, geometric mean {geo:.3f}, {spread}")


if __name__ == "__main__":
    main()
