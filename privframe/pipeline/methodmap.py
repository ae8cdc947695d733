"""``method="auto"``: the method map, and how a cell of it is chosen from public information only.

The *method map* is data: for each statistic, sample size n and budget of the experiment ``method-map``
it lists every method with its measured coverage (with its Monte Carlo SE) and mean width, or the
reason it refused the budget. A method is a *candidate* in a cell when its coverage is at least
``nominal - SE`` with SE the Monte Carlo SE at the nominal level (stricter than 2 SE: a method that truly
covers 85% passed a 2-SE rule at 100 trials half the time; a trial that released nothing counts as a
miss); candidates are ranked by their mean
width relative to the non-private reference on the same data. The map ships as package data
(``privframe/maps/method-map.json``) and is regenerated with ``privframe experiment method-map --write-map
FILE`` (``docs/experiments.md``).

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
    "SELECTION_RULE",
    "Located",
    "MapCell",
    "MapEntry",
    "MethodMap",
    "bounds_kind",
    "budget_scale",
    "describe_entry",
    "diagnostics",
    "excluded_reason",
    "frozen_tree",
    "statistic_key",
]

AUTO = "auto"
"""The method name that asks privframe to choose (reserved: a plugin method of this name is never reached)."""

MAP_FORMAT = "privframe-method-map/1"
"""The ``format`` field of a method-map file."""

CANDIDATE_RULE = (
    "a method is a candidate in a cell when its coverage >= nominal - SE, SE = sqrt(nominal (1 - nominal) / "
    "trials), the Monte Carlo SE of a method that covers exactly at the nominal level (a trial that released "
    "nothing counts as a miss); candidates are ranked by mean width relative to the "
    "non-private reference on the same data (by mean width when there is no reference)"
)
CANDIDATE_RULE_SHORT = "measured coverage at least nominal - 1 SE"
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
class MapEntry:
    """One method in one cell of the map.

    Attributes
    ----------
    label : str
        The method's label in the experiment (``"median/privsub"``).
    method : mapping
        The method part as a table, ``{"name": ..., **options}``.
    parts : mapping
        Sampler, mechanism or accountant tables the experiment gave the method (empty for defaults).
    trials : int
        Trials run (0 when refused).
    coverage, coverage_se : float or None
        Share of trials whose interval contained the truth (a trial that released nothing counts as a
        miss) and its SE ``sqrt(c (1 - c) / trials)``.
    failure_rate : float
        Share of trials that released nothing (a failed PTR test, a sampler rejection).
    mean_width, width_se : float or None
        Mean width of the released intervals and its SE (sample SD over sqrt of the count).
    rel_width : float or None
        Mean over trials of the width divided by the non-private reference's width on the same data.
    candidate : bool
        Whether it passed the coverage rule (:data:`CANDIDATE_RULE`).
    refused : str or None
        Why the method refused the cell's budget or statistic when its pipeline was built.
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

    @property
    def name(self) -> str:
        """The registered method name."""
        return str(self.method["name"])

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the entry's JSON form)."""
        out = attrs.asdict(self)
        out["method"], out["parts"] = dict(self.method), dict(self.parts)
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
    """

    statistic: str
    n: int
    budget: str
    budget_table: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    unit: str
    mu: float
    nominal: float
    entries: tuple[MapEntry, ...]

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


def _entry(table: Any, path: str) -> MapEntry:
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table", path=path)
    method = _field(table, "method", Mapping, path)
    if not isinstance(method.get("name"), str):
        raise ConfigError("expected a table with a 'name'", path=f"{path}.method")
    refused = table.get("refused")
    if refused is not None and not isinstance(refused, str):
        raise ConfigError("expected a string or null", path=f"{path}.refused")
    candidate = table.get("candidate", False)
    if not isinstance(candidate, bool):
        raise ConfigError("expected true or false", path=f"{path}.candidate")
    return MapEntry(
        label=_field(table, "label", str, path),
        method=method,
        parts=table.get("parts") or {},
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


def _cell(table: Any, path: str) -> MapCell:
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
    return MapCell(
        statistic=_field(table, "statistic", str, path),
        n=n,
        budget=_field(table, "budget", str, path),
        budget_table=_field(table, "budget_table", Mapping, path),
        unit=unit,
        mu=mu,
        nominal=float(_field(table, "nominal", (int, float), path)),
        entries=tuple(_entry(e, f"{path}.entries[{i}]") for i, e in enumerate(entries)),
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
        if payload.get("format") != MAP_FORMAT:
            raise ConfigError(f"not a method map (expected format '{MAP_FORMAT}')", path="map.format")
        statistics = _field(payload, "statistics", Mapping, "map")
        for key, table in statistics.items():
            if not isinstance(table, Mapping) or not isinstance(table.get("name"), str):
                raise ConfigError("expected a table with a 'name'", path=f"map.statistics.{key}")
        cells = tuple(_cell(c, f"map.cells[{i}]") for i, c in enumerate(_field(payload, "cells", list, "map")))
        for cell in cells:
            if cell.statistic not in statistics:
                raise ConfigError(f"unknown statistic key '{cell.statistic}'", path="map.cells")
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

    def variants(self, name: str, bounds: str | None = None) -> tuple[str, ...]:
        """Keys of the measured statistics called ``name`` (with bounds of kind ``bounds``, if given and the
        map records the statistic's bounds)."""
        return tuple(
            key
            for key, table in self.statistics.items()
            if table["name"] == name
            and (bounds is None or "bounds" not in table or bounds_kind(table["bounds"]) == bounds)
        )

    def methods_for(self, name: str, bounds: str | None = None) -> tuple[MapEntry, ...]:
        """One entry per distinct method measured (not refused) for statistic ``name``, in file order."""
        keys = set(self.variants(name, bounds))
        seen: dict[str, MapEntry] = {}
        for cell in self.cells:
            if cell.statistic in keys:
                for entry in cell.entries:
                    if entry.refused is None:
                        seen.setdefault(json.dumps([entry.method, entry.parts], sort_keys=True, default=repr), entry)
        return tuple(seen.values())

    def locate(
        self, name: str, options: Mapping[str, Any], n: int, budget: Budget, bounds: str | None = None
    ) -> Located | None:
        """The cell nearest to a query, from public information only; None if the statistic is not in the map.

        The statistic must have the same name and, when ``bounds`` (a :func:`bounds_kind`) is given, the
        same kind of bounds; among its variants the one with the same options is used, else the one with
        the fewest differing options (then the nearest numeric options, then the key). The cells searched
        are those of the budget's unit when there are any (else all of the statistic's cells), and the
        nearest in ``(ln n, ln mu)`` wins; ties go to the earlier cell in the file.
        """
        variants = self.variants(name, bounds)
        if not variants:
            return None
        wanted = statistic_key(name, options)
        key = min(variants, key=lambda k: (_option_distance(self.statistics[k].get("options", {}), options), k))
        notes: list[str] = []
        if key != wanted:
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


@functools.cache
def _shipped() -> MethodMap:
    resource = resources.files("privframe").joinpath(*_SHIPPED)
    try:
        payload = json.loads(resource.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the shipped method map cannot be read ({type(exc).__name__})", path="map") from exc
    return MethodMap.from_dict(payload, "privframe/" + "/".join(_SHIPPED))


def describe_entry(entry: MapEntry) -> dict[str, Any]:
    """The public numbers of a map entry, for ``res.diagnostics["auto"]``."""
    return {
        "method": entry.name,
        "label": entry.label,
        "coverage": entry.coverage,
        "coverage_se": entry.coverage_se,
        "failure_rate": entry.failure_rate,
        "mean_width": entry.mean_width,
        "rel_width": entry.rel_width,
        "trials": entry.trials,
    }


def excluded_reason(entry: MapEntry, nominal: float) -> str:
    """Why a non-candidate entry of a cell is not a candidate."""
    if entry.refused is not None:
        return f"refused when built: {entry.refused}"
    if entry.coverage is None or entry.coverage_se is None:
        return "no trial released an interval"
    return f"coverage {entry.coverage:.3f} ± {entry.coverage_se:.3f} is below {nominal:g} - 1 SE (at nominal)"


def diagnostics(
    located: Located,
    *,
    method_map: MethodMap,
    n: int,
    budget: Budget,
    confidence: float,
    chosen: MapEntry,
    passed_over: Sequence[tuple[MapEntry, str]],
) -> Mapping[str, Any]:
    """``res.diagnostics["auto"]``: the query, the cell, its candidates and exclusions, and the rule (read-only)."""
    cell = located.cell
    notes = list(located.notes)
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
        "map": {"source": method_map.source, **{k: info[k] for k in ("command", "seed", "trials") if k in info}},
    }
    result: Mapping[str, Any] = frozen_tree(out)
    return result
