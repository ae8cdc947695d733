"""Per-cell metrics: coverage with its Monte Carlo SE, widths, timing, failures, the guarantee.

Definitions (documented in docs/experiments.md):

- ``coverage``: the share of successful trials whose released set contains the truth, with
  ``coverage_se = sqrt(c (1 - c) / successes)``;
- ``mean_width``: mean interval length (2 x radius for balls) over successful trials, and
  ``width_sd`` its sample standard deviation (n - 1 denominator) across those trials;
- ``noise_scale``: per privacy-event label (``center``, ``radius``...), the median over successful
  trials of the noise scale the event records (sd for Gaussian noise, scale for Laplace);
- ``oracle_ratio``: ``mean_width`` over the experiment's oracle width at n (``oracle_width``), if given;
- ``rel_width``: mean over trials of ``width / reference width`` on the same data (the reference cell
  of the same n; trials where either failed, or the reference width is 0, are left out);
- ``median_ms``: median wall time of successful calls; ``peak_mib``: largest peak traced memory;
- ``failure_rate``: share of trials that raised ``SamplerRejected`` or ``PTRFailed``;
- ``variant``: the data variant of the cell (experiments with ``[[experiment.variants]]``), ``stopped``: the
  trials after which an early-stopping cell was stopped because it could no longer pass (``trials`` then
  counts the trials run);
- ``width_diff``, ``coverage_diff`` (experiments with ``compare = BASELINE``): means over the
  ``compare_pairs`` trials in which both this cell and the baseline's cell at the same n (and budget
  level, unless the baseline is non-private) released, of ``width - baseline width`` and of
  ``covered - baseline covered`` (each -1, 0 or 1), with the SEs ``sd(d) / sqrt(pairs)`` (sample sd);
- ``sampler``, ``mechanism``, ``accountant`` and ``pipeline``: the registered names and the resolved
  options of every part the cell ran (:func:`describe_pipeline`), ``parameters`` the settings its
  first successful release reported (m, B, kappa...).
"""

from __future__ import annotations

import copy
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from privframe.experiments.cells import CellTask
from privframe.experiments.config import materialise
from privframe.experiments.trial import CellOutcome, TrialRecord
from privframe.pipeline.build import Pipeline

__all__ = ["TIMING_COLUMNS", "CellSummary", "describe_pipeline", "summarise"]

TIMING_COLUMNS = ("median_ms", "peak_mib")
"""Columns that measure the machine, not the method: excluded when comparing tables across executors."""


@attrs.frozen
class CellSummary:
    """One row of an experiment's table (see the module docstring for the definitions)."""

    experiment: str
    budget: str
    method: str
    method_name: str
    statistic: str
    n: int
    trials: int
    truth: float
    coverage: float | None
    coverage_se: float | None
    mean_width: float | None
    rel_width: float | None
    oracle_ratio: float | None
    failure_rate: float
    median_ms: float | None
    peak_mib: float | None
    guarantee: str
    epsilon: float | None
    delta: float | None
    reference: str | None
    width_sd: float | None = None
    noise_scale: dict[str, float] = attrs.field(factory=dict)
    sampler: str | None = None
    mechanism: str | None = None
    accountant: str | None = None
    pipeline: dict[str, Any] = attrs.field(factory=dict)
    parameters: dict[str, Any] = attrs.field(factory=dict)
    compare: str | None = None
    compare_pairs: int | None = None
    width_diff: float | None = None
    width_diff_se: float | None = None
    coverage_diff: float | None = None
    coverage_diff_se: float | None = None
    variant: str | None = None
    stopped: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as plain values (None for undefined entries)."""
        return attrs.asdict(self)

    def comparable(self) -> dict[str, Any]:
        """The row without its timing columns."""
        return {k: v for k, v in self.to_dict().items() if k not in TIMING_COLUMNS}


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) >= 2 else None


def _plain(value: Any) -> Any:
    """A JSON-able, reproducible spelling of an option value (never an object address)."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    family = getattr(getattr(value, "dist", None), "name", None)
    if isinstance(family, str):  # a frozen scipy distribution
        return {"scipy": family, "args": _plain(list(getattr(value, "args", ()))), **_plain(getattr(value, "kwds", {}))}
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else text


def _options(part: object) -> dict[str, Any]:
    cls: Any = type(part)
    if not attrs.has(cls):
        return {}
    return {f.name: _plain(getattr(part, f.name)) for f in attrs.fields(cls) if f.init and not f.name.startswith("_")}


_DESCRIBED: dict[str, dict[str, Any]] = {}


def describe_pipeline(task: CellTask) -> dict[str, Any]:
    """What a cell ran, as plain values: every part's registered name and resolved options.

    ``{"method": {"name": ..., **options}, "statistic": {...}, "sampler": {...}, "mechanism": {...},
    "accountant": {...}, "budget": {...}, "bounds": ..., "confidence": ...}``, with the options the
    parts were built with (the method's defaults applied), the parts the method does not use left out,
    and ``method = "auto"`` replaced by the method it chooses at the cell's n.
    """
    key = json.dumps([task.cell.method, task.pipeline, task.cell.n], sort_keys=True, default=repr)
    if key not in _DESCRIBED:
        _DESCRIBED[key] = _describe(task)
    return copy.deepcopy(_DESCRIBED[key])


def _describe(task: CellTask) -> dict[str, Any]:
    path = f"experiment.methods.{task.cell.method}"
    resolved = Pipeline.from_dict(materialise(task.pipeline, path), prefix=path).select(task.cell.n).resolve()
    parts: dict[str, object] = {"method": resolved.method, "statistic": resolved.statistic, **resolved.parts}
    out: dict[str, Any] = {
        kind: {"name": resolved.names.get(kind, kind), **_options(part)} for kind, part in parts.items()
    }
    for key in ("budget", "bounds", "confidence"):
        if key in task.pipeline:
            out[key] = _plain(task.pipeline[key])
    return out


def _paired(outcome: CellOutcome, baseline: CellOutcome) -> tuple[int, list[float], list[float]]:
    """Per-trial differences (width, covered) over the trials in which both cells released."""
    base = {r.trial: r for r in baseline.records if r.failure is None and r.width is not None}
    widths, covers = [], []
    for r in outcome.records:
        b = base.get(r.trial)
        if r.failure is not None or r.width is None or b is None or b.width is None:
            continue
        widths.append(float(r.width) - float(b.width))
        covers.append(float(bool(r.covered)) - float(bool(b.covered)))
    return len(widths), widths, covers


def _median_noise_scales(records: Sequence[TrialRecord]) -> dict[str, float]:
    """Per event label, the median noise scale over the released trials that recorded one."""
    labels = sorted({label for r in records for label in r.noise_scales})
    return {
        label: statistics.median(r.noise_scales[label] for r in records if label in r.noise_scales) for label in labels
    }


def summarise(
    task: CellTask,
    outcome: CellOutcome,
    reference: CellOutcome | None,
    oracle: float | None = None,
    *,
    baseline: CellOutcome | None = None,
    pipeline: Mapping[str, Any] | None = None,
) -> CellSummary:
    """The row of one cell.

    ``reference`` is the outcome of its reference cell (same n) if any, ``oracle`` the experiment's
    oracle width at this n if it states one, ``baseline`` the outcome of the ``compare`` baseline's cell
    it is paired with, and ``pipeline`` what :func:`describe_pipeline` says the cell ran.
    """
    records = outcome.records
    ok = [r for r in records if r.failure is None]
    covered = sum(1 for r in ok if r.covered)
    coverage = covered / len(ok) if ok else None
    se = math.sqrt(coverage * (1 - coverage) / len(ok)) if coverage is not None else None
    widths = [float(r.width) for r in ok if r.width is not None]
    rel = None
    if reference is not None:
        ref_width = {r.trial: r.width for r in reference.records if r.failure is None and r.width}
        rel = _mean(
            [float(r.width) / float(ref_width[r.trial]) for r in ok if r.trial in ref_width and r.width is not None]
        )
    mean_width = _mean(widths)
    times = [r.ms for r in ok]
    peaks = [r.peak_mib for r in ok if r.peak_mib is not None]
    statistic = task.pipeline["statistic"]
    method = task.pipeline["method"]
    guarantee = outcome.guarantee
    described = dict(pipeline or {})
    compared: dict[str, Any] = {}
    if baseline is not None:
        pairs, dw, dc = _paired(outcome, baseline)
        sd_w, sd_c = _sd(dw), _sd(dc)
        compared = {
            "compare": baseline.cell.method,
            "compare_pairs": pairs,
            "width_diff": _mean(dw),
            "width_diff_se": sd_w / math.sqrt(pairs) if sd_w is not None else None,
            "coverage_diff": _mean(dc),
            "coverage_diff_se": sd_c / math.sqrt(pairs) if sd_c is not None else None,
        }

    def name(kind: str) -> str | None:
        part = described.get(kind)
        return str(part["name"]) if isinstance(part, Mapping) else None

    return CellSummary(
        experiment=task.experiment,
        budget=task.cell.budget,
        method=task.cell.method,
        method_name=str(method["name"] if isinstance(method, dict) else method),
        statistic=str(statistic["name"] if isinstance(statistic, dict) else statistic),
        n=task.cell.n,
        trials=len(records),
        truth=task.truth,
        coverage=coverage,
        coverage_se=se,
        mean_width=mean_width,
        rel_width=rel,
        oracle_ratio=mean_width / oracle if mean_width is not None and oracle else None,
        failure_rate=(len(records) - len(ok)) / len(records) if records else 0.0,
        median_ms=statistics.median(times) if times else None,
        peak_mib=max(peaks) if peaks else None,
        guarantee=guarantee.native if guarantee is not None else "-",
        epsilon=guarantee.epsilon if guarantee is not None else None,
        delta=guarantee.delta if guarantee is not None else None,
        reference=reference.cell.method if reference is not None else None,
        width_sd=_sd(widths),
        noise_scale=_median_noise_scales(ok),
        sampler=name("sampler"),
        mechanism=name("mechanism"),
        accountant=name("accountant"),
        pipeline=described,
        parameters=dict(outcome.parameters),
        **compared,
        variant=task.cell.variant,
        stopped=outcome.stopped,
    )
