"""``privframe experiment NAME|CONFIG``: the command-line front of :func:`privframe.experiments.run`."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from privframe.errors import ConfigError, PrivframeError
from privframe.experiments.config import builtin_names
from privframe.experiments.executors import EXECUTORS
from privframe.experiments.methodmap import update_page, write_method_map
from privframe.experiments.plots import matplotlib_available
from privframe.experiments.report import run_all, write_report
from privframe.experiments.runner import ExperimentResult, estimate, run
from privframe.experiments.trial import NOTE_PREFIX
from privframe.pipeline.methodmap import MethodMap

__all__ = ["DEFAULT_OUT", "add_parser", "command"]

DEFAULT_OUT = "experiment-results"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``experiment`` command to the subparsers of the ``privframe`` parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "experiment", help="run a Monte Carlo experiment (a built-in name, 'all', or a TOML/JSON config)"
    )
    p.add_argument(
        "experiment",
        metavar="NAME|CONFIG",
        help=f"built-in experiment ({', '.join(builtin_names())}), 'all', or a config file",
    )
    p.add_argument("--trials", type=int, help="Monte Carlo trials per cell (default: the config's)")
    p.add_argument(
        "--n", metavar="SIZES", help="comma-separated sample sizes, e.g. 500,2000 (default: the config's grid)"
    )
    p.add_argument("--methods", help="comma-separated method labels or names (their references are kept)")
    p.add_argument(
        "--budget", metavar="LEVELS", help="comma-separated budget level labels, e.g. mu=1 (default: all levels)"
    )
    p.add_argument("--seed", type=int, help="seed of the whole experiment (default: the config's)")
    p.add_argument(
        "--compare", metavar="LABEL", help="report paired width and coverage differences against this method label"
    )
    p.add_argument(
        "--common-random-numbers",
        action="store_true",
        default=None,
        help="every method of a trial shares the trial's data and resamples (paired comparisons)",
    )
    p.add_argument(
        "--variants", metavar="LABELS", help="comma-separated data variants to run (experiments with variants)"
    )
    p.add_argument(
        "--no-early-stop",
        dest="early_stop",
        action="store_false",
        default=None,
        help="run every trial of every cell even where the config stops cells that can no longer pass",
    )
    p.add_argument("--out", metavar="DIR", default=DEFAULT_OUT, help=f"output root directory (default: {DEFAULT_OUT})")
    p.add_argument(
        "--executor",
        choices=sorted(EXECUTORS),
        default=None,
        help="where cells run (default: serial, or processes when --workers is above 1)",
    )
    p.add_argument("--workers", type=int, help="processes or local Dask workers (default: the CPU count)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="address of a running Dask scheduler (with --executor dask)")
    p.add_argument("--resume", action="store_true", help="skip cells already saved under --out with the same settings")
    p.add_argument(
        "--saved-only",
        action="store_true",
        help="run nothing: tables (and --write-map) from the cells saved under --out so far (a partial result)",
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="run nothing but a short timing run: print the number of cells and the estimated cost",
    )
    p.add_argument("--report", metavar="FILE", help="then write the Markdown report of every run under --out")
    p.add_argument(
        "--write-map",
        metavar="FILE",
        help="then write the method map of the results (the data of method='auto') to FILE as JSON",
    )
    p.add_argument(
        "--merge",
        action="store_true",
        help="with --write-map: keep the map already in FILE and replace only the entries this run measured "
        "on every variant (a rerun of some --methods after a change to them; same seed, trials and levels)",
    )
    p.add_argument(
        "--update-page",
        metavar="PAGE",
        help="with --write-map: then rewrite the generated tables of PAGE (docs/choosing.md) from the map written",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    return p


def _list(value: str | None, name: str) -> list[str] | None:
    if value is None:
        return None
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ConfigError("expected a comma-separated list", path=name)
    return items


def _sizes(value: str | None) -> list[int] | None:
    items = _list(value, "n")
    if items is None:
        return None
    sizes = []
    for item in items:
        try:
            number = float(item)
        except ValueError:
            raise ConfigError("expected comma-separated integers", path="n") from None
        if not number.is_integer():
            raise ConfigError("expected comma-separated integers", path="n")
        sizes.append(int(number))
    return sizes


def _print(result: ExperimentResult, as_json: bool) -> None:
    if result.out is not None and not matplotlib_available() and not result.spec.variants:
        print(
            f"privframe: no {result.spec.name}.png written: plots need the plot extra "
            "(pip install 'privframe[plot]', which installs matplotlib)",
            file=sys.stderr,
        )
    if as_json:
        return
    print(f"{result.spec.name}: {result.spec.title}")
    print(result.table())
    if result.out is not None:
        plotted = matplotlib_available() and not result.spec.variants
        files = "results.json, results.csv" + (f", {result.spec.name}.png" if plotted else "")
        print(f"saved in {result.out} ({files}); reproduce with: {result.meta['command']}")
    print()


def _report_command(args: argparse.Namespace) -> str:
    words = ["privframe", "experiment", args.experiment, "--out", args.out]
    for flag in ("trials", "n", "methods", "budget", "variants", "seed", "executor", "workers", "scheduler"):
        value = getattr(args, flag)
        if value is not None and not (flag == "executor" and value == "serial"):
            words += [f"--{flag}", str(value)]
    if args.compare is not None:
        words += ["--compare", args.compare]
    if args.common_random_numbers:
        words.append("--common-random-numbers")
    if args.early_stop is False:
        words.append("--no-early-stop")
    if args.resume:
        words.append("--resume")
    words += ["--report", args.report]
    return shlex.join(words)


def _cell_failure(exc: Exception) -> int | None:
    """Print an error raised in a trial on one line naming the cell and trial; its exit status, or None.

    A ``PrivframeError`` is printed with its type and message (they never carry data) and gives status 2,
    as the ``privframe`` command's other errors do; any other exception with its type only (its message
    may quote data values) and status 1. Errors raised outside a trial return None (left to the caller).
    """
    notes = [note for note in getattr(exc, "__notes__", ()) if note.startswith(NOTE_PREFIX)]
    if not notes:
        return None
    if isinstance(exc, PrivframeError):
        print(f"privframe: error {notes[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(
        f"privframe: error {notes[0]}: {type(exc).__name__} (message withheld: it may quote data values; "
        "run the experiment with pf.experiments.run for the traceback)",
        file=sys.stderr,
    )
    return 1


def command(args: argparse.Namespace) -> int:
    """Run the ``experiment`` command; returns the exit status (130 when interrupted, 2 or 1 when a trial
    fails with an error other than a counted failure: see :func:`_cell_failure`)."""
    executor = args.executor
    if executor is None:
        executor = "processes" if args.workers is not None and args.workers > 1 else "serial"
    options: dict[str, Any] = {
        "trials": args.trials,
        "n": _sizes(args.n),
        "seed": args.seed,
        "out": args.out,
        "executor": executor,
        "workers": args.workers,
        "scheduler": args.scheduler,
        "resume": args.resume,
    }
    methods, budgets = _list(args.methods, "methods"), _list(args.budget, "budget")
    if args.update_page is not None and args.write_map is None:
        raise ConfigError("needs --write-map (the page's tables are made from the map written)", path="update-page")
    if args.merge and args.write_map is None:
        raise ConfigError("needs --write-map (the map to merge the run into)", path="merge")
    variants = _list(args.variants, "variants")
    if args.estimate:
        if args.experiment == "all":
            raise ConfigError("--estimate applies to one experiment, not 'all'", path="estimate")
        cost = estimate(
            args.experiment,
            trials=args.trials,
            n=options["n"],
            methods=methods,
            budgets=budgets,
            variants=variants,
        )
        print(cost.describe(workers=args.workers or 1))
        return 0
    results: list[ExperimentResult] = []
    try:
        if args.experiment == "all":
            if variants is not None or args.saved_only or args.early_stop is not None:
                raise ConfigError(
                    "--variants, --saved-only and --no-early-stop apply within one experiment, not with 'all'",
                    path="variants",
                )
            if methods is not None or budgets is not None or args.compare is not None:
                raise ConfigError(
                    "--methods, --budget and --compare apply within one experiment, not with 'all'", path="methods"
                )
            if args.write_map is not None:
                raise ConfigError("a method map is built from one experiment, not 'all'", path="write-map")
            results = run_all(on_result=lambda r: _print(r, args.json), **options)
        else:
            comparison = {"compare": args.compare, "common_random_numbers": args.common_random_numbers}
            selection = {"variants": variants, "early_stop": args.early_stop, "saved_only": args.saved_only}
            results = [run(args.experiment, methods=methods, budgets=budgets, **comparison, **selection, **options)]
            _print(results[0], args.json)
    except Exception as exc:
        status = _cell_failure(exc)
        if status is None:
            raise
        return status
    except KeyboardInterrupt:
        print(
            f"\nprivframe: interrupted; finished cells are saved under {args.out}; "
            "rerun the same command with --resume to skip them",
            file=sys.stderr,
        )
        return 130
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
    if args.write_map is not None:
        command = f"{results[0].meta['command']} --write-map {shlex.quote(args.write_map)}"
        if args.merge:
            command += " --merge"
        path = write_method_map(results[0], args.write_map, command=command, merge=args.merge)
        print(f"method map written to {path}", file=sys.stderr if args.json else sys.stdout)
        if args.update_page is not None:
            page = update_page(args.update_page, MethodMap.read(path))
            print(f"tables of {page} regenerated from it", file=sys.stderr if args.json else sys.stdout)
    if args.report is not None:
        path = write_report(Path(args.out), Path(args.report), command=_report_command(args))
        print(f"report written to {path}", file=sys.stderr if args.json else sys.stdout)
    return 0
