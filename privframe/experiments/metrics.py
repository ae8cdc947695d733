"""Per-cell metrics: coverage with its Monte Carlo SE, widths, timing, failures, the guarantee.

Definitions (documented in docs/experiments.md):

- ``coverage``: the share of successful trials whose released set contains the truth, with
  ``coverage_se = sqrt(c (1 - c) / successes)``;
- ``mean_width``: mean interval length (2 x radius for balls) over successful trials;
- ``oracle_ratio``: ``mean_width`` over the experiment's oracle width at n (``oracle_width``), if given;
- ``rel_width``: mean over trials of ``width / reference width`` on the same data (the reference cell
  of the same n; trials where either failed, or the reference width is 0, are left out);
- ``median_ms``: median wall time of successful calls; ``peak_mib``: largest peak traced memory;
- ``failure_rate``: share of trials that raised ``SamplerRejected`` or ``PTRFailed``.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import attrs

from privframe.experiments.cells import CellTask
from privframe.experiments.trial import CellOutcome

__all__ = ["TIMING_COLUMNS", "CellSummary", "summarise"]

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

    def to_dict(self) -> dict[str, Any]:
        """The row as plain values (None for undefined entries)."""
        return attrs.asdict(self)

    def comparable(self) -> dict[str, Any]:
        """The row without its timing columns."""
        return {k: v for k, v in self.to_dict().items() if k not in TIMING_COLUMNS}


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def summarise(
    task: CellTask, outcome: CellOutcome, reference: CellOutcome | None, oracle: float | None = None
) -> CellSummary:
    """The row of one cell; ``reference`` is the outcome of its reference cell (same n) if any, ``oracle``
    the experiment's oracle width at this n if it states one."""
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
    )
