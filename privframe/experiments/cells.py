"""The grid: cells (method x budget level x n), their self-contained tasks, seeds and fingerprints.

Seeds. Every trial's randomness is a ``SeedSequence`` built from the experiment seed and a spawn key
naming what it is for, never from a counter shared between cells:

- data of trial t at size n: ``(DATA, hash(experiment), n, t)``, shared by every method and budget level,
  so each method and its non-private reference see the same datasets;
- the method's own randomness (resampling, noise): ``(METHOD, hash(experiment), hash(cell), t)``, or
  with ``common_random_numbers`` ``(COMMON, hash(experiment), n, t)``, shared by every method and
  budget level of trial t at size n (so methods that draw their resamples alike draw the same ones).

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

from privframe.experiments.config import ExperimentSpec
from privframe.experiments.levels import budget_table
from privframe.privacy.budgets import GDP, ApproxDP, PureDP

__all__ = ["NON_PRIVATE", "Cell", "CellTask", "common_seed", "data_seed", "expand", "method_seed", "stable_key"]

NON_PRIVATE = "non-private"
"""The budget label of cells of non-private references."""

_DATA, _METHOD, _COMMON = 0, 1, 2


def stable_key(text: str) -> int:
    """A 32-bit integer from a string, stable across processes and Python versions (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def data_seed(seed: int, experiment: str, n: int, trial: int) -> np.random.SeedSequence:
    """The seed of the dataset of ``trial`` at size ``n``."""
    return np.random.SeedSequence(seed, spawn_key=(_DATA, stable_key(experiment), n, trial))


def method_seed(seed: int, experiment: str, cell: str, trial: int) -> np.random.SeedSequence:
    """The seed of a method's own randomness in ``trial`` of ``cell``."""
    return np.random.SeedSequence(seed, spawn_key=(_METHOD, stable_key(experiment), stable_key(cell), trial))


def common_seed(seed: int, experiment: str, n: int, trial: int) -> np.random.SeedSequence:
    """The run seed of every method in ``trial`` at size ``n`` under ``common_random_numbers``."""
    return np.random.SeedSequence(seed, spawn_key=(_COMMON, stable_key(experiment), n, trial))


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
    """

    method: str
    budget: str
    n: int

    @property
    def key(self) -> str:
        """A unique, readable identifier (``"cr-gs-wor|mu=8|n=2000"``)."""
        return f"{self.method}|{self.budget}|n={self.n}"


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

    def fingerprint(self, version: str) -> str:
        """A hash of every setting that determines the cell's trials (``--resume`` reuses a cell only on a match).

        ``common_random_numbers`` enters only when set, so cells saved before the setting existed keep
        their fingerprints.
        """
        payload = {f.name: _plain(getattr(self, f.name)) for f in attrs.fields(CellTask)}
        if not self.common_random_numbers:
            del payload["common_random_numbers"]
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
    return value


def expand(spec: ExperimentSpec) -> list[CellTask]:
    """The cells of an experiment in table order: budget level, then method (config order), then n.

    Non-private methods run once per n, after the private levels. Truths are computed once here. Cells a
    method refuses (``record_refused``; :meth:`ExperimentSpec.refusals`) are left out.
    """
    tasks: list[CellTask] = []
    truths = {m.label: spec.truth(m) for m in spec.methods}
    refused = spec.refusals()
    too_small = spec.size_refusals()
    groups: list[tuple[str, Any]] = [(level.label, level) for level in spec.levels] + [(NON_PRIVATE, None)]
    for label, level in groups:
        for method in spec.methods:
            if (method.budget is None) != (level is None) or (method.label, label) in refused:
                continue
            table = dict(method.pipeline)
            if level is not None and method.budget is not None:
                table["budget"] = budget_table(level.slots[method.budget])
            for n in spec.n:
                if (method.label, label, n) in too_small:
                    continue
                tasks.append(
                    CellTask(
                        experiment=spec.name,
                        cell=Cell(method.label, label, n),
                        seed=spec.seed,
                        trials=spec.trials,
                        data=spec.data,
                        pipeline=_plain(table),
                        truth=truths[method.label],
                        delta=spec.delta,
                        measure_memory=spec.measure_memory,
                        common_random_numbers=spec.common_random_numbers,
                    )
                )
    return tasks
