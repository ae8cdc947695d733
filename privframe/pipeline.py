"""Pipelines: a frozen composition of named parts plus parameters, from code, a dict, TOML or JSON.

A pipeline is the single path every front door goes through: ``pf.confidence_interval`` builds one from
its keywords, ``privframe run`` from a file. Resolution checks every name and option eagerly, so a typo
fails with a ``ConfigError`` naming its path (``pipeline.sampler.m``) before any data is touched.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe import engine
from privframe._frozen import frozen_mapping
from privframe._rng import RngLike, as_seed_sequence
from privframe.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.data import as_data
from privframe.errors import BudgetError, ConfigError
from privframe.protocols import Method, Parts
from privframe.registry import Kind, PluginRegistry, registry
from privframe.results import IntervalResult, RegionResult
from privframe.types import Bounds, L2Ball, as_bounds

__all__ = ["Part", "Pipeline", "ResolvedPipeline"]

_PART_KINDS: tuple[Kind, ...] = ("sampler", "mechanism", "accountant")
_TOP_KEYS = ("method", "statistic", "sampler", "mechanism", "accountant", "budget", "bounds", "confidence")


@attrs.frozen
class Part:
    """A registered part by name, with its options.

    Parameters
    ----------
    name : str
        The registered name (``"wor"``, ``"mean"``...).
    options : mapping
        Keyword options passed to the part's factory.
    """

    name: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=frozen_mapping, hash=False)

    @classmethod
    def coerce(cls, value: Part | str | Mapping[str, Any], path: str) -> Part:
        """Accept a ``Part``, a bare name, or a table ``{"name": ..., **options}``."""
        if isinstance(value, Part):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            if "name" not in value:
                raise ConfigError(f"{path}.name: missing (the registered name of the part)")
            name = value["name"]
            if not isinstance(name, str):
                raise ConfigError(f"{path}.name: expected a string")
            return cls(name, {k: v for k, v in value.items() if k != "name"})
        raise ConfigError(f"{path}: expected a name or a table with a 'name' key")

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., **options}``."""
        return {"name": self.name, **self.options}


@attrs.frozen
class ResolvedPipeline:
    """A pipeline with every part instantiated and validated."""

    method: Method
    parts: Parts
    budget: Budget | None
    confidence: float
    names: Mapping[str, str]


def _check_confidence(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError(f"{path}: expected a number in (0, 1)")
    conf = float(value)
    if not (math.isfinite(conf) and 0.0 < conf < 1.0):
        raise ConfigError(f"{path}: must satisfy 0 < confidence < 1")
    return conf


def _check_budget(value: object, path: str) -> Budget | None:
    if value is None or isinstance(value, (GDP, ApproxDP, PureDP)):
        return value
    if isinstance(value, Mapping):
        return _budget_from_table(value, path)
    raise ConfigError(f"{path}: expected pf.GDP, pf.ApproxDP, pf.PureDP, None, or a table")


_BUDGET_UNITS: dict[str, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    "gdp": (GDP, ("mu",), ("delta",)),
    "approx-dp": (ApproxDP, ("epsilon", "delta"), ()),
    "pure-dp": (PureDP, ("epsilon",), ()),
}


def _budget_from_table(table: Mapping[str, Any], path: str) -> Budget:
    unit = table.get("unit")
    if unit not in _BUDGET_UNITS:
        raise ConfigError(f"{path}.unit: expected one of {', '.join(_BUDGET_UNITS)}")
    cls, required, optional = _BUDGET_UNITS[unit]
    for key in table:
        if key != "unit" and key not in required + optional:
            raise ConfigError(f"{path}.{key}: unknown key for a '{unit}' budget")
    for key in required:
        if key not in table:
            raise ConfigError(f"{path}.{key}: missing")
    args = [table[k] for k in required]
    kwargs = {k: table[k] for k in optional if k in table}
    try:
        budget: Budget = cls(*args, **kwargs)
    except BudgetError as exc:
        raise ConfigError(f"{path}.{exc}") from exc
    return budget


def _budget_to_table(budget: Budget | None) -> dict[str, Any] | None:
    if budget is None:
        return None
    if isinstance(budget, GDP):
        table: dict[str, Any] = {"unit": "gdp", "mu": budget.mu}
        if budget.delta:
            table["delta"] = budget.delta
        return table
    if isinstance(budget, ApproxDP):
        return {"unit": "approx-dp", "epsilon": budget.epsilon, "delta": budget.delta}
    return {"unit": "pure-dp", "epsilon": budget.epsilon}


def _check_bounds(value: object, path: str) -> Bounds | L2Ball | None:
    try:
        return as_bounds(value)
    except ConfigError as exc:
        message = str(exc)
        if path == "bounds" or not message.startswith("bounds"):
            raise
        raise ConfigError(f"{path}{message[len('bounds') :]}") from exc


@attrs.frozen
class Pipeline:
    """A frozen recipe: method, statistic, optional sampler/mechanism/accountant, budget, bounds, confidence.

    Build one with :meth:`build` (flat keyword options routed to the parts that declare them),
    :meth:`from_dict`, or :meth:`from_config` (TOML or JSON). ``run`` returns the same result types as
    :func:`privframe.confidence_interval`.

    Examples
    --------
    >>> import privframe as pf
    >>> pipe = pf.Pipeline.from_dict({"method": "cr-gs", "statistic": "mean", "bounds": [0, 1],
    ...                               "budget": {"unit": "gdp", "mu": 1.0}, "sampler": {"name": "wor", "B": 200}})
    >>> pipe.sampler.options["B"]
    200
    """

    method: Part
    statistic: Part
    budget: Budget | None = None
    bounds: Bounds | L2Ball | None = attrs.field(default=None, converter=as_bounds)
    confidence: float = 0.9
    sampler: Part | None = None
    mechanism: Part | None = None
    accountant: Part | None = None
    prefix: str = attrs.field(default="", eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.resolve()

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        statistic: Part | str | Mapping[str, Any],
        *,
        method: Part | str | Mapping[str, Any],
        budget: Budget | None,
        bounds: object = None,
        confidence: float = 0.9,
        sampler: Part | str | Mapping[str, Any] | None = None,
        mechanism: Part | str | Mapping[str, Any] | None = None,
        accountant: Part | str | Mapping[str, Any] | None = None,
        reg: PluginRegistry | None = None,
        **options: Any,
    ) -> Pipeline:
        """Build from the front door's arguments; each extra keyword goes to every part that declares it."""
        reg = reg or registry
        parts: dict[str, Part | None] = {
            "method": Part.coerce(method, "method"),
            "statistic": Part.coerce(statistic, "statistic"),
        }
        for kind, value in (("sampler", sampler), ("mechanism", mechanism), ("accountant", accountant)):
            parts[kind] = None if value is None else Part.coerce(value, kind)
        method_part = parts["method"]
        assert method_part is not None
        method_entry = reg.get("method", method_part.name, path="method")
        defaults: Mapping[str, str] = getattr(method_entry.factory, "defaults", {})
        uses: frozenset[str] = getattr(method_entry.factory, "uses", frozenset())
        for kind in _PART_KINDS:
            if parts[kind] is None and kind in uses and kind in defaults:
                parts[kind] = Part(defaults[kind])
        routed: dict[str, dict[str, Any]] = {kind: {} for kind in parts}
        for key, value in options.items():
            takers = [
                kind
                for kind, part in parts.items()
                if part is not None and key in reg.get(cast_kind(kind), part.name, path=kind).options()
            ]
            if not takers:
                names = ", ".join(f"{kind} '{p.name}'" for kind, p in parts.items() if p is not None)
                raise ConfigError(f"{key}: no part of this pipeline declares this option ({names})")
            for kind in takers:
                routed[kind][key] = value
        merged = {
            kind: None if part is None else Part(part.name, {**part.options, **routed[kind]})
            for kind, part in parts.items()
        }
        method_final, statistic_final = merged["method"], merged["statistic"]
        assert method_final is not None
        assert statistic_final is not None
        return cls(
            method=method_final,
            statistic=statistic_final,
            budget=_check_budget(budget, "budget"),
            bounds=_check_bounds(bounds, "bounds"),
            confidence=_check_confidence(confidence, "confidence"),
            sampler=merged["sampler"],
            mechanism=merged["mechanism"],
            accountant=merged["accountant"],
        )

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], *, prefix: str = "") -> Pipeline:
        """Build from a mapping (a ``{"pipeline": {...}}`` wrapper is accepted and sets the path prefix)."""
        if not isinstance(config, Mapping):
            raise ConfigError(f"{prefix or 'pipeline'}: expected a table")
        if set(config) == {"pipeline"}:
            return cls.from_dict(config["pipeline"], prefix=_join(prefix, "pipeline"))
        for key in config:
            if key not in _TOP_KEYS:
                raise ConfigError(f"{_join(prefix, str(key))}: unknown key (expected one of {', '.join(_TOP_KEYS)})")
        for key in ("method", "statistic"):
            if key not in config:
                raise ConfigError(f"{_join(prefix, key)}: missing")

        def part(key: str) -> Part | None:
            value = config.get(key)
            return None if value is None else Part.coerce(value, _join(prefix, key))

        method, statistic = part("method"), part("statistic")
        assert method is not None
        assert statistic is not None
        return cls(
            method=method,
            statistic=statistic,
            budget=_check_budget(config.get("budget"), _join(prefix, "budget")),
            bounds=_check_bounds(config.get("bounds"), _join(prefix, "bounds")),
            confidence=_check_confidence(config.get("confidence", 0.9), _join(prefix, "confidence")),
            sampler=part("sampler"),
            mechanism=part("mechanism"),
            accountant=part("accountant"),
            prefix=prefix,
        )

    @classmethod
    def from_config(cls, path: str | Path) -> Pipeline:
        """Build from a ``.toml`` or ``.json`` file."""
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"config: cannot read {file.name} ({exc.strerror})") from exc
        try:
            if file.suffix.lower() == ".json":
                config = json.loads(text)
            elif file.suffix.lower() == ".toml":
                config = tomllib.loads(text)
            else:
                raise ConfigError("config: expected a .toml or .json file")
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"config: {file.name} is not valid {file.suffix[1:].upper()}: {exc}") from exc
        return cls.from_dict(config)

    def to_dict(self) -> dict[str, Any]:
        """The pipeline as a plain mapping that :meth:`from_dict` reads back."""
        out: dict[str, Any] = {"method": self.method.to_dict(), "statistic": self.statistic.to_dict()}
        for kind in _PART_KINDS:
            part = getattr(self, kind)
            if part is not None:
                out[kind] = part.to_dict()
        budget = _budget_to_table(self.budget)
        if budget is not None:
            out["budget"] = budget
        if isinstance(self.bounds, Bounds):
            out["bounds"] = [self.bounds.low, self.bounds.high]
        elif isinstance(self.bounds, L2Ball):
            out["bounds"] = {"radius": self.bounds.radius}
        out["confidence"] = self.confidence
        return out

    # -- resolution and running ---------------------------------------------------------------------

    def resolve(self, reg: PluginRegistry | None = None) -> ResolvedPipeline:
        """Instantiate every part; raises ``ConfigError`` naming the path of the first problem."""
        reg = reg or registry
        path = self._path
        method_entry = reg.get("method", self.method.name, path=path("method"))
        method: Method = method_entry.create(self.method.options, path("method"))
        statistic = reg.create("statistic", self.statistic.name, self.statistic.options, path=path("statistic"))
        names = {"method": self.method.name, "statistic": self.statistic.name}
        created: dict[str, Any] = {}
        for kind in _PART_KINDS:
            part: Part | None = getattr(self, kind)
            if part is not None and kind not in method.uses:
                raise ConfigError(f"{path(kind)}: method '{self.method.name}' does not use a {kind}")
            if part is None and kind in method.uses:
                default = method.defaults.get(kind)
                if default is None and kind in getattr(method, "optional", frozenset()):
                    continue  # the method picks this part itself (e.g. privsub: the statistic's default mechanism)
                if default is None:
                    raise ConfigError(f"{path(kind)}: method '{self.method.name}' needs a {kind}")
                part = Part(default)
            if part is None:
                continue
            options = dict(part.options)
            if kind == "sampler":
                options = {**{k: v for k, v in method.sampler_defaults.items() if k not in options}, **options}
                options = {
                    k: v
                    for k, v in options.items()
                    if k in reg.get("sampler", part.name, path=path(kind)).options() or k in part.options
                }
            created[kind] = reg.create(kind, part.name, options, path=path(kind))
            names[kind] = part.name
        if method.private and self.budget is None:
            raise BudgetError(f"{path('budget')}: method '{self.method.name}' is private and needs a budget")
        if not method.private and self.budget is not None:
            raise BudgetError(
                f"{path('budget')}: method '{self.method.name}' is a non-private reference; pass budget=None"
            )
        if self.bounds is None and engine.requires_bounds(statistic):
            raise ConfigError(f"{path('bounds')}: statistic '{self.statistic.name}' needs public bounds")
        parts = Parts(statistic=statistic, bounds=self.bounds, **created)
        return ResolvedPipeline(method, parts, self.budget, self.confidence, MappingProxyType(names))

    def run(self, x: npt.ArrayLike, rng: RngLike = None) -> IntervalResult | RegionResult:
        """Run on data ``x``; a scalar statistic gives an ``IntervalResult``, a vector one a ``RegionResult``.

        ``rng=None`` draws fresh OS entropy, the only right choice for a real release: anyone who knows
        the seed can subtract the noise.
        """
        result = self.run_raw(x, rng)
        if isinstance(result, RegionResult) and result.dimension == 1:
            return result.to_interval()
        return result

    def run_raw(self, x: npt.ArrayLike, rng: RngLike = None) -> IntervalResult | RegionResult:
        """Run and return the method's own result type (a ball stays a ball even when d = 1)."""
        resolved = self.resolve()
        data = as_data(x)
        seed = as_seed_sequence(rng)
        prepared = engine.prepare_data(resolved.parts.statistic, data, resolved.parts.bounds)
        try:
            return resolved.method.run(prepared, resolved.parts, resolved.budget, resolved.confidence, seed)
        except ConfigError as exc:
            # Parts raise with paths relative to the pipeline ("sampler.m: ..."); add the config's prefix.
            head = str(exc).split(":", 1)[0].split(".", 1)[0]
            if self.prefix and head in _TOP_KEYS:
                raise ConfigError(self._path(str(exc))) from exc
            raise

    def _path(self, key: str) -> str:
        return _join(self.prefix, key)


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def cast_kind(kind: str) -> Kind:
    """Narrow a part key to a registry kind."""
    if kind not in ("statistic", "sampler", "mechanism", "accountant", "method"):
        raise ConfigError(f"kind: unknown part kind '{kind}'")
    return kind  # type: ignore[return-value]
