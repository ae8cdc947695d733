"""The grid: cells (method x budget level x n), their self-contained tasks, seeds and fingerprints.

Seeds. Every trial's randomness is a ``SeedSequence`` built from the experiment seed and a spawn key
naming what it is for, never from a counter shared between cells:

- data of trial t at size n: ``(DATA, hash(experiment), n, t)``, shared by every method and budget level,
  so each method and its non-private reference see the same datasets; in an experiment with variants
  ``(DATA, hash(experiment), n, t, hash(variant))``, shared by every method and level on that variant;
- the method's own randomness (resampling, noise): ``(METHOD, hash(experiment), hash(cell), t)``, or
  with ``common_random_numbers`` ``(COMMON, hash(experiment), n, t)`` (plus ``hash(variant)`` on a variant),
  shared by every method and budget level of trial t at size n (so methods that draw their resamples
  alike draw the same ones).

So a table depends only on the seed and the settings, not on the executor, the worker count, the order
cells finish in, or which other methods were selected; ``--trials 10`` runs the first 10 trials of the
400-trial run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from privframe.experiments.config import ExperimentSpec, MethodSpec, Variant
from privframe.experiments.levels import BudgetLevel, budget_table
from privframe.pipeline.methodmap import max_misses
from privframe.privacy.budgets import GDP, ApproxDP, PureDP

__all__ = [
    "NON_PRIVATE",
    "Cell",
    "CellTask",
    "StopRule",
    "common_seed",
    "data_seed",
    "expand",
    "method_seed",
    "stable_key",
]

NON_PRIVATE = "non-private"
"""The budget label of cells of non-private references."""

_DATA, _METHOD, _COMMON = 0, 1, 2


def stable_key(text: str) -> int:
    """A 32-bit integer from a string, stable across processes and Python versions (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def _variant_key(variant: str | None) -> tuple[int, ...]:
    return () if variant is None else (stable_key(variant),)


def data_seed(seed: int, experiment: str, n: int, trial: int, variant: str | None = None) -> np.random.SeedSequence:
    """The seed of the dataset of ``trial`` at size ``n`` (on ``variant``, if the experiment has variants)."""
    return np.random.SeedSequence(seed, spawn_key=(_DATA, stable_key(experiment), n, trial, *_variant_key(variant)))


def method_seed(seed: int, experiment: str, cell: str, trial: int) -> np.random.SeedSequence:
    """The seed of a method's own randomness in ``trial`` of ``cell``."""
    return np.random.SeedSequence(seed, spawn_key=(_METHOD, stable_key(experiment), stable_key(cell), trial))


def common_seed(seed: int, experiment: str, n: int, trial: int, variant: str | None = None) -> np.random.SeedSequence:
    """The run seed of every method in ``trial`` at size ``n`` (on ``variant``) under ``common_random_numbers``."""
    return np.random.SeedSequence(seed, spawn_key=(_COMMON, stable_key(experiment), n, trial, *_variant_key(variant)))


@attrs.frozen
class Cell:
    """One point of the grid.

    Attributes
    ----------
    method : str
        Method label.
    budget : str
        Budget level label, or ``"non-private"``.
    n : int
        Sample size.
    variant : str or None
        The variant's label in an experiment with variants, else None.
    """

    method: str
    budget: str
    n: int
    variant: str | None = None

    @property
    def key(self) -> str:
        """A unique, readable identifier (``"cr-gs-wor|mu=8|n=2000"``, ``"...|n=2000|poisson-w10"`` on a variant)."""
        base = f"{self.method}|{self.budget}|n={self.n}"
        return base if self.variant is None else f"{base}|{self.variant}"

    def to_dict(self) -> dict[str, Any]:
        """Plain values (``variant`` only when set, so cells of experiments without variants read as before)."""
        out: dict[str, Any] = {"method": self.method, "budget": self.budget, "n": self.n}
        if self.variant is not None:
            out["variant"] = self.variant
        return out


@attrs.frozen
class StopRule:
    """Early stopping of a cell that can no longer pass the method map's coverage rule.

    The rule is :func:`privframe.pipeline.methodmap.coverage_passes` at ``nominal`` over ``trials`` trials (a
    trial that released nothing is a miss). :attr:`max_misses` is the largest number of misses out of
    ``trials`` that still passes, so a cell is stopped right after the first trial at which its misses so far
    exceed it: from then on it cannot pass whatever the remaining trials give, and before then it still can.

    Attributes
    ----------
    nominal : float
        The method's nominal coverage.
    trials : int
        The cell's full trial count.
    """

    nominal: float
    trials: int

    @property
    def max_misses(self) -> int:
        """The most misses out of :attr:`trials` that pass the rule (-1 if none pass)."""
        return max_misses(self.trials, self.nominal)

    def cannot_pass(self, misses: int) -> bool:
        """Whether ``misses`` misses already rule out passing at the full trial count."""
        return misses > self.max_misses

    def to_dict(self) -> dict[str, Any]:
        """Plain values (part of the cell's fingerprint)."""
        return {"rule": "coverage_passes", "nominal": self.nominal, "trials": self.trials}


@attrs.frozen(eq=False)
class CellTask:
    """Everything a worker needs to run one cell: plain, picklable data (no live objects; do not mutate).

    Attributes
    ----------
    experiment : str
        Experiment name (part of every seed).
    cell : Cell
        Where in the grid.
    seed, trials : int
        Experiment seed and the number of trials.
    data : mapping
        ``{"generator": name, **options}``.
    pipeline : mapping
        The pipeline table, budget included as a table.
    truth : float
        The value a confidence set should contain.
    delta : float
        Reporting delta of the (epsilon, delta) column.
    measure_memory : bool
        Trace the peak memory of each call.
    common_random_numbers : bool
        Run every trial with :func:`common_seed` instead of the cell's own :func:`method_seed`.
    stop : StopRule or None
        Early stopping (``early_stop`` experiments, private cells only): stop once the cell cannot pass.
    """

    experiment: str
    cell: Cell
    seed: int
    trials: int
    data: dict[str, Any] = attrs.field(converter=dict)
    pipeline: dict[str, Any] = attrs.field(converter=dict)
    truth: float
    delta: float
    measure_memory: bool
    common_random_numbers: bool = False
    stop: StopRule | None = None

    def fingerprint(self, version: str) -> str:
        """A hash of every setting that determines the cell's trials (``--resume`` reuses a cell only on a match).

        ``common_random_numbers`` and ``stop`` enter only when set, so cells saved before the settings existed
        keep their fingerprints.
        """
        payload = {f.name: _plain(getattr(self, f.name)) for f in attrs.fields(CellTask)}
        if not self.common_random_numbers:
            del payload["common_random_numbers"]
        if self.stop is None:
            del payload["stop"]
        payload["version"] = version
        text = json.dumps(payload, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Cell):
        return value.key
    if isinstance(value, (GDP, ApproxDP, PureDP)):
        return budget_table(value)
    if isinstance(value, StopRule):
        return value.to_dict()
    return value


def _statistic_group(method: MethodSpec) -> str:
    statistic = method.pipeline["statistic"]
    if isinstance(statistic, Mapping):
        return json.dumps(dict(statistic), sort_keys=True, default=repr)
    return json.dumps({"name": statistic})


def expand(spec: ExperimentSpec) -> list[CellTask]:
    """The cells of an experiment in table order: budget level, then method (config order), then n.

    Non-private methods run once per n, after the private levels. Truths are computed once here. Cells a
    method refuses (``record_refused``; :meth:`ExperimentSpec.refusals`) are left out.

    With variants the order is the run's priority order instead: statistics in the order their first method
    appears in the config, then n; within a statistic and n, the non-private references on every variant,
    then each budget level's private methods (config order) on every variant. So a run stopped part-way has
    finished whole map cells (statistic, n, level), the first statistics of the config first.
    """
    refused = spec.refusals()
    too_small = spec.size_refusals()

    def task(method: MethodSpec, label: str, level: BudgetLevel | None, n: int, variant: Variant | None) -> CellTask:
        table = spec.table(method, variant)
        if level is not None and method.budget is not None:
            table["budget"] = budget_table(level.slots[method.budget])
        private = method.budget is not None
        stop = (
            StopRule(float(method.pipeline.get("confidence", 0.9)), spec.trials)
            if spec.early_stop and private
            else None
        )
        return CellTask(
            experiment=spec.name,
            cell=Cell(method.label, label, n, None if variant is None else variant.label),
            seed=spec.seed,
            trials=spec.trials,
            data=spec.data_of(variant),
            pipeline=_plain(table),
            truth=spec.truth(method, variant),
            delta=spec.delta,
            measure_memory=spec.measure_memory,
            common_random_numbers=spec.common_random_numbers,
            stop=stop,
        )

    def runs(method: MethodSpec, label: str, n: int, variant: Variant | None) -> bool:
        name = None if variant is None else variant.label
        return (method.label, label, name) not in refused and (method.label, label, n, name) not in too_small

    tasks: list[CellTask] = []
    if not spec.variants:
        groups: list[tuple[str, Any]] = [(level.label, level) for level in spec.levels] + [(NON_PRIVATE, None)]
        for label, level in groups:
            for method in spec.methods:
                if (method.budget is None) != (level is None):
                    continue
                for n in spec.n:
                    if runs(method, label, n, None):
                        tasks.append(task(method, label, level, n, None))
        return tasks
    statistics = list(dict.fromkeys(_statistic_group(m) for m in spec.methods))
    for statistic in statistics:
        members = [m for m in spec.methods if _statistic_group(m) == statistic]
        for n in spec.n:
            for method in members:
                if method.budget is None:
                    tasks += [task(method, NON_PRIVATE, None, n, v) for v in spec.variants_of(method)]
            for level in spec.levels:
                for method in members:
                    if method.budget is None:
                        continue
                    for variant in spec.variants_of(method):
                        if runs(method, level.label, n, variant):
                            tasks.append(task(method, level.label, level, n, variant))
    return tasks
