"""Resolving a pipeline: every part instantiated once, its options routed, its contracts checked.

:func:`resolve` is the only place parts are created for a pipeline. It routes each flat option to every part
that declares it, fills in the method's default parts (and the statistic's default mechanism), and checks the
whole combination (:func:`privframe.plugin.contracts.check_parts`) from declarations and public inputs only,
so a mismatch fails with a ``ConfigError`` naming what works before any data are read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np

from privframe._typing import Array, frozen_mapping
from privframe.bounds import Bounds, L2Ball
from privframe.data.distributed import DistributedData
from privframe.errors import BudgetError, ConfigError, PluginError, join_path
from privframe.pipeline.parts import Part
from privframe.plugin.context import RunContext
from privframe.plugin.contracts import check_parts
from privframe.plugin.evaluation import Coordinates, Preparation, coordinates
from privframe.plugin.method import Method
from privframe.plugin.protocols import DecomposableStatistic, Statistic
from privframe.plugin.registration import PluginEntry
from privframe.plugin.registry import PluginRegistry
from privframe.plugin.traits import MethodNeeds, default_mechanism, traits_of
from privframe.privacy.budgets import Budget
from privframe.resampling.blocks import RunOptions

__all__ = ["PART_KINDS", "RESOLUTION_ULPS", "Resolution", "ResolvedPipeline", "check_resolution", "resolve"]

RESOLUTION_ULPS = 16
"""How many doubles near the bounds one record's influence must span for a release to be representable."""

PartKind = Literal["sampler", "mechanism", "accountant"]
PART_KINDS: tuple[PartKind, ...] = ("sampler", "mechanism", "accountant")


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

    @property
    def needs(self) -> MethodNeeds:
        """What the method declared it needs."""
        return self.method.needs

    @property
    def coordinates(self) -> Coordinates:
        """Where the statistic is computed: shifted by the public lower bound when it is equivariant."""
        return coordinates(self.statistic, self.bounds, shift=self.needs.shift)

    def context(self, data: Array, seed: np.random.SeedSequence, *, region: bool = False) -> RunContext[Any]:
        """The run context for validated data: shifted to the statistic's coordinates and prepared (clipped)."""
        preparation = Preparation(self.statistic, self.coordinates)
        return RunContext(
            method=self.names["method"],
            statistic=self.statistic,
            data=preparation(data),
            parts=self.parts,
            names=self.names,
            bounds=preparation.coordinates.bounds,
            confidence=self.confidence,
            coordinates=preparation.coordinates,
            seed=seed,
            options=self.options,
            requested=self.budget,
            region=region,
        )

    def distributed_context(
        self, source: DistributedData, seed: np.random.SeedSequence, reg: PluginRegistry, *, region: bool = False
    ) -> RunContext[Any]:
        """The run context for a Dask array that stays on the workers (``docs/cluster.md``).

        A method whose needs declare ``distributed=True`` accepts it with a decomposable statistic, one that
        declares ``distributed="own"`` (it reads the blocks itself) with any statistic it accepts; the
        statistic's checks of bounds and shape run here on an empty array of the data's shape, so a
        misconfiguration fails before any value is read.
        """
        if not self.needs.distributed:
            raise _refuse_distributed(f"method '{self.names['method']}' needs the data in memory", reg, "method")
        if self.needs.distributed is True and not isinstance(self.statistic, DecomposableStatistic):
            raise _refuse_distributed(f"statistic '{self.statistic.name}' is not decomposable", reg, "statistic")
        empty = self.context(np.zeros((0, *source.shape[1:])), seed, region=region)
        return attrs.evolve(empty, distributed=source)


def _refuse_distributed(reason: str, reg: PluginRegistry, path: str) -> ConfigError:
    """Why a Dask array cannot be used, and the registered statistics and methods that accept one."""
    statistics = [
        entry.name
        for entry in reg.entries("statistic")
        if all(callable(getattr(entry.factory, attribute, None)) for attribute in ("partial_batch", "combine"))
    ]
    methods, own = [], []
    for entry in reg.entries("method"):
        try:
            accepts = entry.create({}, "method").needs.distributed
        except (ConfigError, PluginError):
            continue
        if accepts is True:
            methods.append(entry.name)
        elif accepts == "own":
            own.append(entry.name)
    reading = f", and with the methods that read the blocks themselves ({', '.join(own)})" if own else ""
    return ConfigError(
        f"{reason}; distributed data (a Dask array) work with decomposable statistics "
        f"({', '.join(statistics) or 'none registered'}) and the methods that accept them "
        f"({', '.join(methods) or 'none registered'}){reading}; otherwise pass a numpy array",
        path=path,
    )


@attrs.frozen
class Resolution:
    """What resolving produces: the resolved parts, and every part with the options routed to it."""

    resolved: ResolvedPipeline
    specs: Mapping[str, Part | None]


def _declared(entry: PluginEntry, options: Mapping[str, Any]) -> dict[str, Any]:
    names = entry.options()
    return {key: value for key, value in options.items() if key in names}


def _needs(method: Method, name: str) -> MethodNeeds:
    needs = method.needs
    if not isinstance(needs, MethodNeeds):
        raise PluginError(f"method '{name}'.needs must be a privframe.plugin.MethodNeeds")
    return needs


def resolve(
    specs: Mapping[str, Part | None],
    extra: Mapping[str, Any],
    *,
    budget: Budget | None,
    bounds: Bounds | L2Ball | None,
    confidence: float,
    options: RunOptions,
    reg: PluginRegistry,
    prefix: str,
) -> Resolution:
    """Instantiate every part once, routing each ``extra`` option to every part that declares it, and check them.

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

    def create(kind: str, spec: Part, defaults: Mapping[str, Any], *, named: bool = True) -> Any:
        entry = reg.get(kind, spec.name, path=path(kind))  # type: ignore[arg-type]
        mine = _declared(entry, extra)
        taken.update(mine)
        if named or mine:  # a default part is recorded only when options were routed to it
            routed[kind] = Part(spec.name, {**spec.options, **mine})
        return entry.create({**_declared(entry, defaults), **spec.options, **mine}, path(kind))

    method: Method = create("method", method_spec, {})
    statistic: Statistic = create("statistic", statistic_spec, {})
    name = method_spec.name
    needs = _needs(method, name)
    if needs.private and budget is None:
        raise BudgetError(f"method '{name}' is private and needs a budget", path=path("budget"))
    if not needs.private and budget is not None:
        raise BudgetError(f"method '{name}' is a non-private reference; pass budget=None", path=path("budget"))
    traits = traits_of(statistic)
    if bounds is None and traits.requires_bounds:
        hint = getattr(statistic, "bounds_help", None)
        raise ConfigError(
            f"statistic '{statistic_spec.name}' needs public bounds" + (f": {hint}" if isinstance(hint, str) else ""),
            path=path("bounds"),
        )
    try:
        defaults = dict(method.defaults(budget, confidence))
    except BudgetError as exc:  # the method refuses the budget: in a pipeline file that is the prefix's budget
        raise exc.with_prefix(prefix) from exc
    part_defaults = {key: value for key, value in defaults.items() if key not in PART_KINDS}
    parts: dict[str, object] = {}
    names = {"method": name, "statistic": statistic_spec.name}
    for kind in PART_KINDS:
        spec = specs.get(kind)
        wanted = needs.part(kind)
        if spec is not None and wanted is None:
            raise ConfigError(f"method '{name}' does not use a {kind}", path=path(kind))
        if wanted is None:
            continue
        named = spec is not None
        if spec is None:
            default = _default_part(kind, defaults, statistic, budget)
            if default is None:
                if kind in defaults:
                    continue  # the method does without this part this time
                article = "an" if kind[0] in "aeiou" else "a"
                raise ConfigError(f"method '{name}' needs {article} {kind}", path=path(kind))
            spec = Part(default)
        part = create(kind, spec, part_defaults, named=named)
        if not isinstance(part, wanted):
            needed = " or ".join(protocol.__name__ for protocol in wanted)
            raise ConfigError(f"method '{name}' cannot use {kind} '{spec.name}' (it needs a {needed})", path=path(kind))
        parts[kind] = part
        names[kind] = spec.name
    for key in extra:
        if key not in taken:
            described = ", ".join(
                f"{kind} '{names[kind]}'" for kind in ("method", "statistic", *PART_KINDS) if kind in names
            )
            raise ConfigError(f"no part of this pipeline declares this option ({described})", path=key)
    try:
        check_parts(name, needs, statistic, parts, names, budget, reg)
    except ConfigError as exc:
        # A default accountant follows a mechanism the user named: the method's default (cr-gs spends a small-delta
        # (eps, delta) budget on Laplace noise, composed by approx-dp) would not compose a named Gaussian's GDP
        # guarantee, while another registered accountant does.
        fallback = None
        if exc.path == "accountant" and specs.get("accountant") is None and specs.get("mechanism") is not None:
            fallback = _accountant_that_fits(name, needs, statistic, parts, names, budget, reg, part_defaults, create)
        if fallback is None:
            raise exc.with_prefix(prefix) from exc
        parts["accountant"], names["accountant"] = fallback
    resolved = ResolvedPipeline(method, statistic, parts, names, budget, bounds, confidence, options)
    return Resolution(resolved, {kind: routed.get(kind) for kind in ("method", "statistic", *PART_KINDS)})


def _accountant_that_fits(
    name: str,
    needs: MethodNeeds,
    statistic: Statistic,
    parts: Mapping[str, object],
    names: Mapping[str, str],
    budget: Budget | None,
    reg: PluginRegistry,
    part_defaults: Mapping[str, Any],
    create: Any,
) -> tuple[object, str] | None:
    """The first registered accountant with which the parts pass their contracts, or None."""
    for candidate in reg.names("accountant"):
        if candidate == names.get("accountant"):
            continue
        accountant = create("accountant", Part(candidate), part_defaults, named=False)
        trial_parts, trial_names = {**parts, "accountant": accountant}, {**names, "accountant": candidate}
        try:
            check_parts(name, needs, statistic, trial_parts, trial_names, budget, reg)
        except ConfigError:
            continue
        return accountant, candidate
    return None


def _default_part(kind: str, defaults: Mapping[str, object], statistic: Statistic, budget: Budget | None) -> str | None:
    """The method's default part of ``kind``, else (for a mechanism) the statistic's own default."""
    if kind in defaults:
        value = defaults[kind]
        if value is not None and not isinstance(value, str):
            raise PluginError(f"a method's default {kind} must be a registered name or None")
        return value
    if kind == "mechanism" and budget is not None:
        return default_mechanism(traits_of(statistic), budget)
    return None


def check_resolution(resolved: ResolvedPipeline, n: int) -> None:
    """Refuse bounds so far from 0 that one record's influence is below the resolution of the doubles there.

    A translation-equivariant statistic is computed on data shifted by the public lower bound, so its value
    and its noise are exact however far the bounds are from 0; but the release is reported back in the data's
    coordinates, where doubles near ``M = max(|low|, |high|)`` are ``ulp(M)`` apart. When a record moves the
    statistic by less than ``RESOLUTION_ULPS`` of them (``sensitivity(n) < 16 ulp(M)``), the interval would be
    rounded to a handful of doubles: refused, with what works. Public inputs only.
    """
    bounds = resolved.bounds
    coordinates = resolved.coordinates
    if not coordinates.offset or not isinstance(bounds, Bounds):
        return
    statistic = resolved.statistic
    try:
        influence = statistic.sensitivity(n, coordinates.bounds)
    except (ArithmeticError, ConfigError, TypeError, ValueError):
        return
    if influence is None:
        return
    far = max(abs(bounds.low), abs(bounds.high))
    spacing = math.ulp(far)
    if math.isfinite(influence) and float(influence) < RESOLUTION_ULPS * spacing:
        raise ConfigError(
            f"the bounds are so far from 0 that the doubles there are {spacing:g} apart, while one record moves "
            f"'{statistic.name}' by {influence:.3g} at n = {n}: the interval cannot be represented; subtract a "
            f"public offset from the data first (e.g. {bounds.low:.17g}) and give the bounds relative to it "
            f"(0, {bounds.width:.17g})",
            path="bounds",
        )
