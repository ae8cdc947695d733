"""The reproduction report: every built-in experiment, run and written to ``docs/results.md``.

``privframe experiment all --out DIR --report docs/results.md`` runs each built-in experiment at its
report size (the size listed in ``docs/experiments.md``, unless the config's ``[experiment.report]``
table makes it smaller so it fits two cores; the report says which) and then writes one section per
experiment found under ``DIR``: the command and seed that reproduce it, its size, wall time, the table
and the figure.
"""

from __future__ import annotations

import datetime
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from privframe.experiments.config import builtin_names, load_experiment, report_names
from privframe.experiments.executors import Executor
from privframe.experiments.metrics import CellSummary
from privframe.experiments.output import markdown_table
from privframe.experiments.runner import ExperimentResult, run

__all__ = ["run_all", "write_report"]


def run_all(
    out: str | Path,
    *,
    names: Sequence[str] | None = None,
    trials: int | None = None,
    n: Sequence[int] | None = None,
    seed: int | None = None,
    executor: str | Executor = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress: bool | None = None,
    on_result: Callable[[ExperimentResult], None] | None = None,
) -> list[ExperimentResult]:
    """Run every built-in experiment of the report (or ``names``) at its report size into ``out/<name>``.

    The report's experiments are :func:`~privframe.experiments.config.report_names` (the method map is
    run on its own).

    ``trials`` and ``n`` override every experiment's size; without them each config's
    ``[experiment.report]`` table (or else its own size) is used.
    """
    results = []
    for name in names or report_names():
        spec = load_experiment(name)
        result = run(
            name,
            trials=trials if trials is not None else spec.report.get("trials"),
            n=n if n is not None else spec.report.get("n"),
            seed=seed,
            out=out,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            resume=resume,
            progress=progress,
        )
        if on_result is not None:
            on_result(result)
        results.append(result)
    return results


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def _size_note(meta: dict[str, Any]) -> str:
    smaller = []
    if meta["trials"] < meta["spec_trials"]:
        smaller.append(f"{meta['trials']} trials per cell instead of {meta['spec_trials']}")
    missing = [str(v) for v in meta["spec_n"] if v not in meta["n"]]
    if missing:
        smaller.append(f"without n = {', '.join(missing)}")
    if smaller:
        return "**run smaller than experiments.md**: " + "; ".join(smaller)
    return "full size (as in experiments.md)"


def _nonfinite(value: Any) -> Any:
    """Undo the JSON spelling of non-finite floats (``"inf"``, ``"-inf"``, ``"nan"``)."""
    return float(value) if value in ("inf", "-inf", "nan") else value


def _section(meta: dict[str, Any], figure: str | None) -> list[str]:
    rows = [CellSummary(**{k: _nonfinite(v) for k, v in row.items()}) for row in meta["rows"]]
    lines = [f"## {meta['experiment']}: {meta['title']}", ""]
    if meta.get("description"):
        lines += [meta["description"].strip(), ""]
    lines += [
        f"- command: `{meta['command']}`",
        f"- seed {meta['seed']}; {meta['trials']} trials per cell; n = {', '.join(str(v) for v in meta['n'])}; "
        + _size_note(meta),
        f"- wall time {_duration(meta['wall_seconds'])} with the {meta['executor']} executor "
        f"({_duration(meta['cell_seconds'])} of cell time; {meta['resumed_cells']} of {meta['cells']} cells "
        f"resumed from disk); privframe {meta['privframe_version']}, finished {meta['finished_at']}",
        "",
        markdown_table(rows),
        "",
    ]
    refused = meta.get("refused") or []
    if refused:
        lines += ["Refused: " + "; ".join(_refusal_text(r) for r in refused), ""]
    if figure is not None:
        lines += [f"![{meta['experiment']}: coverage and width against n]({figure})", ""]
    return lines


def write_report(root: str | Path, path: str | Path, *, command: str) -> Path:
    """Write the Markdown report of every ``results.json`` under ``root`` to ``path``.

    Figures are copied next to the report (``<path stem>/<name>.png``). Built-in experiments come first,
    in the order of ``docs/experiments.md``; built-ins without results are listed as not run. A
    ``<path stem>/performance.txt`` (the benchmark ratios as Markdown, see ``tests/benchmarks/conftest.py``) is
    included as the last section.
    """
    root, path = Path(root), Path(path)
    found = {p.parent.name: p for p in sorted(root.glob("*/results.json"))}
    order = [name for name in builtin_names() if name in found] + sorted(set(found) - set(builtin_names()))
    figures = path.parent / path.stem
    lines = [
        "# Reproduction report",
        "",
        "<!-- Generated file: do not edit. Regenerate it with the command below whenever a method changes. -->",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()}. Every experiment of experiments.md "
        "is a built-in config (`privframe experiment NAME`); each section gives the command and seed that "
        "reproduce its table exactly (on any executor), and says where a run was smaller than the "
        "specification. See [Running experiments](experiments.md) for the column definitions.",
        "",
        "Columns: coverage of the true value with its Monte Carlo standard error, mean width (2 x radius "
        "for balls), width relative to the non-private reference of the same construction on the same data, "
        "median wall time per call, failure rate (sampler rejections, PTR failures), and the guarantee in "
        "its native unit and as (epsilon, delta).",
        "",
    ]
    not_run = [name for name in report_names() if name not in found]
    if not_run:
        lines += [f"Not run yet: {', '.join(not_run)}.", ""]
    for name in order:
        meta = json.loads(found[name].read_text(encoding="utf-8"))
        png = found[name].parent / f"{name}.png"
        figure = None
        if png.is_file():
            figures.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, figures / png.name)
            figure = f"{figures.name}/{png.name}"
        lines += _section(meta, figure)
    performance = figures / "performance.txt"
    if performance.is_file():  # written by the benchmark suite's --ratios-md (CONTRIBUTING.md, Benchmarks)
        lines += ["## Performance", "", performance.read_text(encoding="utf-8").strip(), ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def _refusal_text(refusal: Mapping[str, Any]) -> str:
    where = refusal["budget"] if refusal.get("n") is None else f"{refusal['budget']}, n = {refusal['n']}"
    return f"{refusal['method']} at {where} ({refusal['reason']})"
