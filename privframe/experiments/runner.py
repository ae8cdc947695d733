"""The experiment runner behind ``pf.experiments.run`` and ``privframe experiment``."""

from __future__ import annotations

import datetime
import shlex
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from privframe._progress import Progress
from privframe.errors import ConfigError
from privframe.experiments.cells import NON_PRIVATE, CellTask, expand
from privframe.experiments.config import ExperimentSpec, load_experiment
from privframe.experiments.executors import Executor, make_executor
from privframe.experiments.metrics import CellSummary, describe_pipeline, summarise
from privframe.experiments.output import format_table, write_csv
from privframe.experiments.plots import plot_experiment
from privframe.experiments.store import CellStore, write_json_atomic
from privframe.experiments.trial import CellOutcome, run_cell

__all__ = ["ExperimentResult", "Refusal", "run"]

ExperimentLike = str | Path | Mapping[str, Any] | ExperimentSpec


@attrs.frozen
class Refusal:
    """A method that refused a budget level when its pipeline was built, or the design at one n
    (``record_refused`` experiments).

    Attributes
    ----------
    method : str
        Method label.
    method_name : str
        The registered method name.
    statistic : str
        The registered statistic name.
    budget : str
        Budget level label.
    reason : str
        The refusal's message (public: it names a rule, never data).
    n : int or None
        The sample size refused, or None when the level is refused at every n.
    """

    method: str
    method_name: str
    statistic: str
    budget: str
    reason: str
    n: int | None = None

    def describe(self) -> str:
        """``method at level[, n = N] (reason)``, for tables and reports."""
        where = self.budget if self.n is None else f"{self.budget}, n = {self.n}"
        return f"{self.method} at {where} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        """Plain values."""
        return attrs.asdict(self)


@attrs.frozen
class ExperimentResult:
    """The table of one experiment run, with its settings and the raw trial records.

    Attributes
    ----------
    spec : ExperimentSpec
        The settings actually run (after overrides).
    rows : tuple of CellSummary
        One per cell, in table order (budget level, method, n).
    outcomes : mapping
        Trial records per cell key.
    meta : mapping
        Command, seed, sizes, executor, wall time, resumed cells, versions.
    out : Path or None
        The experiment's output directory, when results were written.
    """

    spec: ExperimentSpec
    rows: tuple[CellSummary, ...]
    outcomes: Mapping[str, CellOutcome] = attrs.field(repr=False)
    meta: Mapping[str, Any]
    out: Path | None = None
    refused: tuple[Refusal, ...] = ()

    def table(self) -> str:
        """The plain-text table printed by the CLI, then one line per refused method and level."""
        lines = [format_table(self.rows)]
        if self.spec.compare is not None:
            lines.append(
                f"Δwidth, Δcov: paired differences method - {self.spec.compare} over the trials in which "
                "both released, ± 1 SE"
            )
        lines += [f"refused: {r.describe()}" for r in self.refused]
        return "\n".join(lines)

    def comparable_rows(self) -> list[dict[str, Any]]:
        """Rows without timing columns: identical for the same seed on every executor."""
        return [row.comparable() for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        """Settings and rows as plain values (the content of ``results.json``)."""
        return {
            **self.meta,
            "rows": [row.to_dict() for row in self.rows],
            "refused": [refusal.to_dict() for refusal in self.refused],
        }


def _csv(values: Sequence[object]) -> str:
    return ",".join(str(v) for v in values)


def equivalent_command(
    spec: ExperimentSpec, base: ExperimentSpec, executor: str, workers: int | None, source: str
) -> str:
    """The ``privframe experiment`` command that reproduces this table (any executor gives the same)."""
    words = ["privframe", "experiment", source, "--trials", str(spec.trials), "--n", _csv(spec.n)]
    words += ["--seed", str(spec.seed)]
    if spec.labels() != base.labels():
        words += ["--methods", _csv(spec.labels())]
    levels = [level.label for level in spec.levels]
    if levels != [level.label for level in base.levels]:
        words += ["--budget", _csv(levels)]
    if spec.compare is not None and spec.compare != base.compare:
        words += ["--compare", spec.compare]
    if spec.common_random_numbers and not base.common_random_numbers:
        words.append("--common-random-numbers")
    if executor != "serial":
        words += ["--executor", executor]
        if workers is not None:
            words += ["--workers", str(workers)]
    return shlex.join(words)


def _rows(spec: ExperimentSpec, tasks: list[CellTask], outcomes: Mapping[str, CellOutcome]) -> list[CellSummary]:
    by_cell = {(t.cell.method, t.cell.budget, t.cell.n): t for t in tasks}

    def partner(label: str | None, task: CellTask) -> CellOutcome | None:
        """The outcome of ``label``'s cell at this n: at this budget level, or its non-private cell."""
        if label is None:
            return None
        budget = task.cell.budget if spec.method(label).budget is not None else NON_PRIVATE
        other = by_cell.get((label, budget, task.cell.n))
        return outcomes.get(other.cell.key) if other is not None else None

    rows = []
    for task in tasks:
        ref_outcome = partner(spec.method(task.cell.method).reference, task)
        baseline = partner(spec.compare, task) if task.cell.method != spec.compare else None
        rows.append(
            summarise(
                task,
                outcomes[task.cell.key],
                ref_outcome,
                spec.oracle(task.cell.n),
                baseline=baseline,
                pipeline=describe_pipeline(task),
            )
        )
    return rows


def _nominal(spec: ExperimentSpec) -> float | None:
    levels = Counter(float(m.pipeline.get("confidence", 0.9)) for m in spec.methods)
    return levels.most_common(1)[0][0] if levels else None


def run(
    experiment: ExperimentLike,
    *,
    trials: int | None = None,
    n: Sequence[int] | None = None,
    methods: Sequence[str] | None = None,
    budgets: Sequence[str] | None = None,
    seed: int | None = None,
    compare: str | None = None,
    common_random_numbers: bool | None = None,
    out: str | Path | None = None,
    executor: str | Executor = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress: bool | None = None,
    on_cell: Callable[[CellOutcome], None] | None = None,
) -> ExperimentResult:
    """Run an experiment: Monte Carlo trials of its pipelines over its grid.

    Parameters
    ----------
    experiment : str, Path, mapping or ExperimentSpec
        A built-in name (``pf.experiments.builtin_names()``), a ``.toml``/``.json`` config, or a mapping.
    trials, n, methods, budgets, seed : optional
        Overrides: trials per cell, the n grid, method labels or names (their references are kept),
        budget level labels, the seed.
    compare, common_random_numbers : optional
        Overrides of the config's ``compare`` (a method label: paired differences of every method against
        it) and ``common_random_numbers`` (every method of a trial shares the run seed).
    out : str or Path, optional
        Output root: each finished cell is saved at once under ``out/<name>/cells/``, and
        ``results.json``, ``results.csv`` and (with the ``plot`` extra) ``<name>.png`` are written at
        the end. Without it nothing is written.
    executor : {"serial", "processes", "dask"} or an executor object
        Where cells run; the table does not depend on it.
    workers : int, optional
        Processes or local Dask workers (default: the CPU count).
    scheduler : str, optional
        A Dask scheduler address (``executor="dask"`` only); default a local cluster.
    resume : bool
        Skip cells already saved under ``out`` with identical settings.
    progress : bool, optional
        Draw a progress bar on standard error; default only when it is a terminal.
    on_cell : callable, optional
        Called with each newly finished cell after it is saved (an exception here stops the run,
        leaving the finished cells on disk).

    Returns
    -------
    ExperimentResult

    Examples
    --------
    >>> import privframe as pf
    >>> res = pf.experiments.run("seed1-mean", trials=3, n=[400], methods=["cr-gs-wor"], budgets=["mu=1"])
    >>> [(row.method, row.n, row.trials) for row in res.rows]
    [('cr-gs-wor', 400, 3), ('subsampling-wor', 400, 3)]
    """
    from privframe import __version__

    started = time.perf_counter()
    base = load_experiment(experiment)
    spec = base.with_overrides(
        trials=trials,
        n=n,
        methods=methods,
        budgets=budgets,
        seed=seed,
        compare=compare,
        common_random_numbers=common_random_numbers,
    )
    spec.validate()
    runner = make_executor(executor, workers=workers, scheduler=scheduler)
    if resume and out is None:
        raise ConfigError("needs an output directory (out)", path="resume")
    directory = None if out is None else Path(out) / spec.name
    store = None if directory is None else CellStore(directory, __version__)
    tasks = expand(spec)
    refused = tuple(
        Refusal(label, spec.method(label).method_name, spec.method(label).statistic_name, level, reason)
        for (label, level), reason in spec.refusals().items()
    ) + tuple(
        Refusal(label, spec.method(label).method_name, spec.method(label).statistic_name, level, reason, n)
        for (label, level, n), reason in spec.size_refusals().items()
    )
    outcomes: dict[str, CellOutcome] = {}
    if resume and store is not None:
        for task in tasks:
            saved = store.load(task)
            if saved is not None:
                outcomes[task.cell.key] = saved
    resumed = len(outcomes)
    pending = [t for t in tasks if t.cell.key not in outcomes]
    by_key = {t.cell.key: t for t in tasks}
    bar = Progress(len(tasks), spec.name, enabled=progress)
    bar.start(resumed)
    finished = runner.imap_unordered(run_cell, pending)
    try:
        for outcome in finished:
            outcomes[outcome.cell.key] = outcome
            if store is not None:
                store.save(by_key[outcome.cell.key], outcome)
            bar.advance()
            if on_cell is not None:
                on_cell(outcome)
    finally:
        # Stop the executor now (cancel queued cells) rather than when the generator is collected.
        close = getattr(finished, "close", None)
        if close is not None:
            close()
        bar.close()
    rows = tuple(_rows(spec, tasks, outcomes))
    source = spec.source.removeprefix("builtin:")
    meta: dict[str, Any] = {
        "experiment": spec.name,
        "title": spec.title,
        "description": spec.description,
        "source": spec.source,
        "command": equivalent_command(spec, base, runner.name, workers, source),
        "seed": spec.seed,
        "trials": spec.trials,
        "n": list(spec.n),
        "budgets": [level.label for level in spec.levels],
        "methods": list(spec.labels()),
        "spec_trials": base.trials,
        "spec_n": list(base.n),
        "nominal": _nominal(spec),
        "extends": spec.extends,
        "common_random_numbers": spec.common_random_numbers,
        "compare": spec.compare,
        "executor": runner.name,
        "cells": len(tasks),
        "resumed_cells": resumed,
        "wall_seconds": time.perf_counter() - started,
        "cell_seconds": sum(outcomes[t.cell.key].seconds for t in tasks),
        "privframe_version": __version__,
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    result = ExperimentResult(spec, rows, outcomes, meta, directory, refused)
    if directory is not None:
        write_json_atomic(directory / "results.json", result.to_dict())
        write_csv(list(rows), directory / "results.csv")
        plot_experiment(rows, directory / f"{spec.name}.png", title=spec.title, nominal=meta["nominal"])
    return result
