"""``method="auto"``: the method map, and how a cell of it is chosen from public information only.

The *method map* is data: for each statistic (with its options), sample size n and budget of the experiment
``method-map`` - the public inputs ``auto`` sees - it lists every method with its measurements on each data
*variant* (a shape of the data with its public bounds: skewed, symmetric, bimodal, heavy-tailed, discrete with
ties, ...): coverage with its Monte Carlo SE, trials (and whether the cell was stopped early), failure rate,
mean width and width relative to the non-private reference on the same data, or the reason it refused the
budget. A method is a *candidate* in a cell only when it passes :func:`coverage_passes` on **every** variant:
coverage >= nominal - 2 SE with SE the Monte Carlo SE at the nominal level (a trial that released nothing
counts as a miss; a variant stopped early, refused or not measured fails). Candidates are ranked by their
width relative to the reference averaged over the variants (:data:`CANDIDATE_RULE`). The map ships as
package data (``privframe/maps/method-map.json``) and is regenerated with ``privframe experiment method-map
--write-map FILE`` (``docs/experiments.md``). Format ``privframe-method-map/2`` (variants); maps of format
``/1`` (one data shape, candidates flagged in the file) are still read.

Choosing looks only at the statistic (its name and options), n, the budget and the confidence, never at
the data values: :meth:`MethodMap.locate` finds the cell of the same statistic nearest in
``(ln n, ln mu)``, among the cells of the budget's unit, with every budget put on the GDP scale of
:func:`budget_scale`. The pipeline (:meth:`privframe.Pipeline.select`) then runs the best-ranked candidate
of that cell that accepts the budget. This module names no method: the names come from the map.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs

from privframe._typing import frozen_mapping
from privframe.bounds import Bounds, L2Ball, as_bounds
from privframe.errors import ConfigError
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP

__all__ = [
    "AUTO",
    "CANDIDATE_RULE",
    "CANDIDATE_RULE_SHORT",
    "MAP_FORMAT",
    "MAP_FORMATS",
    "SELECTION_RULE",
    "Located",
    "MapCell",
    "MapEntry",
    "Measurement",
    "MethodMap",
    "bounds_kind",
    "budget_scale",
    "coverage_passes",
    "describe_entry",
    "diagnostics",
    "excluded_reason",
    "frozen_tree",
    "is_candidate",
    "max_misses",
    "statistic_key",
]

AUTO = "auto"
"""The method name that asks privframe to choose (reserved: a plugin method of this name is never reached)."""

MAP_FORMAT = "privframe-method-map/2"
"""The ``format`` field of a method-map file written now (with variants)."""

MAP_FORMATS = ("privframe-method-map/1", MAP_FORMAT)
"""The formats :meth:`MethodMap.from_dict` reads: ``/1`` (one data shape, candidates as flagged in the file)
and ``/2`` (variants; candidates follow from the measurements by :func:`is_candidate`)."""

CANDIDATE_RULE = (
    "a method is a candidate in a cell only when on every data variant of the cell its coverage >= nominal - "
    "2 SE, SE = sqrt(nominal (1 - nominal) / trials), the Monte Carlo SE of a method that covers exactly at the "
    "nominal level (a trial that released nothing counts as a miss; a variant stopped early, refused or not "
    "measured fails); candidates are ranked by their width relative to the non-private reference on the same "
    "data, averaged over the variants (by mean width when there is no reference)"
)

_SLACK = 1e-9
"""Slack of :func:`coverage_passes`, in trials: a count exactly at the threshold passes despite rounding."""


def coverage_passes(covered: int, trials: int, nominal: float) -> bool:
    """The coverage rule of one variant: ``covered / trials >= nominal - 2 sqrt(nominal (1 - nominal) / trials)``.

    In counts, ``covered >= trials nominal - 2 sqrt(trials nominal (1 - nominal))`` (up to 1e-9 of a trial, so a
    count exactly at the threshold passes whatever the rounding). ``covered`` counts the trials whose released
    set contained the truth; a trial that released nothing is a miss. No trials never pass.

    Examples
    --------
    >>> from privframe.pipeline.methodmap import coverage_passes
    >>> coverage_passes(84, 100, 0.9), coverage_passes(83, 100, 0.9)  # threshold 0.9 - 2 x 0.03 = 0.84
    (True, False)
    """
    if trials <= 0 or not 0 <= covered <= trials:
        return False
    threshold = trials * nominal - 2.0 * math.sqrt(trials * nominal * (1.0 - nominal))
    return covered >= threshold - _SLACK


def max_misses(trials: int, nominal: float) -> int:
    """The most misses out of ``trials`` with which :func:`coverage_passes` still passes (-1 if none pass).

    Early stopping of an experiment cell (:class:`privframe.experiments.cells.StopRule`) stops a cell as soon
    as its misses exceed this: it is computed with the rule itself, so stopping agrees with the final decision.

    Examples
    --------
    >>> from privframe.pipeline.methodmap import max_misses
    >>> max_misses(200, 0.9)  # 200 x 0.9 - 2 sqrt(18) = 171.51: 172 covered pass, 28 misses
    28
    """
    misses = -1
    while misses + 1 <= trials and coverage_passes(trials - (misses + 1), trials, nominal):
        misses += 1
    return misses


CANDIDATE_RULE_SHORT = "measured coverage at least nominal - 2 SE on every data variant"
""":data:`CANDIDATE_RULE` in a phrase, for messages (``privframe run`` and the refusal of ``auto``)."""
SELECTION_RULE = (
    "the map cell of the same statistic nearest in (ln n, ln mu), among the cells of the budget's unit "
    "(mu: GDP as given; (eps, delta)-DP: the largest mu whose mu-GDP implies it; pure eps-DP: the mu-GDP it "
    "implies); there, the best-ranked candidate that accepts the budget"
)

_SHIPPED = ("maps", "method-map.json")
_UNITS = ("gdp", "approx-dp", "pure-dp")


def budget_scale(budget: Budget) -> tuple[str, float]:
    """The unit of ``budget`` and its GDP scale mu, by which ``auto`` compares it with the map's cells.

    - ``GDP(mu)`` and ``GDP(mu, delta=d)``: ``("gdp", mu)``;
    - ``ApproxDP(eps, delta)`` with delta > 0: ``("approx-dp", mu)`` with mu the largest whose mu-GDP
      implies (eps, delta)-DP (the calibration of ``pp.as_gdp``);
    - ``PureDP(eps)`` (and ``ApproxDP(eps, 0)``): ``("pure-dp", mu)`` with ``mu = -2 Phi^-1(1 / (1 + e^eps))``,
      the mu-GDP every eps-DP mechanism satisfies (``accounting.pure_dp_gdp_mu``).

    Examples
    --------
    >>> import privframe as pf
    >>> from privframe.pipeline.methodmap import budget_scale
    >>> budget_scale(pf.GDP(2.0))
    ('gdp', 2.0)
    >>> unit, mu = budget_scale(pf.ApproxDP(1.0, 1e-6))
    >>> unit, round(mu, 4)
    ('approx-dp', 0.2367)
    >>> unit, mu = budget_scale(pf.PureDP(1.0))
    >>> unit, round(mu, 4)
    ('pure-dp', 1.232)
    """
    if isinstance(budget, GDP):
        return "gdp", float(budget.mu)
    if isinstance(budget, ApproxDP) and budget.delta > 0:
        return "approx-dp", float(accounting.gdp_mu_for(budget.epsilon, budget.delta))
    if isinstance(budget, (ApproxDP, PureDP)):
        return "pure-dp", float(accounting.pure_dp_gdp_mu(budget.epsilon))
    raise ConfigError("expected pf.GDP, pf.ApproxDP or pf.PureDP", path="budget")


def bounds_kind(bounds: object) -> str:
    """``"interval"`` for scalar bounds (low, high), ``"ball"`` for an L2 ball, ``"none"`` without bounds.

    The map measured each statistic with one kind of bounds; ``auto`` uses only measurements of the kind
    a call gives (a mean of vectors is not a mean of scalars).
    """
    value = as_bounds(bounds)
    if isinstance(value, Bounds):
        return "interval"
    if isinstance(value, L2Ball):
        return "ball"
    return "none"


def statistic_key(name: str, options: Mapping[str, Any]) -> str:
    """A readable key of a statistic with its options: ``"mean"``, ``"quantile(q=0.9)"``."""
    if not options:
        return name
    return f"{name}(" + ", ".join(f"{key}={options[key]!r}" for key in sorted(options)) + ")"


def frozen_tree(value: Any) -> Any:
    """A read-only copy of nested plain data: mappings become ``MappingProxyType``, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): frozen_tree(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(frozen_tree(v) for v in value)
    return value


@attrs.frozen
class Measurement:
    """One method on one data variant of a map cell.

    Attributes
    ----------
    variant : str
        The variant's label (``"poisson-w10"``).
    trials : int
        Trials run (fewer than planned when the cell was stopped early; 0 when refused).
    covered : int
        Trials whose released set contained the truth.
    coverage, coverage_se : float or None
        ``covered / trials`` (a trial that released nothing is a miss) and ``sqrt(c (1 - c) / trials)``.
    stopped : int or None
        The trial count after which the cell was stopped because it could no longer pass; None if it was not.
    failure_rate : float
        Share of trials that released nothing.
    mean_width, width_se : float or None
        Mean width of the released intervals and its SE.
    rel_width : float or None
        Mean over trials of the width over the non-private reference's width on the same data.
    refused : str or None
        Why the method refused this budget (or n) on this variant.
    """

    variant: str
    trials: int = 0
    covered: int = 0
    coverage: float | None = None
    coverage_se: float | None = None
    stopped: int | None = None
    failure_rate: float = 0.0
    mean_width: float | None = None
    width_se: float | None = None
    rel_width: float | None = None
    refused: str | None = None

    def passes(self, nominal: float) -> bool:
        """Whether this variant passes :func:`coverage_passes` (not refused, not stopped early)."""
        return self.refused is None and self.stopped is None and coverage_passes(self.covered, self.trials, nominal)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the measurement's JSON form)."""
        return attrs.asdict(self)


def is_candidate(measurements: Sequence[Measurement], variants: Sequence[str], nominal: float) -> bool:
    """The candidate rule (:data:`CANDIDATE_RULE`): every variant of the cell measured and passing.

    Parameters
    ----------
    measurements : sequence of Measurement
        The method's measurements in the cell, one per variant.
    variants : sequence of str
        The variants the cell is measured on (the design's, so a variant not yet measured fails).
    nominal : float
        The nominal coverage.
    """
    by_variant = {m.variant: m for m in measurements}
    return bool(variants) and all(v in by_variant and by_variant[v].passes(nominal) for v in variants)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


@attrs.frozen
class MapEntry:
    """One method in one cell of the map.

    In a ``/2`` map the entry holds one :class:`Measurement` per variant and its cell-level fields summarise
    them: ``coverage``, ``coverage_se`` and ``trials`` are those of the variant with the lowest coverage
    (``worst_variant``), ``rel_width`` and ``mean_width`` the means over the variants that have one,
    ``failure_rate`` the largest; :meth:`from_measurements` computes them and the candidate flag. A ``/1``
    entry has no measurements and its flag is the file's.

    Attributes
    ----------
    label : str
        The method's label in the experiment (``"median/privsub"``).
    method : mapping
        The method part as a table, ``{"name": ..., **options}``.
    parts : mapping
        Sampler, mechanism or accountant tables the experiment gave the method (empty for defaults).
    trials : int
        Trials run (of the worst variant; 0 when refused).
    coverage, coverage_se : float or None
        Share of trials whose interval contained the truth (a trial that released nothing counts as a
        miss) and its SE ``sqrt(c (1 - c) / trials)``: the minimum over the variants, and that variant's SE.
    failure_rate : float
        Share of trials that released nothing (a failed PTR test, a sampler rejection); the largest over variants.
    mean_width, width_se : float or None
        Mean width of the released intervals and its SE (mean over variants, SE of that mean).
    rel_width : float or None
        Width divided by the non-private reference's width on the same data: the mean over variants of each
        variant's mean ratio.
    candidate : bool
        Whether it passed the coverage rule on every variant (:data:`CANDIDATE_RULE`).
    refused : str or None
        Why the method refused the cell's budget or statistic when its pipeline was built (on every variant).
    worst_variant : str or None
        The variant with the lowest coverage.
    measurements : tuple of Measurement
        One per variant measured (``/2`` maps).
    missing : tuple of str
        Variants of the cell the method was not (yet) measured on: a partial map.
    """

    label: str
    method: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    parts: Mapping[str, Any] = attrs.field(converter=frozen_mapping, factory=dict)
    trials: int = 0
    coverage: float | None = None
    coverage_se: float | None = None
    failure_rate: float = 0.0
    mean_width: float | None = None
    width_se: float | None = None
    rel_width: float | None = None
    candidate: bool = False
    refused: str | None = None
    worst_variant: str | None = None
    measurements: tuple[Measurement, ...] = ()
    missing: tuple[str, ...] = ()

    @classmethod
    def from_measurements(
        cls,
        label: str,
        method: Mapping[str, Any],
        parts: Mapping[str, Any],
        measurements: Sequence[Measurement],
        variants: Sequence[str],
        nominal: float,
    ) -> MapEntry:
        """An entry of a ``/2`` map: its cell-level fields and candidate flag from the per-variant measurements."""
        order = {v: i for i, v in enumerate(variants)}
        ms = tuple(sorted(measurements, key=lambda m: (order.get(m.variant, len(order)), m.variant)))
        measured = [m for m in ms if m.refused is None and m.trials > 0 and m.coverage is not None]
        refusals = [m.refused for m in ms if m.refused is not None]
        missing = tuple(v for v in variants if v not in {m.variant for m in ms})
        candidate = is_candidate(ms, variants, nominal)
        if not measured:
            refused = refusals[0] if refusals and len(refusals) == len(ms) else None
            return cls(label, method, parts, refused=refused, measurements=ms, missing=missing, candidate=candidate)
        worst = min(measured, key=lambda m: (m.coverage, order.get(m.variant, len(order))))
        widths = [m.mean_width for m in measured if m.mean_width is not None]
        width_ses = [m.width_se for m in measured if m.width_se is not None]
        rels = [m.rel_width for m in measured if m.rel_width is not None]
        width_se = math.sqrt(math.fsum(se * se for se in width_ses)) / len(width_ses) if width_ses else None
        return cls(
            label=label,
            method=method,
            parts=parts,
            trials=worst.trials,
            coverage=worst.coverage,
            coverage_se=worst.coverage_se,
            failure_rate=max(m.failure_rate for m in measured),
            mean_width=_mean(widths),
            width_se=width_se if len(width_ses) == len(widths) else None,
            rel_width=_mean(rels),
            candidate=candidate,
            refused=None,
            worst_variant=worst.variant,
            measurements=ms,
            missing=missing,
        )

    @property
    def name(self) -> str:
        """The registered method name."""
        return str(self.method["name"])

    def failing(self, nominal: float) -> tuple[Measurement, ...]:
        """The measured variants that do not pass the coverage rule (refused ones included)."""
        return tuple(m for m in self.measurements if not m.passes(nominal))

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the entry's JSON form; a ``/1`` entry without the ``/2`` fields)."""
        out = attrs.asdict(self, recurse=False)
        out["method"], out["parts"] = dict(self.method), dict(self.parts)
        if not self.measurements and not self.missing and self.worst_variant is None:
            for key in ("worst_variant", "measurements", "missing"):
                del out[key]
            return out
        out["measurements"] = [m.to_dict() for m in self.measurements]
        out["missing"] = list(self.missing)
        return out


@attrs.frozen
class MapCell:
    """One (statistic, n, budget) cell: its entries, candidates first in rank order.

    Attributes
    ----------
    statistic : str
        The statistic's key (:func:`statistic_key`).
    n : int
        Sample size.
    budget : str
        The budget level's label (``"mu=1"``).
    budget_table : mapping
        The budget, as a pipeline table (``{"unit": "gdp", "mu": 1.0}``).
    unit : str
        ``"gdp"``, ``"approx-dp"`` or ``"pure-dp"`` (:func:`budget_scale`).
    mu : float
        The budget's GDP scale (:func:`budget_scale`).
    nominal : float
        The nominal coverage the methods ran at.
    entries : tuple of MapEntry
        Candidates best first, then the other methods (measured, then refused).
    variants : tuple of str
        The data variants the cell is measured on (``/2`` maps; empty for ``/1``).
    """

    statistic: str
    n: int
    budget: str
    budget_table: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    unit: str
    mu: float
    nominal: float
    entries: tuple[MapEntry, ...]
    variants: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every entry was measured (or refused) on every variant."""
        return not any(entry.missing for entry in self.entries)

    @property
    def settled(self) -> bool:
        """Whether no further measurement can change the cell's candidates or their ranking: every entry is
        measured (or refused) on every variant, or already fails the coverage rule on a variant it was
        measured on, so that its missing variants cannot make it a candidate."""
        return all(not entry.missing or entry.failing(self.nominal) for entry in self.entries)

    def candidates(self) -> tuple[MapEntry, ...]:
        """The candidates, best first."""
        return tuple(entry for entry in self.entries if entry.candidate)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the cell's JSON form)."""
        return {
            "statistic": self.statistic,
            "n": self.n,
            "budget": self.budget,
            "budget_table": dict(self.budget_table),
            "unit": self.unit,
            "mu": self.mu,
            "nominal": self.nominal,
            **(
                {"variants": list(self.variants), "complete": self.complete, "settled": self.settled}
                if self.variants
                else {}
            ),
            "ranking": [entry.label for entry in self.candidates()],
            "entries": [entry.to_dict() for entry in self.entries],
        }


@attrs.frozen
class Located:
    """Where a query falls in the map (:meth:`MethodMap.locate`).

    Attributes
    ----------
    cell : MapCell
        The nearest cell.
    statistic : str
        The key of the query's statistic.
    unit, mu : str, float
        The query budget's unit and GDP scale (:func:`budget_scale`).
    distance : float
        ``hypot(ln(n / n_cell), ln(mu / mu_cell))``.
    extrapolated : bool
        Whether n or mu lies outside the range of the cells searched.
    notes : tuple of str
        Where the query differs from the cell in kind rather than in size (other statistic options,
        another budget unit).
    """

    cell: MapCell
    statistic: str
    unit: str
    mu: float
    distance: float
    extrapolated: bool
    notes: tuple[str, ...]


def _field(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if key not in table:
        raise ConfigError("missing", path=f"{path}.{key}")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ConfigError("has the wrong type", path=f"{path}.{key}")
    return value


def _optional_number(table: Mapping[str, Any], key: str, path: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError("expected a number or null", path=f"{path}.{key}")
    return float(value)


def _optional_int(table: Mapping[str, Any], key: str, path: str) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError("expected a non-negative integer or null", path=f"{path}.{key}")
    return value


def _refused(table: Mapping[str, Any], path: str) -> str | None:
    refused = table.get("refused")
    if refused is not None and not isinstance(refused, str):
        raise ConfigError("expected a string or null", path=f"{path}.refused")
    return refused


def _measurement(table: Any, path: str) -> Measurement:
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table", path=path)
    trials = _optional_int(table, "trials", path) or 0
    covered = _optional_int(table, "covered", path) or 0
    if covered > trials:
        raise ConfigError("covered exceeds trials", path=f"{path}.covered")
    return Measurement(
        variant=_field(table, "variant", str, path),
        trials=trials,
        covered=covered,
        coverage=_optional_number(table, "coverage", path),
        coverage_se=_optional_number(table, "coverage_se", path),
        stopped=_optional_int(table, "stopped", path),
        failure_rate=_optional_number(table, "failure_rate", path) or 0.0,
        mean_width=_optional_number(table, "mean_width", path),
        width_se=_optional_number(table, "width_se", path),
        rel_width=_optional_number(table, "rel_width", path),
        refused=_refused(table, path),
    )


def _entry(table: Any, path: str, variants: tuple[str, ...] | None, nominal: float) -> MapEntry:
    """An entry; ``variants`` is None for a ``/1`` map (candidate as flagged), else the cell's variants."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table", path=path)
    method = _field(table, "method", Mapping, path)
    if not isinstance(method.get("name"), str):
        raise ConfigError("expected a table with a 'name'", path=f"{path}.method")
    refused = _refused(table, path)
    candidate = table.get("candidate", False)
    if not isinstance(candidate, bool):
        raise ConfigError("expected true or false", path=f"{path}.candidate")
    label = _field(table, "label", str, path)
    parts = table.get("parts") or {}
    if variants is not None:
        raw = _field(table, "measurements", list, path)
        measurements = [_measurement(m, f"{path}.measurements[{i}]") for i, m in enumerate(raw)]
        entry = MapEntry.from_measurements(label, method, parts, measurements, variants, nominal)
        if "candidate" in table and entry.candidate != candidate:
            raise ConfigError("disagrees with the candidate rule applied to the measurements", path=f"{path}.candidate")
        return entry
    return MapEntry(
        label=label,
        method=method,
        parts=parts,
        trials=int(table.get("trials", 0)),
        coverage=_optional_number(table, "coverage", path),
        coverage_se=_optional_number(table, "coverage_se", path),
        failure_rate=_optional_number(table, "failure_rate", path) or 0.0,
        mean_width=_optional_number(table, "mean_width", path),
        width_se=_optional_number(table, "width_se", path),
        rel_width=_optional_number(table, "rel_width", path),
        candidate=candidate,
        refused=refused,
    )


def _cell(table: Any, path: str, version: int) -> MapCell:
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table", path=path)
    unit = _field(table, "unit", str, path)
    if unit not in _UNITS:
        raise ConfigError(f"expected one of {', '.join(_UNITS)}", path=f"{path}.unit")
    mu = float(_field(table, "mu", (int, float), path))
    n = _field(table, "n", int, path)
    if not (math.isfinite(mu) and mu > 0) or n < 1:
        raise ConfigError("n and mu must be positive", path=path)
    entries = _field(table, "entries", list, path)
    nominal = float(_field(table, "nominal", (int, float), path))
    variants: tuple[str, ...] | None = None
    if version >= 2:
        raw = _field(table, "variants", list, path)
        if not raw or not all(isinstance(v, str) for v in raw):
            raise ConfigError("expected a non-empty list of variant labels", path=f"{path}.variants")
        variants = tuple(raw)
    return MapCell(
        statistic=_field(table, "statistic", str, path),
        n=n,
        budget=_field(table, "budget", str, path),
        budget_table=_field(table, "budget_table", Mapping, path),
        unit=unit,
        mu=mu,
        nominal=nominal,
        entries=tuple(_entry(e, f"{path}.entries[{i}]", variants, nominal) for i, e in enumerate(entries)),
        variants=variants or (),
    )


@attrs.frozen
class MethodMap:
    """The method map: measured cells, and where a query falls among them.

    Build with :meth:`read` (a JSON file), :meth:`from_dict`, or :meth:`shipped` (the map in the package).

    Attributes
    ----------
    source : str
        Where it was read from.
    info : mapping
        Everything else in the file: the command that produced it, the seed, trials, data, rule, ...
    statistics : mapping
        Statistic key -> ``{"name": ..., "options": {...}, "bounds": ...}``.
    cells : tuple of MapCell
        In file order (the tie-break of :meth:`locate`).
    """

    source: str
    info: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    statistics: Mapping[str, Mapping[str, Any]] = attrs.field(converter=frozen_mapping)
    cells: tuple[MapCell, ...]

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any], source: str = "<mapping>") -> MethodMap:
        """Validate and read a map in its JSON form; errors are ``ConfigError`` with a path under ``map``."""
        if not isinstance(payload, Mapping):
            raise ConfigError("expected a JSON object", path="map")
        if payload.get("format") not in MAP_FORMATS:
            raise ConfigError(
                f"not a method map (expected format {' or '.join(repr(f) for f in MAP_FORMATS)})", path="map.format"
            )
        version = MAP_FORMATS.index(payload["format"]) + 1
        statistics = _field(payload, "statistics", Mapping, "map")
        for key, table in statistics.items():
            if not isinstance(table, Mapping) or not isinstance(table.get("name"), str):
                raise ConfigError("expected a table with a 'name'", path=f"map.statistics.{key}")
        raw_cells = _field(payload, "cells", list, "map")
        cells = tuple(_cell(c, f"map.cells[{i}]", version) for i, c in enumerate(raw_cells))
        for cell in cells:
            if cell.statistic not in statistics:
                raise ConfigError(f"unknown statistic key '{cell.statistic}'", path="map.cells")
        if version >= 2:
            known = _field(payload, "variants", Mapping, "map")
            for i, cell in enumerate(cells):
                for variant in cell.variants:
                    if variant not in known:
                        raise ConfigError(f"unknown variant '{variant}'", path=f"map.cells[{i}].variants")
        info = {k: v for k, v in payload.items() if k not in ("statistics", "cells")}
        return cls(source, info, {k: dict(v) for k, v in statistics.items()}, cells)

    @classmethod
    def read(cls, path: str | Path) -> MethodMap:
        """Read a map file (JSON)."""
        file = Path(path)
        try:
            payload = json.loads(file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {file.name} ({exc.strerror})", path="map") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file.name} is not valid JSON: {exc}", path="map") from exc
        return cls.from_dict(payload, str(path))

    @staticmethod
    def shipped() -> MethodMap:
        """The map shipped with privframe (``privframe/maps/method-map.json``), read once."""
        return _shipped()

    @staticmethod
    def shipped_for(name: str, order_statistic: bool = False) -> MethodMap:
        """The shipped map with only the cells of statistic ``name`` (and, with ``order_statistic``, of every
        measured order statistic) and every statistic's table, read once per statistic.

        Every question ``method="auto"`` asks about one statistic (:meth:`statistic_keys`, :meth:`methods_for`,
        :meth:`locate`, the cells of the located statistic) has the same answer here as on the whole map: the
        cells kept are those of every key :meth:`statistic_keys` can return for ``name``, in file order. It
        reads an eighth of the mean's file, not all of it (the whole map is 200 cells of 13 730 measurements).
        """
        return _shipped_for(name, order_statistic)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what :meth:`from_dict` reads)."""
        return {
            **dict(self.info),
            "statistics": {k: dict(v) for k, v in self.statistics.items()},
            "cells": [cell.to_dict() for cell in self.cells],
        }

    def statistic_names(self) -> tuple[str, ...]:
        """The registered names of the statistics measured, sorted."""
        return tuple(sorted({str(table["name"]) for table in self.statistics.values()}))

    def data_variants(self) -> Mapping[str, Mapping[str, Any]]:
        """The data variants of a ``/2`` map by label (``{"data": ..., "bounds": ..., "statistics": ...}``)."""
        value = self.info.get("variants", {})
        return value if isinstance(value, Mapping) else {}

    def statistic_keys(self, name: str, bounds: str | None = None, quantile: float | None = None) -> tuple[str, ...]:
        """Keys of the measured statistics called ``name`` (with bounds of kind ``bounds``, if given and the
        map records the statistic's bounds), and, when ``quantile`` is given, of every measured order statistic
        (a statistic whose map entry records a ``quantile`` level: ``median`` is ``quantile(q=0.5)``)."""
        return tuple(
            key
            for key, table in self.statistics.items()
            if (table["name"] == name or (quantile is not None and table.get("quantile") is not None))
            and (bounds is None or _bounds_kind_of(table) in (None, bounds))
        )

    def methods_for(self, name: str, bounds: str | None = None, quantile: float | None = None) -> tuple[MapEntry, ...]:
        """One entry per distinct method measured (not refused) for statistic ``name``, in file order."""
        keys = set(self.statistic_keys(name, bounds, quantile))
        seen: dict[str, MapEntry] = {}
        for cell in self.cells:
            if cell.statistic in keys:
                for entry in cell.entries:
                    if entry.refused is None:
                        seen.setdefault(json.dumps([entry.method, entry.parts], sort_keys=True, default=repr), entry)
        return tuple(seen.values())

    def locate(
        self,
        name: str,
        options: Mapping[str, Any],
        n: int,
        budget: Budget,
        bounds: str | None = None,
        quantile: float | None = None,
    ) -> Located | None:
        """The cell nearest to a query, from public information only; None if the statistic is not in the map.

        The statistic must have the same name and, when ``bounds`` (a :func:`bounds_kind`) is given, the
        same kind of bounds; among its keys the one with the same options is used, else the one with
        the fewest differing options (then the nearest numeric options, then the key). An order statistic
        (``quantile``: its level, ``traits.quantile``) is matched by level among every measured order statistic
        instead: the same level is the same statistic (``median`` is ``quantile(q=0.5)``), else the nearest
        level. The cells searched are those of the budget's unit when there are any (else all of the
        statistic's cells), and the nearest in ``(ln n, ln mu)`` wins; ties go to the earlier cell in the file.
        """
        keys = self.statistic_keys(name, bounds, quantile)
        if not keys:
            return None
        wanted = statistic_key(name, options)

        def distance(key: str) -> tuple[int, float, bool, str]:
            table = self.statistics[key]
            level = table.get("quantile")
            if quantile is not None and isinstance(level, (int, float)):
                gap = abs(float(level) - quantile)
                return (0 if gap < 1e-12 else 1, gap, table["name"] != name, key)
            return (*_option_distance(table.get("options", {}), options), False, key)

        key = min(keys, key=distance)
        notes: list[str] = []
        if key != wanted:
            same = distance(key)[0] == 0 and quantile is not None
            if same:
                notes.append(f"the map measured {key}, the same order statistic as {wanted}; its cells are used")
            else:
                notes.append(f"the map measured {key}, not {wanted}; its cells are used")
        unit, mu = budget_scale(budget)
        cells = [cell for cell in self.cells if cell.statistic == key]
        same_unit = [cell for cell in cells if cell.unit == unit]
        if same_unit:
            cells = same_unit
        else:
            notes.append(f"the map has no {unit} cells for {key}; the nearest cell of any unit is used")
        if not cells:
            return None
        distances = [math.hypot(math.log(n / cell.n), math.log(mu / cell.mu)) for cell in cells]
        best = min(range(len(cells)), key=lambda i: (distances[i], i))
        ns, mus = [cell.n for cell in cells], [cell.mu for cell in cells]
        outside = not (min(ns) <= n <= max(ns)) or not (min(mus) * (1 - 1e-9) <= mu <= max(mus) * (1 + 1e-9))
        return Located(cells[best], key, unit, mu, distances[best], outside, tuple(notes))


def _bounds_kind_of(table: Mapping[str, Any]) -> str | None:
    """The kind of bounds a statistic was measured with (``bounds_kind`` in ``/2``, ``bounds`` in ``/1``)."""
    kind = table.get("bounds_kind")
    if isinstance(kind, str):
        return kind
    if "bounds" in table:
        return bounds_kind(table["bounds"])
    return None


def _option_distance(measured: Mapping[str, Any], asked: Mapping[str, Any]) -> tuple[int, float]:
    differing, gap = 0, 0.0
    for key in set(measured) | set(asked):
        a, b = measured.get(key), asked.get(key)
        if a == b:
            continue
        differing += 1
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        gap += abs(float(a) - float(b)) if numbers else math.inf  # type: ignore[arg-type]
    return differing, gap


_SHIPPED_SOURCE = "privframe/" + "/".join(_SHIPPED)


@functools.cache
def _shipped_payload() -> Mapping[str, Any]:
    resource = resources.files("privframe").joinpath(*_SHIPPED)
    try:
        payload = json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the shipped method map cannot be read ({type(exc).__name__})", path="map") from exc
    if not isinstance(payload, Mapping):
        raise ConfigError("expected a JSON object", path="map")
    return payload


@functools.cache
def _shipped() -> MethodMap:
    return MethodMap.from_dict(_shipped_payload(), _SHIPPED_SOURCE)


@functools.cache
def _shipped_for(name: str, order_statistic: bool) -> MethodMap:
    payload = _shipped_payload()
    statistics = payload.get("statistics")
    cells = payload.get("cells")
    if not isinstance(statistics, Mapping) or not isinstance(cells, list):
        return _shipped()  # from_dict names what is wrong
    keys = {
        key
        for key, table in statistics.items()
        if isinstance(table, Mapping)
        and (table.get("name") == name or (order_statistic and table.get("quantile") is not None))
    }
    kept = [cell for cell in cells if isinstance(cell, Mapping) and cell.get("statistic") in keys]
    return MethodMap.from_dict({**payload, "cells": kept}, _SHIPPED_SOURCE)


def describe_entry(entry: MapEntry) -> dict[str, Any]:
    """The public numbers of a map entry, for ``res.diagnostics["auto"]`` (per variant too, in a ``/2`` map)."""
    out: dict[str, Any] = {
        "method": entry.name,
        "label": entry.label,
        "coverage": entry.coverage,
        "coverage_se": entry.coverage_se,
        "failure_rate": entry.failure_rate,
        "mean_width": entry.mean_width,
        "rel_width": entry.rel_width,
        "trials": entry.trials,
    }
    if entry.measurements:
        out["worst_variant"] = entry.worst_variant
        out["variants"] = {
            m.variant: {"coverage": m.coverage, "trials": m.trials, "rel_width": m.rel_width, "stopped": m.stopped}
            for m in entry.measurements
        }
    return out


def _describe_failure(m: Measurement) -> str:
    if m.refused is not None:
        return f"{m.variant} (refused: {m.refused})"
    if m.stopped is not None:
        coverage = "-" if m.coverage is None else f"{m.coverage:.3f}"
        return f"{m.variant} (coverage {coverage}, stopped after {m.stopped} trials: it could no longer pass)"
    if m.coverage is None or m.trials == 0:
        return f"{m.variant} (no trial ran)"
    return f"{m.variant} (coverage {m.coverage:.3f} ± {m.coverage_se or 0.0:.3f} over {m.trials} trials)"


def excluded_reason(entry: MapEntry, nominal: float) -> str:
    """Why a non-candidate entry of a cell is not a candidate."""
    if entry.refused is not None:
        return f"refused when built: {entry.refused}"
    if entry.measurements or entry.missing:
        parts = []
        failing = entry.failing(nominal)
        if failing:
            total = len(entry.measurements) + len(entry.missing)
            parts.append(
                f"below {nominal:g} - 2 SE (at nominal) on {len(failing)} of {total} variants: "
                + ", ".join(_describe_failure(m) for m in failing)
            )
        if entry.missing:
            parts.append("not measured on " + ", ".join(entry.missing))
        return "; ".join(parts) or "did not pass the candidate rule"
    if entry.coverage is None or entry.coverage_se is None:
        return "no trial released an interval"
    return f"coverage {entry.coverage:.3f} ± {entry.coverage_se:.3f} did not pass the map's candidate rule"


def diagnostics(
    located: Located,
    *,
    method_map: MethodMap,
    n: int,
    budget: Budget,
    confidence: float,
    chosen: MapEntry,
    passed_over: Sequence[tuple[MapEntry, str]],
    spelling: str | None = None,
) -> Mapping[str, Any]:
    """``res.diagnostics["auto"]``: the query, the cell, its candidates and exclusions, and the rule (read-only).

    ``spelling``: why the budget was spelled as another that implies it (the query's ``budget`` is then the
    one the chosen method runs at); it is stated under ``"spelling"`` and in the notes.
    """
    cell = located.cell
    notes = list(located.notes)
    if spelling is not None:
        notes.append(spelling)
    if not math.isclose(confidence, cell.nominal):
        notes.append(f"the map was measured at {cell.nominal:g} confidence; its ranking is used at {confidence:g}")
    if located.extrapolated:
        notes.append("n or the budget lies outside the map's grid: the nearest cell is an extrapolation")
    skipped = {entry.label: reason for entry, reason in passed_over}
    info = method_map.info
    out = {
        "chosen": chosen.name,
        "rule": f"{SELECTION_RULE}; {CANDIDATE_RULE}",
        "query": {
            "statistic": located.statistic,
            "n": n,
            "budget": str(budget),
            "unit": located.unit,
            "mu": located.mu,
            "confidence": confidence,
        },
        "cell": {
            "statistic": cell.statistic,
            "n": cell.n,
            "budget": cell.budget,
            "unit": cell.unit,
            "mu": cell.mu,
            "nominal": cell.nominal,
            "distance": located.distance,
        },
        "extrapolated": located.extrapolated,
        "candidates": [
            {**describe_entry(entry), **({"skipped": skipped[entry.label]} if entry.label in skipped else {})}
            for entry in cell.candidates()
        ],
        "excluded": [
            {"method": entry.name, "label": entry.label, "reason": excluded_reason(entry, cell.nominal)}
            for entry in cell.entries
            if not entry.candidate
        ],
        "notes": notes,
        **({"spelling": spelling} if spelling is not None else {}),
        "map": {
            "source": method_map.source,
            **{k: info[k] for k in ("format", "command", "seed", "trials") if k in info},
            **({"variants": list(cell.variants)} if cell.variants else {}),
        },
    }
    result: Mapping[str, Any] = frozen_tree(out)
    return result
