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

__all__ = ["CostEstimate", "ExperimentResult", "Refusal", "estimate", "run"]

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
    variant : str or None
        The data variant (experiments with variants), else None.
    """

    method: str
    method_name: str
    statistic: str
    budget: str
    reason: str
    n: int | None = None
    variant: str | None = None

    def describe(self) -> str:
        """``method at level[, n = N][ on variant] (reason)``, for tables and reports."""
        where = self.budget if self.n is None else f"{self.budget}, n = {self.n}"
        on = "" if self.variant is None else f" on {self.variant}"
        return f"{self.method} at {where}{on} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        """Plain values (``variant`` only when set)."""
        out = attrs.asdict(self)
        if self.variant is None:
            del out["variant"]
        return out


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
        lines += [f"refused: {r.describe()}" for r in _collapsed(self.refused)]
        missing = self.meta.get("missing_cells")
        if missing:
            lines.append(
                f"not run: {missing} of {self.meta.get('cells')} cells (--saved-only: only saved cells are shown)"
            )
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


def _collapsed(refused: Sequence[Refusal]) -> list[Refusal]:
    """Refusals for printing: those that differ only in the variant are shown once, without it."""
    groups: dict[tuple[str, str, int | None, str], list[Refusal]] = {}
    for r in refused:
        groups.setdefault((r.method, r.budget, r.n, r.reason), []).append(r)
    return [rs[0] if len(rs) == 1 else attrs.evolve(rs[0], variant=None) for rs in groups.values()]


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
    if [v.label for v in spec.variants] != [v.label for v in base.variants]:
        words += ["--variants", _csv([v.label for v in spec.variants])]
    if base.early_stop and not spec.early_stop:
        words.append("--no-early-stop")
    if executor != "serial":
        words += ["--executor", executor]
        if workers is not None:
            words += ["--workers", str(workers)]
    return shlex.join(words)


def _rows(spec: ExperimentSpec, tasks: list[CellTask], outcomes: Mapping[str, CellOutcome]) -> list[CellSummary]:
    by_cell = {(t.cell.method, t.cell.budget, t.cell.n, t.cell.variant): t for t in tasks}

    def partner(label: str | None, task: CellTask) -> CellOutcome | None:
        """The outcome of ``label``'s cell at this n (and variant): at this budget level, or its non-private cell."""
        if label is None:
            return None
        budget = task.cell.budget if spec.method(label).budget is not None else NON_PRIVATE
        other = by_cell.get((label, budget, task.cell.n, task.cell.variant))
        return outcomes.get(other.cell.key) if other is not None else None

    rows = []
    for task in tasks:
        if task.cell.key not in outcomes:
            continue  # not run (a partial result built from the saved cells)
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
    variants: Sequence[str] | None = None,
    early_stop: bool | None = None,
    out: str | Path | None = None,
    executor: str | Executor = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    saved_only: bool = False,
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
    variants, early_stop : optional
        Variant labels to run (experiments with ``[[experiment.variants]]``), and an override of the config's
        ``early_stop``.
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
    saved_only : bool
        Run nothing: the result holds the cells saved under ``out`` with identical settings (``resume``
        implied), and ``meta["missing_cells"]`` counts the others (a partial result, e.g. of a run still going).
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
        variants=variants,
        early_stop=early_stop,
    )
    spec.validate()
    resume = resume or saved_only
    runner = make_executor(executor, workers=workers, scheduler=scheduler)
    if resume and out is None:
        raise ConfigError("needs an output directory (out)", path="resume")
    directory = None if out is None else Path(out) / spec.name
    store = None if directory is None else CellStore(directory, __version__)
    tasks = expand(spec)
    refused = tuple(
        Refusal(label, spec.method(label).method_name, spec.method(label).statistic_name, level, reason, None, variant)
        for (label, level, variant), reason in spec.refusals().items()
    ) + tuple(
        Refusal(label, spec.method(label).method_name, spec.method(label).statistic_name, level, reason, n, variant)
        for (label, level, n, variant), reason in spec.size_refusals().items()
    )
    outcomes: dict[str, CellOutcome] = {}
    if resume and store is not None:
        for task in tasks:
            saved = store.load(task)
            if saved is not None:
                outcomes[task.cell.key] = saved
    resumed = len(outcomes)
    pending = [] if saved_only else [t for t in tasks if t.cell.key not in outcomes]
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
        "missing_cells": len(tasks) - len(outcomes),
        "variants": [v.label for v in spec.variants],
        "early_stop": spec.early_stop,
        "stopped_cells": sum(1 for o in outcomes.values() if o.stopped is not None),
        "wall_seconds": time.perf_counter() - started,
        "cell_seconds": sum(outcomes[t.cell.key].seconds for t in tasks if t.cell.key in outcomes),
        "privframe_version": __version__,
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    result = ExperimentResult(spec, rows, outcomes, meta, directory, refused)
    if directory is not None:
        write_json_atomic(directory / "results.json", result.to_dict())
        write_csv(list(rows), directory / "results.csv")
        if not spec.variants:  # one line per method and level: an experiment with variants has no such plot
            plot_experiment(rows, directory / f"{spec.name}.png", title=spec.title, nominal=meta["nominal"])
    return result


@attrs.frozen
class CostEstimate:
    """What a run would cost, from a short timing run (:func:`estimate`).

    Attributes
    ----------
    cells : int
        Cells the run would run (refused cells excluded).
    private_cells, reference_cells : int
        Of which private, and non-private references.
    trials : int
        Trials in all, at the full trial count (early stopping can only lower it).
    core_seconds : float
        Estimated CPU-seconds of one core: per timed group (method, budget level, n), the seconds per trial
        of its timing cell times the trials of the group's cells.
    by_statistic : mapping
        ``core_seconds`` per statistic (the key of its pipeline table's statistic).
    timing_seconds : float
        Wall time of the timing run itself.
    timed_groups : int
        Groups timed (one cell of each, on its first variant).
    """

    cells: int
    private_cells: int
    reference_cells: int
    trials: int
    core_seconds: float
    by_statistic: Mapping[str, float]
    timing_seconds: float
    timed_groups: int

    def describe(self, workers: int = 1) -> str:
        """A few lines for the terminal."""
        hours = self.core_seconds / 3600
        lines = [
            f"{self.cells} cells ({self.private_cells} private, {self.reference_cells} references), "
            f"{self.trials} trials at most",
            f"estimated cost: {self.core_seconds:.0f} core-seconds ({hours:.1f} core-hours), about "
            f"{hours / max(1, workers):.1f} h of wall time on {workers} free core(s); an upper bound: early "
            "stopping only shortens it",
            "by statistic: " + ", ".join(f"{k} {v / 3600:.2f} h" for k, v in self.by_statistic.items()),
            f"(from timing {self.timed_groups} groups of (method, budget level, n) in {self.timing_seconds:.0f} s)",
        ]
        return "\n".join(lines)


def _statistic_label(task: CellTask) -> str:
    from privframe.pipeline.methodmap import statistic_key

    value = task.pipeline["statistic"]
    if isinstance(value, Mapping):
        return statistic_key(str(value["name"]), {k: v for k, v in value.items() if k != "name"})
    return str(value)


def estimate(
    experiment: ExperimentLike,
    *,
    trials: int | None = None,
    n: Sequence[int] | None = None,
    methods: Sequence[str] | None = None,
    budgets: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    sample_trials: int = 2,
) -> CostEstimate:
    """The number of cells of a run and its estimated cost, from a short timing run (nothing is saved).

    The cells are grouped by (method label, budget level, n); one cell of each group (its first variant) runs
    one warm-up trial, then ``sample_trials`` timed trials on the run's own seeds, and every cell of the group
    is assumed to cost as much per trial. Early stopping is ignored, so the estimate is an upper bound on the
    trials run; the time per trial of other variants can differ (ties, tails).
    """
    started = time.perf_counter()
    spec = load_experiment(experiment).with_overrides(
        trials=trials, n=n, methods=methods, budgets=budgets, variants=variants
    )
    spec.validate()
    tasks = expand(spec)
    groups: dict[tuple[str, str, int], list[CellTask]] = {}
    for task in tasks:
        groups.setdefault((task.cell.method, task.cell.budget, task.cell.n), []).append(task)
    core = 0.0
    by_statistic: dict[str, float] = {}
    for members in groups.values():
        first = attrs.evolve(members[0], stop=None)
        run_cell(attrs.evolve(first, trials=1))
        timed = run_cell(attrs.evolve(first, trials=sample_trials))
        per_trial = timed.seconds / max(1, len(timed.records))
        cost = per_trial * sum(t.trials for t in members)
        core += cost
        label = _statistic_label(first)
        by_statistic[label] = by_statistic.get(label, 0.0) + cost
    private = sum(1 for t in tasks if t.cell.budget != NON_PRIVATE)
    return CostEstimate(
        cells=len(tasks),
        private_cells=private,
        reference_cells=len(tasks) - private,
        trials=sum(t.trials for t in tasks),
        core_seconds=core,
        by_statistic=by_statistic,
        timing_seconds=time.perf_counter() - started,
        timed_groups=len(groups),
    )
