"""Monte Carlo experiments: coverage, width, timing and privacy of pipelines over grids.

``pf.experiments.run(NAME | CONFIG, ...)`` runs an experiment (the built-in ones, listed in
``docs/experiments.md``, reproduce the papers' experiments); ``privframe experiment`` is the same from
the command line, and :func:`write_report` turns saved runs into ``docs/results.md``. :func:`write_method_map`
turns a run of ``method-map`` into the map ``method="auto"`` reads (``privframe.pipeline.methodmap``). The harness only
uses registered names through :class:`privframe.Pipeline`; it knows no particular method.
"""

from __future__ import annotations

from privframe._progress import Progress
from privframe.experiments.cells import NON_PRIVATE, Cell, CellTask
from privframe.experiments.config import ExperimentSpec, MethodSpec, builtin_names, load_experiment, report_names
from privframe.experiments.executors import (
    EXECUTORS,
    DaskExecutor,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    make_executor,
)
from privframe.experiments.generators import GENERATORS
from privframe.experiments.levels import BudgetLevel
from privframe.experiments.methodmap import (
    auto_choice,
    auto_summary,
    build_method_map,
    merge_method_maps,
    method_map_table,
    page_summary,
    update_page,
    write_method_map,
)
from privframe.experiments.metrics import TIMING_COLUMNS, CellSummary
from privframe.experiments.report import run_all, write_report
from privframe.experiments.runner import CostEstimate, ExperimentResult, Refusal, estimate, run
from privframe.experiments.trial import CellOutcome, TrialRecord

__all__ = [
    "EXECUTORS",
    "GENERATORS",
    "NON_PRIVATE",
    "TIMING_COLUMNS",
    "BudgetLevel",
    "Cell",
    "CellOutcome",
    "CellSummary",
    "CellTask",
    "CostEstimate",
    "DaskExecutor",
    "Executor",
    "ExperimentResult",
    "ExperimentSpec",
    "MethodSpec",
    "ProcessExecutor",
    "Progress",
    "Refusal",
    "SerialExecutor",
    "TrialRecord",
    "auto_choice",
    "auto_summary",
    "build_method_map",
    "builtin_names",
    "load_experiment",
    "estimate",
    "make_executor",
    "merge_method_maps",
    "method_map_table",
    "page_summary",
    "report_names",
    "run",
    "run_all",
    "update_page",
    "write_method_map",
    "write_report",
]
