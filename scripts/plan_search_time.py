"""How long the private-variance plan search takes, in fresh processes, optionally against another source tree.

Each measurement is one fresh interpreter that imports privframe and the scipy modules the search uses
(``scipy.special``, ``scipy.optimize``, ``scipy.interpolate``), then times ``core.plan(n, (0, 1), budget)``
alone, with the on-disk plan cache off (``PRIVFRAME_PLAN_CACHE=0``). With ``--against TREE`` (a checkout of
privframe, e.g. ``git worktree add /tmp/old <commit>``) the two trees alternate within every round, so both
see the same machine, and the table gives their medians and the ratio. The plans themselves are compared
too: a change meant to be a pure speed-up must print ``same`` in the last column.

usage: python scripts/plan_search_time.py [--n 100,1000,10000] [--budgets "PureDP(1.0);GDP(1.0)"]
       [--rounds 3] [--against TREE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]

_CODE = """
import time
import privframe as pf
import scipy.special, scipy.optimize, scipy.interpolate
from privframe_std.methods.private_variance import core
start = time.perf_counter()
p = core.plan({n}, (0.0, 1.0), pf.{budget})
print(time.perf_counter() - start, p.spelling, p.share.hex(), p.inflation.hex(), p.criterion.hex())
"""

_BUDGETS = "PureDP(1.0);ApproxDP(5.0, 1e-6);GDP(1.0)"


def _measure(tree: Path, n: int, budget: str) -> tuple[float, str]:
    """(seconds, the plan's searched numbers) from one fresh process on ``tree``'s sources."""
    env = dict(os.environ, PRIVFRAME_PLAN_CACHE="0", PYTHONPATH=f"{tree}{os.pathsep}{tree / 'plugins'}")
    run = subprocess.run(
        [sys.executable, "-c", _CODE.format(n=n, budget=budget)], check=True, env=env, capture_output=True, text=True
    )
    seconds, *plan = run.stdout.split()
    return float(seconds), " ".join(plan)


def main(argv: list[str] | None = None) -> None:
    """Print one Markdown row per (n, budget)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="100,1000,10000", help="comma-separated record counts")
    parser.add_argument("--budgets", default=_BUDGETS, help=f"semicolon-separated budgets (default {_BUDGETS!r})")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per tree and cell (default 3)")
    parser.add_argument("--against", type=Path, help="another privframe checkout to time beside this one")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.against is not None and not (args.against / "privframe").is_dir():
        parser.error("--against must be a privframe checkout (a folder holding privframe/ and plugins/)")
    trees = {"this": _ROOT} | ({"against": args.against.resolve()} if args.against is not None else {})
    columns = ["n", "budget", *(f"{name} (s)" for name in trees)]
    columns += ["this / against", "plans"] if len(trees) > 1 else []
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    for n in (int(value) for value in args.n.split(",")):
        for budget in (value.strip() for value in args.budgets.split(";")):
            times: dict[str, list[float]] = {name: [] for name in trees}
            plans: dict[str, str] = {}
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    seconds, plans[name] = _measure(tree, n, budget)
                    times[name].append(seconds)
            medians = {name: statistics.median(values) for name, values in times.items()}
            row = f"| {n} | {budget} | " + " | ".join(f"{medians[name]:.2f}" for name in trees)
            if len(trees) > 1:
                same = "same" if plans["this"] == plans["against"] else "DIFFERENT"
                row += f" | {medians['this'] / medians['against']:.2f} | {same}"
            print(row + " |", flush=True)


if __name__ == "__main__":
    main()
