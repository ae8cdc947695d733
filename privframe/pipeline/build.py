"""Pipelines: a frozen composition of named parts plus parameters, from code, a dict, TOML or JSON.

A pipeline is the single path every front door goes through: ``pf.confidence_interval`` builds one from
its keywords, ``privframe run`` from a file. It is resolved once, when it is built: every name and option
is checked, every part instantiated and checked against what the method needs, so a typo fails with a
``ConfigError`` naming its path (``pipeline.sampler.m``) before any data is touched. Each run then hands
the method a :class:`~privframe.context.RunContext` and trusts it.

``method="auto"`` (:mod:`privframe.auto`) is checked when it is built too, but the method is chosen when
it runs, from n (the data's length, which is public) and the other public settings, never the data
values: :meth:`Pipeline.select` gives the pipeline of the chosen method.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe._rng import RngLike, as_seed_sequence
from privframe._typing import Array, frozen_mapping
from privframe.bounds import Bounds, L2Ball, as_bounds
from privframe.data.arrays import as_data
from privframe.data.distributed import DistributedData, as_distributed, is_dask_array
from privframe.errors import BudgetError, ConfigError, PluginError, PTRFailed, join_path
from privframe.pipeline import methodmap as auto
from privframe.plugin import evaluation
from privframe.plugin.context import RunContext
from privframe.plugin.evaluation import guarded
from privframe.plugin.method import Method
from privframe.plugin.protocols import (
    DecomposableStatistic,
    RangedStatistic,
    Sampler,
    Statistic,
    StatisticWithDefaultMechanism,
)
from privframe.plugin.registration import Kind, PluginEntry
from privframe.plugin.registry import PluginRegistry, registry
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table
from privframe.resampling.blocks import RunOptions
from privframe.results import IntervalResult, RegionResult

__all__ = ["Part", "Pipeline", "ResolvedPipeline"]

_PART_KINDS: tuple[Kind, ...] = ("sampler", "mechanism", "accountant")
_RUN_KEYS = ("memory_budget", "workers", "progress")
_TOP_KEYS = ("method", "statistic", *_PART_KINDS, "budget", "bounds", "confidence", *_RUN_KEYS)


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
                raise ConfigError("missing (the registered name of the part)", path=f"{path}.name")
            name = value["name"]
            if not isinstance(name, str):
                raise ConfigError("expected a string", path=f"{path}.name")
            return cls(name, {k: v for k, v in value.items() if k != "name"})
        raise ConfigError("expected a name or a table with a 'name' key", path=path)

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., **options}``."""
        return {"name": self.name, **self.options}


@attrs.frozen(eq=False)
class ResolvedPipeline:
    """A pipeline with every part instantiated and checked: what each run hands to the method.

    Attributes
    ----------
    method : Method
        The method, with its options.
    statistic : Statistic
        The statistic, with its options.
    parts : mapping
        The sampler, mechanism and accountant the method uses, by kind.
    names : mapping
        The registered name of the method, the statistic and every part.
    budget : Budget or None
        The total budget of one call (None for a non-private reference).
    bounds : Bounds, L2Ball or None
        The public bounds.
    confidence : float
        Nominal coverage.
    options : RunOptions
        Memory budget and worker threads.
    """

    method: Method
    statistic: Statistic
    parts: Mapping[str, object] = attrs.field(converter=frozen_mapping)
    names: Mapping[str, str] = attrs.field(converter=frozen_mapping)
    budget: Budget | None
    bounds: Bounds | L2Ball | None
    confidence: float
    options: RunOptions

    def context(self, data: Array, seed: np.random.SeedSequence) -> RunContext:
        """The run context for validated data: the statistic prepares (clips) them first."""
        prepared = evaluation.prepare_data(self.statistic, data, self.bounds)
        return RunContext(
            method=self.names["method"],
            statistic=self.statistic,
            data=prepared,
            parts=self.parts,
            names=self.names,
            bounds=self.bounds,
            confidence=self.confidence,
            seed=seed,
            options=self.options,
            requested=self.budget,
        )

    def distributed_context(
        self, source: DistributedData, seed: np.random.SeedSequence, reg: PluginRegistry
    ) -> RunContext:
        """The run context for a Dask array that stays on the workers (``docs/cluster.md``).

        Only a decomposable statistic with a method declaring ``distributed = True`` accepts it; the
        statistic's checks of bounds and shape run here on an empty array of the data's shape, so a
        misconfiguration fails before any value is read.
        """
        method = self.names["method"]
        if not getattr(self.method, "distributed", False):
            raise _refuse_distributed(f"method '{method}' needs the data in memory", reg, "method")
        if not isinstance(self.statistic, DecomposableStatistic):
            raise _refuse_distributed(f"statistic '{self.statistic.name}' is not decomposable", reg, "statistic")
        return attrs.evolve(self.context(np.zeros((0, *source.shape[1:])), seed), distributed=source)


def _refuse_distributed(reason: str, reg: PluginRegistry, path: str) -> ConfigError:
    """Why a Dask array cannot be used, and the registered statistics and methods that accept one."""
    statistics = [
        entry.name
        for entry in reg.entries("statistic")
        if all(callable(getattr(entry.factory, attribute, None)) for attribute in ("partial_batch", "combine"))
    ]
    methods = [entry.name for entry in reg.entries("method") if getattr(entry.factory, "distributed", False) is True]
    return ConfigError(
        f"{reason}; distributed data (a Dask array) work with decomposable statistics "
        f"({', '.join(statistics) or 'none registered'}) and the methods that accept them "
        f"({', '.join(methods) or 'none registered'}); otherwise pass a numpy array",
        path=path,
    )


def _check_confidence(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError("expected a number in (0, 1)", path=path)
    conf = float(value)
    if not (math.isfinite(conf) and 0.0 < conf < 1.0):
        raise ConfigError("must satisfy 0 < confidence < 1", path=path)
    return conf


def _check_budget(value: object, path: str) -> Budget | None:
    if value is None or isinstance(value, (GDP, ApproxDP, PureDP)):
        return value
    if isinstance(value, Mapping):
        return budget_from_table(value, path)
    raise ConfigError("expected pf.GDP, pf.ApproxDP, pf.PureDP, None, or a table", path=path)


def _check_bounds(value: object, prefix: str) -> Bounds | L2Ball | None:
    try:
        return as_bounds(value)
    except ConfigError as exc:
        raise exc.with_prefix(prefix) from exc


def _run_options(values: Mapping[str, Any], prefix: str) -> RunOptions:
    try:
        return RunOptions(**{key: values[key] for key in _RUN_KEYS if key in values})
    except ConfigError as exc:
        raise exc.with_prefix(prefix) from exc


@attrs.frozen
class _Resolution:
    """What resolving a pipeline produces: the resolved parts and every part with its routed options."""

    resolved: ResolvedPipeline
    specs: Mapping[str, Part | None]


def _declared(entry: PluginEntry, options: Mapping[str, Any]) -> dict[str, Any]:
    names = entry.options()
    return {key: value for key, value in options.items() if key in names}


def _resolve(
    specs: Mapping[str, Part | None],
    extra: Mapping[str, Any],
    *,
    budget: Budget | None,
    bounds: Bounds | L2Ball | None,
    confidence: float,
    options: RunOptions,
    reg: PluginRegistry,
    prefix: str,
) -> _Resolution:
    """Instantiate every part once, routing each ``extra`` option to every part that declares it.

    A part's options are, from weakest to strongest: the method's defaults, the part's own table, the
    routed ``extra`` options.
    """

    def path(key: str) -> str:
        return join_path(prefix, key) or key

    method_spec, statistic_spec = specs["method"], specs["statistic"]
    assert method_spec is not None
    assert statistic_spec is not None
    routed: dict[str, Part | None] = {}
    taken: set[str] = set()

    def create(kind: Kind, spec: Part, defaults: Mapping[str, Any]) -> Any:
        entry = reg.get(kind, spec.name, path=path(kind))
        mine = _declared(entry, extra)
        taken.update(mine)
        routed[kind] = Part(spec.name, {**spec.options, **mine})
        return entry.create({**_declared(entry, defaults), **spec.options, **mine}, path(kind))

    method: Method = create("method", method_spec, {})
    statistic: Statistic = create("statistic", statistic_spec, {})
    name = method_spec.name
    if method.private and budget is None:
        raise BudgetError(f"method '{name}' is private and needs a budget", path=path("budget"))
    if not method.private and budget is not None:
        raise BudgetError(f"method '{name}' is a non-private reference; pass budget=None", path=path("budget"))
    if bounds is None and evaluation.requires_bounds(statistic):
        raise ConfigError(f"statistic '{statistic_spec.name}' needs public bounds", path=path("bounds"))
    defaults = dict(method.defaults(budget, confidence))
    part_defaults = {key: value for key, value in defaults.items() if key not in _PART_KINDS}
    needs = method.needs
    parts: dict[str, object] = {}
    names = {"method": name, "statistic": statistic_spec.name}
    for kind in _PART_KINDS:
        spec = specs.get(kind)
        if spec is not None and kind not in needs:
            raise ConfigError(f"method '{name}' does not use a {kind}", path=path(kind))
        if kind not in needs:
            continue
        if spec is None:
            default = _default_part(kind, defaults, statistic, budget)
            if default is None:
                if kind in defaults:
                    continue  # the method does without this part this time
                raise ConfigError(f"method '{name}' needs a {kind}", path=path(kind))
            spec = Part(default)
        part = create(kind, spec, part_defaults)
        need = needs[kind]
        wanted = need if isinstance(need, tuple) else (need,)
        if not isinstance(part, wanted):
            needed = " or ".join(protocol.__name__ for protocol in wanted)
            raise ConfigError(f"method '{name}' cannot use {kind} '{spec.name}' (it needs a {needed})", path=path(kind))
        parts[kind] = part
        names[kind] = spec.name
    if method.private and "accountant" not in parts:
        raise PluginError(f"method '{name}' is private but needs no accountant; every release must be charged")
    for key in extra:
        if key not in taken:
            described = ", ".join(f"{kind} '{part.name}'" for kind, part in routed.items() if part is not None)
            raise ConfigError(f"no part of this pipeline declares this option ({described})", path=key)
    resolved = ResolvedPipeline(method, statistic, parts, names, budget, bounds, confidence, options)
    return _Resolution(resolved, {kind: routed.get(kind) for kind in ("method", "statistic", *_PART_KINDS)})


def _default_part(kind: str, defaults: Mapping[str, object], statistic: Statistic, budget: Budget | None) -> str | None:
    """The method's default part of ``kind``, else (for a mechanism) the statistic's own default."""
    if kind in defaults:
        value = defaults[kind]
        if value is not None and not isinstance(value, str):
            raise PluginError(f"a method's default {kind} must be a registered name or None")
        return value
    if kind == "mechanism" and budget is not None and isinstance(statistic, StatisticWithDefaultMechanism):
        with evaluation.guarded("statistic", statistic.name, "default_mechanism"):
            value = statistic.default_mechanism(budget)
        if not isinstance(value, str):
            raise PluginError(f"statistic '{statistic.name}'.default_mechanism must return a mechanism name")
        return value
    return None


@attrs.frozen
class Pipeline:
    """A frozen recipe: method, statistic, optional sampler/mechanism/accountant, budget, bounds, confidence.

    Build one with :meth:`build` (flat keyword options routed to the parts that declare them),
    :meth:`from_dict`, or :meth:`from_config` (TOML or JSON). It is resolved once, on construction;
    ``run`` returns the same result types as :func:`privframe.confidence_interval`.

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
    options: RunOptions = attrs.field(factory=RunOptions)
    prefix: str = attrs.field(default="", eq=False, repr=False)
    registry: PluginRegistry | None = attrs.field(default=None, eq=False, repr=False)
    _resolved: ResolvedPipeline | None = attrs.field(init=False, eq=False, repr=False)
    _auto: Mapping[str, Any] | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.method.name == auto.AUTO:
            _check_auto(self)  # the method itself is chosen when n is known (select)
            object.__setattr__(self, "_resolved", None)
            return
        resolution = _resolve(
            self._specs(),
            {},
            budget=self.budget,
            bounds=self.bounds,
            confidence=self.confidence,
            options=self.options,
            reg=self.registry or registry,
            prefix=self.prefix,
        )
        object.__setattr__(self, "_resolved", resolution.resolved)

    def _specs(self) -> dict[str, Part | None]:
        return {
            "method": self.method,
            "statistic": self.statistic,
            **{kind: getattr(self, kind) for kind in _PART_KINDS},
        }

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
        """Build from the front door's arguments; each extra keyword goes to every part that declares it.

        ``memory_budget`` and ``workers`` are run options (:class:`~privframe.resampling.RunOptions`), not
        part options.
        """
        specs: dict[str, Part | None] = {
            "method": Part.coerce(method, "method"),
            "statistic": Part.coerce(statistic, "statistic"),
        }
        for kind, value in (("sampler", sampler), ("mechanism", mechanism), ("accountant", accountant)):
            specs[kind] = None if value is None else Part.coerce(value, kind)
        run_options = _run_options(options, "")
        extra = {key: value for key, value in options.items() if key not in _RUN_KEYS}
        checked_budget = _check_budget(budget, "budget")
        checked_bounds = _check_bounds(bounds, "")
        checked_confidence = _check_confidence(confidence, "confidence")
        method_part, statistic_part = specs["method"], specs["statistic"]
        if method_part is not None and statistic_part is not None and method_part.name == auto.AUTO:
            if extra:
                raise ConfigError(
                    "method 'auto' runs the chosen method with its own defaults; name a method to set part options",
                    path=next(iter(extra)),
                )
            return cls(
                method=method_part,
                statistic=statistic_part,
                budget=checked_budget,
                bounds=checked_bounds,
                confidence=checked_confidence,
                sampler=specs["sampler"],
                mechanism=specs["mechanism"],
                accountant=specs["accountant"],
                options=run_options,
                registry=reg,
            )
        resolution = _resolve(
            specs,
            extra,
            budget=checked_budget,
            bounds=checked_bounds,
            confidence=checked_confidence,
            options=run_options,
            reg=reg or registry,
            prefix="",
        )
        routed = resolution.specs
        values: dict[str, Any] = {
            "method": routed["method"],
            "statistic": routed["statistic"],
            "budget": checked_budget,
            "bounds": checked_bounds,
            "confidence": checked_confidence,
            **{kind: routed[kind] for kind in _PART_KINDS},
            "options": run_options,
            "prefix": "",
            "registry": reg,
            "_resolved": resolution.resolved,
            "_auto": None,
        }
        # Already resolved: fill the fields directly instead of resolving a second time in __init__.
        pipe = cls.__new__(cls)
        for field in attrs.fields(cls):
            object.__setattr__(pipe, field.name, values[field.name])
        return pipe

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], *, prefix: str = "", reg: PluginRegistry | None = None) -> Pipeline:
        """Build from a mapping (a ``{"pipeline": {...}}`` wrapper is accepted and sets the path prefix)."""
        if not isinstance(config, Mapping):
            raise ConfigError("expected a table", path=prefix or "pipeline")
        if set(config) == {"pipeline"}:
            return cls.from_dict(config["pipeline"], prefix=join_path(prefix, "pipeline") or "", reg=reg)
        for key in config:
            if key not in _TOP_KEYS:
                raise ConfigError(
                    f"unknown key (expected one of {', '.join(_TOP_KEYS)})", path=join_path(prefix, str(key))
                )
        for key in ("method", "statistic"):
            if key not in config:
                raise ConfigError("missing", path=join_path(prefix, key))

        def part(key: str) -> Part | None:
            value = config.get(key)
            return None if value is None else Part.coerce(value, join_path(prefix, key) or key)

        method, statistic = part("method"), part("statistic")
        assert method is not None
        assert statistic is not None
        return cls(
            method=method,
            statistic=statistic,
            budget=_check_budget(config.get("budget"), join_path(prefix, "budget") or "budget"),
            bounds=_check_bounds(config.get("bounds"), prefix),
            confidence=_check_confidence(config.get("confidence", 0.9), join_path(prefix, "confidence") or ""),
            sampler=part("sampler"),
            mechanism=part("mechanism"),
            accountant=part("accountant"),
            options=_run_options(config, prefix),
            prefix=prefix,
            registry=reg,
        )

    @classmethod
    def from_config(cls, path: str | Path, *, reg: PluginRegistry | None = None) -> Pipeline:
        """Build from a ``.toml`` or ``.json`` file."""
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read {file.name} ({exc.strerror})", path="config") from exc
        try:
            if file.suffix.lower() == ".json":
                config = json.loads(text)
            elif file.suffix.lower() == ".toml":
                config = tomllib.loads(text)
            else:
                raise ConfigError("expected a .toml or .json file", path="config")
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{file.name} is not valid {file.suffix[1:].upper()}: {exc}", path="config") from exc
        except RecursionError:
            raise ConfigError(f"{file.name} is nested too deeply to be a pipeline", path="config") from None
        return cls.from_dict(config, reg=reg)

    def to_dict(self) -> dict[str, Any]:
        """The pipeline as a plain mapping that :meth:`from_dict` reads back."""
        out: dict[str, Any] = {"method": self.method.to_dict(), "statistic": self.statistic.to_dict()}
        for kind in _PART_KINDS:
            part = getattr(self, kind)
            if part is not None:
                out[kind] = part.to_dict()
        budget = budget_to_table(self.budget)
        if budget is not None:
            out["budget"] = budget
        if isinstance(self.bounds, Bounds):
            out["bounds"] = [self.bounds.low, self.bounds.high]
        elif isinstance(self.bounds, L2Ball):
            out["bounds"] = {"radius": self.bounds.radius}
        out["confidence"] = self.confidence
        for key, value in attrs.asdict(self.options).items():
            if value != getattr(RunOptions(), key):
                out[key] = value
        return out

    # -- resolution and running ---------------------------------------------------------------------

    def resolve(self) -> ResolvedPipeline:
        """The resolved parts (computed once, when the pipeline was built).

        A ``method="auto"`` pipeline has none until its method is chosen: resolve ``select(n)`` instead.
        """
        if self._resolved is None:
            raise ConfigError(
                "method 'auto' chooses its method when it runs, from n; resolve pipe.select(n) instead", path="method"
            )
        return self._resolved

    @property
    def is_auto(self) -> bool:
        """Whether this is a ``method="auto"`` pipeline whose method is chosen when it runs."""
        return self._resolved is None

    def select(self, n: int) -> Pipeline:
        """The pipeline that runs on n records: this one, or for ``method="auto"`` the chosen method's.

        The choice uses only public information: the statistic, n, the budget and the confidence
        (:mod:`privframe.auto`). The chosen pipeline records why in its results'
        ``diagnostics["auto"]``. A ``ConfigError`` names the methods to choose from when no method of
        the map's nearest cell is valid and accepts the budget.

        Examples
        --------
        >>> import privframe as pf
        >>> pipe = pf.Pipeline.build("mean", method="auto", budget=pf.GDP(1.0), bounds=(0, 20))
        >>> pipe.is_auto, pipe.select(2000).is_auto
        (True, False)
        """
        if self._resolved is not None:
            return self
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigError("must be a positive integer", path="n")
        return _select_auto(self, int(n))

    def check(self, n: int) -> None:
        """Raise the ``ConfigError`` the method would raise on n records before reading them, if any.

        A method may refuse its sampler's design at n (an optional ``check_design(design, statistic)``,
        e.g. blbquant's ``min_block``); the design depends on n and the options only, so the refusal is
        public. A ``method="auto"`` pipeline checks the method it would choose.
        """
        _check_design(self.select(n), n)

    def run(self, x: npt.ArrayLike, rng: RngLike = None) -> IntervalResult | RegionResult:
        """Run on data ``x``; a scalar statistic gives an ``IntervalResult``, a vector one a ``RegionResult``.

        An interval is intersected with the statistic's value range when it declares one
        (:class:`~privframe.protocols.RangedStatistic`); :meth:`run_raw` returns the method's own set.

        ``rng=None`` draws fresh OS entropy, the only right choice for a real release: anyone who knows
        the seed can subtract the noise.

        A ``method="auto"`` pipeline first chooses its method from the data's length (:meth:`select`).
        """
        if self._resolved is None:
            data = as_distributed(x) if is_dask_array(x) else as_data(x)
            return self.select(data.shape[0]).run(data.array if isinstance(data, DistributedData) else data, rng)
        result = self.run_raw(x, rng)
        if isinstance(result, RegionResult) and result.dimension == 1:
            result = result.to_interval()
        if isinstance(result, IntervalResult):
            return within_range(result, self._resolved.statistic, self._resolved.bounds)
        return result

    def run_raw(self, x: npt.ArrayLike, rng: RngLike = None) -> IntervalResult | RegionResult:
        """Run and return the method's own result type (a ball stays a ball even when d = 1)."""
        resolved = self._resolved
        if resolved is None:
            data = as_distributed(x) if is_dask_array(x) else as_data(x)
            return self.select(data.shape[0]).run_raw(data.array if isinstance(data, DistributedData) else data, rng)
        if is_dask_array(x):
            ctx = resolved.distributed_context(as_distributed(x), as_seed_sequence(rng), self.registry or registry)
        else:
            ctx = resolved.context(as_data(x), as_seed_sequence(rng))
        try:
            # A floating-point warning raised on some data and not on their neighbours would be a release
            # (and an exception under warnings-as-errors): overflow and NaN are handled by the statistics
            # and mechanisms, never reported.
            with np.errstate(all="ignore"):
                result = resolved.method.run(ctx)
        except PTRFailed as exc:
            exc.ledger = ctx.ledger()
            raise
        except ConfigError as exc:
            # Parts raise with paths relative to the pipeline ("sampler.m"); add the config's prefix.
            head = (exc.path or "").split(".", 1)[0]
            if self.prefix and head in _TOP_KEYS:
                raise exc.with_prefix(self.prefix) from exc
            raise
        if self._auto is not None:
            result = attrs.evolve(result, diagnostics={**result.diagnostics, "auto": self._auto})
        return result


# -- method="auto" -----------------------------------------------------------------------------------


_BOUNDS_KINDS = {"interval": "scalar bounds (low, high)", "ball": "an L2Ball bound", "none": "no bounds"}


def _auto_path(pipe: Pipeline, key: str) -> str:
    return join_path(pipe.prefix, key) or key


def _auto_map(pipe: Pipeline) -> auto.MethodMap:
    """The map an auto pipeline chooses from: its ``map`` option (a file or a MethodMap), else the shipped one."""
    chosen = pipe.method.options.get("map")
    try:
        if chosen is None:
            return auto.MethodMap.shipped()
        if isinstance(chosen, auto.MethodMap):
            return chosen
        if isinstance(chosen, (str, Path)):
            return auto.MethodMap.read(chosen)
        raise ConfigError("expected the path of a method-map file", path="map")
    except ConfigError as exc:
        raise exc.with_prefix(_auto_path(pipe, "method")) from exc


def _concrete(pipe: Pipeline, entry: auto.MapEntry) -> Pipeline:
    """``pipe`` with the map entry's method (and any parts the map's experiment gave it); resolved here."""
    parts: dict[str, Part | None] = {
        kind: Part.coerce(entry.parts[kind], kind) if kind in entry.parts else None for kind in _PART_KINDS
    }
    method = Part(entry.name, {k: v for k, v in entry.method.items() if k != "name"})
    return attrs.evolve(
        pipe, method=method, sampler=parts["sampler"], mechanism=parts["mechanism"], accountant=parts["accountant"]
    )


def _accepted_methods(pipe: Pipeline) -> list[str]:
    """Registered private methods whose pipeline builds for this statistic, budget and bounds (any n)."""
    reg = pipe.registry or registry
    names = []
    for name in reg.names("method"):
        try:
            attrs.evolve(pipe, method=Part(name))
        except (BudgetError, ConfigError):
            continue
        names.append(name)
    return names


def _name_a_method(pipe: Pipeline) -> str:
    accepted = _accepted_methods(pipe)
    if not accepted:
        return f"no registered method accepts statistic '{pipe.statistic.name}' at {pipe.budget}"
    return f"name one of the methods that accept '{pipe.statistic.name}' at {pipe.budget}: {', '.join(accepted)}"


def _check_auto(pipe: Pipeline) -> None:
    """What an auto pipeline can check before n is known: its settings, and that some mapped method fits."""
    if pipe.budget is None:
        raise BudgetError(
            "method 'auto' chooses among private methods and needs a budget", path=_auto_path(pipe, "budget")
        )
    for kind in _PART_KINDS:
        if getattr(pipe, kind) is not None:
            raise ConfigError(
                "method 'auto' runs the chosen method with its default parts; name a method to choose its parts",
                path=_auto_path(pipe, kind),
            )
    for key in pipe.method.options:
        if key != "map":
            raise ConfigError(
                "method 'auto' takes one option, map (a method-map file)", path=_auto_path(pipe, f"method.{key}")
            )
    method_map = _auto_map(pipe)
    reg = pipe.registry or registry
    path = _auto_path(pipe, "statistic")
    statistic = reg.get("statistic", pipe.statistic.name, path=path).create(dict(pipe.statistic.options), path)
    if pipe.bounds is None and evaluation.requires_bounds(statistic):
        raise ConfigError(f"statistic '{pipe.statistic.name}' needs public bounds", path=_auto_path(pipe, "bounds"))
    bounds = auto.bounds_kind(pipe.bounds)
    measured = method_map.methods_for(pipe.statistic.name, bounds)
    if not measured:
        if method_map.variants(pipe.statistic.name):
            what = f"statistic '{pipe.statistic.name}' with {_BOUNDS_KINDS[bounds]}"
        else:
            what = f"statistic '{pipe.statistic.name}' (it has {', '.join(method_map.statistic_names())})"
        raise ConfigError(
            f"the method map has no measurements for {what}; {_name_a_method(pipe)}", path=_auto_path(pipe, "method")
        )
    for entry in measured:
        try:
            _concrete(pipe, entry)
        except (BudgetError, ConfigError):
            continue
        return
    raise ConfigError(
        f"no method the method map measured for '{pipe.statistic.name}' accepts {pipe.budget}; {_name_a_method(pipe)}",
        path=_auto_path(pipe, "method"),
    )


def _check_design(pipe: Pipeline, n: int) -> None:
    """Let the method refuse its sampler's design at n (an optional ``check_design(design, statistic)``).

    The design depends on n and the options only, so a refusal here is public, like the method's own.
    """
    resolved = pipe.resolve()
    check = getattr(resolved.method, "check_design", None)
    sampler = resolved.parts.get("sampler")
    if check is not None and isinstance(sampler, Sampler):
        check(sampler.design(n), resolved.statistic)


def _select_auto(pipe: Pipeline, n: int) -> Pipeline:
    """The best-ranked candidate of the nearest map cell that accepts the budget (public inputs only)."""
    method_map = _auto_map(pipe)
    budget = pipe.budget
    assert budget is not None  # checked when built
    located = method_map.locate(pipe.statistic.name, pipe.statistic.options, n, budget, auto.bounds_kind(pipe.bounds))
    if located is None:
        raise ConfigError(
            f"the method map has no measurements for statistic '{pipe.statistic.name}'; {_name_a_method(pipe)}",
            path=_auto_path(pipe, "method"),
        )
    cell = located.cell
    passed_over: list[tuple[auto.MapEntry, str]] = []
    for entry in cell.candidates():
        try:
            chosen = _concrete(pipe, entry)
            _check_design(chosen, n)
        except (BudgetError, ConfigError) as exc:
            passed_over.append((entry, f"refused this budget: {exc.message}"))
            continue
        why = auto.diagnostics(
            located,
            method_map=method_map,
            n=n,
            budget=budget,
            confidence=pipe.confidence,
            chosen=entry,
            passed_over=passed_over,
        )
        object.__setattr__(chosen, "_auto", why)
        return chosen
    skipped = {entry.label: reason for entry, reason in passed_over}
    measured = "; ".join(
        f"{entry.name}: {skipped.get(entry.label) or auto.excluded_reason(entry, cell.nominal)}"
        for entry in cell.entries
    )
    raise ConfigError(
        f"no method of the method map's nearest cell ({cell.statistic}, n = {cell.n}, {cell.budget}) covers "
        f"within 2 SE of nominal and accepts {budget} ({measured}); {_name_a_method(pipe)}",
        path=_auto_path(pipe, "method"),
    )


def within_range(result: IntervalResult, statistic: Statistic, bounds: Bounds | L2Ball | None) -> IntervalResult:
    """``result`` intersected with the statistic's value range (post-processing: the guarantee is unchanged).

    A NaN end (a release that carried no information) becomes the range's end, or an infinite one; an
    interval entirely outside the range becomes the whole range (``diagnostics["disjoint_from_range"]``),
    never a point. The unclipped ends stay in the diagnostics as ``unclipped``.
    """
    value_range = None
    if isinstance(statistic, RangedStatistic):  # a statistic without bounds (ks) may still have a range
        with guarded("statistic", statistic.name, "value_range"):
            value_range = statistic.value_range(bounds)
    low_end, high_end = value_range if value_range is not None else (-math.inf, math.inf)
    low = low_end if math.isnan(result.low) else min(max(result.low, low_end), high_end)
    high = high_end if math.isnan(result.high) else max(min(result.high, high_end), low_end)
    disjoint = result.high < low_end or result.low > high_end
    if disjoint:
        # The released interval misses the parameter space entirely: its intersection is empty, and a point
        # at the nearest end would be a silently degenerate interval. Report the whole range instead: still
        # post-processing of the release, and it says plainly that this release carried no information.
        low, high = low_end, high_end
    center = result.center if math.isnan(result.center) else min(max(result.center, low_end), high_end)
    if (low, high, center) == (result.low, result.high, result.center):
        return result
    diagnostics = {**result.diagnostics, "unclipped": (result.low, result.high, result.center)}
    if disjoint:
        diagnostics["disjoint_from_range"] = True
    if value_range is not None:
        diagnostics["value_range"] = (low_end, high_end)
    return attrs.evolve(result, low=low, high=high, center=center, diagnostics=diagnostics)
