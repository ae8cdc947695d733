"""Running one cell: its trials, each on fresh data, recorded as plain values.

:func:`run_cell` is the unit of work every executor runs (in this process, a worker process, or a Dask
worker). Sampler rejections and PTR failures are documented outcomes of private methods, so they are
counted per trial, not raised; every other error stops the run, with a note naming the experiment,
the cell (method, budget level, n) and the trial - never a data value.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from privframe.errors import PrivframeError, PTRFailed, SamplerRejected
from privframe.experiments.cells import Cell, CellTask, common_seed, data_seed, method_seed
from privframe.experiments.config import materialise
from privframe.experiments.generators import make_generator
from privframe.pipeline.build import Pipeline
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.results import IntervalResult, RegionResult

__all__ = ["NOTE_PREFIX", "CellOutcome", "Guarantee", "TrialRecord", "failure_note", "guarantee_of", "run_cell"]

_FAILURES: tuple[type[PrivframeError], ...] = (SamplerRejected, PTRFailed)


@attrs.frozen
class TrialRecord:
    """One trial of one cell.

    Attributes
    ----------
    trial : int
        Trial index (its data and seeds depend only on it).
    failure : str or None
        ``"SamplerRejected"`` or ``"PTRFailed"`` when nothing was released.
    covered : bool or None
        Whether the released set contains the truth (None on failure).
    width : float or None
        Interval length, or 2 x radius for a ball (None on failure).
    ms : float
        Wall time of the call in milliseconds (data generation excluded).
    peak_mib : float or None
        Peak traced memory of the call in MiB, when measured.
    noise_scales : dict of str to float
        The noise scale of each privacy event of the released result, by event label (the largest when a
        label repeats); public, as every event field.
    """

    trial: int
    failure: str | None
    covered: bool | None
    width: float | None
    ms: float
    peak_mib: float | None = None
    noise_scales: dict[str, float] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


@attrs.frozen
class Guarantee:
    """The privacy guarantee of a cell: the native unit and its (epsilon, delta) equivalent.

    ``epsilon`` is the tight epsilon at ``delta``: the reporting delta for mu-GDP, the budget's own
    delta plus the reporting delta for (mu, d)-GDP, 0 for pure DP, the budget's delta for (eps, d)-DP.
    Both are None for a non-private reference.
    """

    native: str
    epsilon: float | None
    delta: float | None


def guarantee_of(total: Budget | None, delta_ref: float) -> Guarantee:
    """The guarantee of a ledger total at the reporting delta."""
    if total is None:
        return Guarantee("non-private", None, None)
    if isinstance(total, PureDP):
        return Guarantee(str(total), total.epsilon, 0.0)
    if isinstance(total, ApproxDP):
        return Guarantee(str(total), total.epsilon, total.delta)
    assert isinstance(total, GDP)
    delta = total.delta + delta_ref
    return Guarantee(str(total), total.to_approx_dp(delta).epsilon, delta)


@attrs.frozen
class CellOutcome:
    """The trials of one cell, plus what its first successful release reported.

    Attributes
    ----------
    cell : Cell
        Where in the grid.
    records : tuple of TrialRecord
        One per trial, in trial order.
    guarantee : Guarantee or None
        From the first successful trial's ledger (None if every trial failed).
    parameters : mapping
        Resolved settings of the first successful trial (m, B, kappa, ...), as strings or numbers.
    seconds : float
        Wall time of the whole cell.
    stopped : int or None
        With early stopping (:class:`privframe.experiments.cells.StopRule`): the number of trials after which
        the cell was stopped because it could no longer pass (the full count when the deciding miss came in
        the last trial); None when it can still pass, or ran without a rule.
    """

    cell: Cell
    records: tuple[TrialRecord, ...]
    guarantee: Guarantee | None
    parameters: dict[str, Any] = attrs.field(converter=dict)
    seconds: float
    stopped: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (``stopped`` only when the cell was stopped)."""
        out = {
            "cell": self.cell.to_dict(),
            "records": [r.to_dict() for r in self.records],
            "guarantee": None if self.guarantee is None else attrs.asdict(self.guarantee),
            "parameters": self.parameters,
            "seconds": self.seconds,
        }
        if self.stopped is not None:
            out["stopped"] = self.stopped
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CellOutcome:
        """Inverse of :meth:`to_dict`."""
        guarantee = data["guarantee"]
        stopped = data.get("stopped")
        return cls(
            cell=Cell(**data["cell"]),
            records=tuple(TrialRecord.from_dict(r) for r in data["records"]),
            guarantee=None if guarantee is None else Guarantee(**guarantee),
            parameters=data["parameters"],
            seconds=float(data["seconds"]),
            stopped=None if stopped is None else int(stopped),
        )


def _plain_parameter(value: Any) -> Any:
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def _run_one(pipe: Pipeline, data: Any, seed: Any, measure_memory: bool) -> tuple[Any, float, float | None]:
    if measure_memory:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        result = pipe.run(data, rng=seed)
    finally:
        ms = 1000.0 * (time.perf_counter() - start)
        peak = None
        if measure_memory:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return result, ms, peak


NOTE_PREFIX = "in experiment "
"""How the note that :func:`run_cell` adds to an error begins (the CLI prints these notes)."""


def failure_note(task: CellTask, trial: int) -> str:
    """Where an error happened: the experiment, the cell (method, budget level, n) and the trial."""
    cell = task.cell
    return (
        f"{NOTE_PREFIX}'{task.experiment}', cell {cell.key} "
        f"(method '{cell.method}', budget level '{cell.budget}', n = {cell.n}), trial {trial}"
    )


def _noise_scales(result: IntervalResult | RegionResult) -> dict[str, float]:
    scales: dict[str, float] = {}
    for event in result.privacy.events:
        if event.noise_scale is not None:
            scales[event.label] = max(scales.get(event.label, 0.0), float(event.noise_scale))
    return scales


def run_cell(task: CellTask) -> CellOutcome:
    """Run every trial of one cell (the function executors distribute).

    With a stop rule (``task.stop``) the cell stops right after the first trial at which its misses (trials
    that released nothing or whose set missed the truth) rule out passing the coverage rule at the full trial
    count; the outcome then records the trials run and ``stopped``. Without one every trial runs, exactly as
    before the rule existed.
    """
    started = time.perf_counter()
    path = f"experiment.methods.{task.cell.method}"
    generator = make_generator(
        task.data.get("generator"), {k: v for k, v in task.data.items() if k != "generator"}, "experiment.data"
    )
    table = dict(materialise(task.pipeline, path))
    table.setdefault("progress", False)  # the harness draws one bar for the cells, not one per call
    pipe = Pipeline.from_dict(table, prefix=path)
    records: list[TrialRecord] = []
    guarantee: Guarantee | None = None
    parameters: dict[str, Any] = {}
    variant = task.cell.variant
    misses = 0
    stopped: int | None = None
    for trial in range(task.trials):
        if task.common_random_numbers:
            seed = common_seed(task.seed, task.experiment, task.cell.n, trial, variant)
        else:
            seed = method_seed(task.seed, task.experiment, task.cell.key, trial)
        try:
            data_rng = np.random.default_rng(data_seed(task.seed, task.experiment, task.cell.n, trial, variant))
            data = generator.sample(task.cell.n, data_rng)
            result, ms, peak = _run_one(pipe, data, seed, task.measure_memory)
        except _FAILURES as exc:
            records.append(TrialRecord(trial, type(exc).__name__, None, None, 0.0))
        except Exception as exc:
            exc.add_note(failure_note(task, trial))
            raise
        else:
            assert isinstance(result, (IntervalResult, RegionResult))
            covered = result.contains(task.truth)
            records.append(TrialRecord(trial, None, covered, float(result.width), ms, peak, _noise_scales(result)))
            if guarantee is None:
                guarantee = guarantee_of(result.privacy.total, task.delta)
                parameters = {k: _plain_parameter(v) for k, v in result.parameters.items()}
        if records[-1].failure is not None or not records[-1].covered:
            misses += 1
        if task.stop is not None and task.stop.cannot_pass(misses):
            stopped = trial + 1
            break
    seconds = time.perf_counter() - started
    return CellOutcome(task.cell, tuple(records), guarantee, parameters, seconds, stopped)
