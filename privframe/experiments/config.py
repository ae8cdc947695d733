"""Experiment configs: reading, validation (errors name their path) and overrides.

An experiment config is a TOML/JSON file or a mapping with one ``experiment`` table::

    [experiment]
    name = "seed1-mean"              # required
    title = "Bernoulli(0.05) mean"   # optional, shown in reports
    trials = 400                     # Monte Carlo trials per cell
    seed = 1                         # default seed (--seed overrides)
    confidence = 0.9                 # default nominal level of every method
    delta = 1e-6                     # reporting delta of the (epsilon, delta) column
    measure_memory = false           # peak traced memory per call (slower; the scale experiment)
    record_refused = false           # record a method that refuses a level's budget instead of failing
    common_random_numbers = false    # every method of a trial shares one run seed (resamples coincide)
    compare = "cr-gs-wor"            # optional: paired differences of every method against this label
    extends = "seed1-mean"           # optional: start from a built-in config (see _extend)
    early_stop = false               # stop a private cell once its misses rule out the coverage rule

    [experiment.data]                # the data-generating process
    generator = "bernoulli"
    p = 0.05

    # ... or, instead of [experiment.data], several data shapes (variants): every method runs on each
    [[experiment.variants]]
    label = "poisson-w10"            # a plain name, part of the cell key and of the data seed
    data = { generator = "shape", shape = "poisson", width = 10 }
    bounds = [0.0, 17.32]            # optional: default the generator's record_bounds()
    statistics = ["mean", "median"]  # optional: only methods of these statistics run on it

    [experiment.grid]
    n = [2000, 10000, 50000]
    [[experiment.grid.budgets]]      # privacy levels; see privframe.experiments.levels
    label = "mu=8"
    gdp = {unit = "gdp", mu = 8.0}

    [experiment.defaults]            # pipeline keys shared by every method (shallow merge)
    statistic = "mean"
    bounds = [0.0, 1.0]

    [experiment.methods.cr-gs-wor]   # one pipeline per label
    method = "cr-gs"
    sampler = {name = "wor"}
    budget = "gdp"                   # the budget slot it takes (omitted: non-private)
    reference = "subsampling-wor"    # the non-private reference of the same construction

    [experiment.report]              # optional: the size used by `privframe experiment all`
    trials = 200
    include = true                   # false: `all` skips it (method-map)

    [experiment.oracle_width]        # optional: a known width c * n^p, reported as a ratio
    coefficient = 0.2843
    power = -1.0

Part options may be scipy distributions written as tables, ``{scipy = "norm", scale = 1.5}`` (the
``reference`` of the ``ks`` statistic).

Variants. With ``[[experiment.variants]]`` each method runs once per variant that applies to its statistic:
the variant's data and bounds replace the experiment's data and the method's bounds, and the cell key, the
data seed and the truth follow the variant (:mod:`privframe.experiments.cells`). Early stopping
(``early_stop = true``) gives every private cell the coverage rule of the method map
(:func:`privframe.pipeline.methodmap.coverage_passes` at the method's confidence and the experiment's
trials): a cell stops after the trial whose misses already exceed what the rule allows at the full trial
count, so it stops exactly the cells that could no longer pass.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import BudgetError, ConfigError
from privframe.experiments.generators import Generator, make_generator, record_bounds
from privframe.experiments.levels import BudgetLevel, parse_level
from privframe.pipeline.build import Pipeline
from privframe.pipeline.parts import Part, load_json
from privframe.plugin.protocols import PopulationStatistic
from privframe.plugin.registry import registry

__all__ = [
    "ExperimentSpec",
    "MethodSpec",
    "Variant",
    "builtin_names",
    "load_experiment",
    "report_names",
]

_EXPERIMENT_KEYS = (
    "name",
    "title",
    "description",
    "trials",
    "seed",
    "confidence",
    "delta",
    "measure_memory",
    "record_refused",
    "common_random_numbers",
    "compare",
    "extends",
    "early_stop",
    "data",
    "variants",
    "grid",
    "defaults",
    "methods",
    "report",
    "oracle_width",
)
_PIPELINE_KEYS = (
    "method",
    "statistic",
    "sampler",
    "mechanism",
    "accountant",
    "bounds",
    "confidence",
    "memory_budget",
    "workers",
)
_METHOD_KEYS = (*_PIPELINE_KEYS, "budget", "reference", "truth")
_BUILTIN_ORDER = (
    "seed1-mean",
    "seed1-median",
    "seed1-ustat",
    "seed2-median",
    "seed2-logistic",
    "seed2-ks",
    "privboot-mean",
    "blbquant-grid",
    "scale-mean",
    "method-map",
    "method-map-quick",
)


@attrs.frozen
class MethodSpec:
    """One method of an experiment: a pipeline table plus the experiment's settings for it.

    Attributes
    ----------
    label : str
        Unique within the experiment (``"cr-gs-wor"``); ``--methods`` selects by label or method name.
    pipeline : mapping
        A pipeline table (``Pipeline.from_dict``) without ``budget``; defaults already merged.
    budget : str or None
        The budget slot it takes from each level; None for non-private references.
    reference : str or None
        Label of its non-private reference (same construction, same data) for the relative width.
    truth : float or None
        An explicit true value; None: the data generator's population value of the statistic.
    """

    label: str
    pipeline: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    budget: str | None = None
    reference: str | None = None
    truth: float | None = None

    @property
    def method_name(self) -> str:
        """The registered method name."""
        method = self.pipeline["method"]
        return str(method["name"] if isinstance(method, Mapping) else method)

    @property
    def statistic_name(self) -> str:
        """The registered statistic name."""
        statistic = self.pipeline["statistic"]
        return str(statistic["name"] if isinstance(statistic, Mapping) else statistic)


@attrs.frozen
class Variant:
    """One data shape of an experiment with variants (``[[experiment.variants]]``).

    Attributes
    ----------
    label : str
        A plain name (``"poisson-w10"``), part of the cell key and the data seed.
    data : mapping
        ``{"generator": name, **options}``, as ``[experiment.data]``.
    bounds : tuple of float
        The public bounds every method takes on this variant (default: the generator's record bounds).
    statistics : tuple of str or None
        The statistic names whose methods run on it; None for every statistic.
    """

    label: str
    data: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    bounds: tuple[float, float] | None = None
    statistics: tuple[str, ...] | None = None

    def applies_to(self, method: MethodSpec) -> bool:
        """Whether ``method`` runs on this variant (its statistic is among :attr:`statistics`)."""
        return self.statistics is None or method.statistic_name in self.statistics

    def generator(self) -> Generator:
        """The variant's data generator."""
        options = {k: v for k, v in self.data.items() if k != "generator"}
        return make_generator(self.data.get("generator"), options, f"experiment.variants.{self.label}.data")

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the variant's entry in a method map)."""
        return {
            "data": dict(self.data),
            "bounds": None if self.bounds is None else list(self.bounds),
            "statistics": None if self.statistics is None else list(self.statistics),
        }


@attrs.frozen
class ExperimentSpec:
    """A validated experiment: data, grid, budget levels and methods.

    Build with :func:`load_experiment`; change with :meth:`with_overrides`.
    """

    name: str
    title: str
    description: str
    trials: int
    seed: int
    delta: float
    measure_memory: bool
    data: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    n: tuple[int, ...]
    levels: tuple[BudgetLevel, ...]
    methods: tuple[MethodSpec, ...]
    report: Mapping[str, Any] = attrs.field(converter=frozen_mapping, factory=dict)
    oracle_width: Mapping[str, Any] = attrs.field(converter=frozen_mapping, factory=dict)
    source: str = ""
    record_refused: bool = False
    common_random_numbers: bool = False
    compare: str | None = None
    extends: str | None = None
    variants: tuple[Variant, ...] = ()
    early_stop: bool = False
    _memo: dict[tuple[str, str, str | None], Any] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def method(self, label: str) -> MethodSpec:
        """The method with this label."""
        for spec in self.methods:
            if spec.label == label:
                return spec
        raise ConfigError(f"unknown method label '{label}' (known: {', '.join(self.labels())})", path="methods")

    def labels(self) -> tuple[str, ...]:
        """Method labels in config order."""
        return tuple(m.label for m in self.methods)

    def variant(self, label: str) -> Variant:
        """The variant with this label."""
        for variant in self.variants:
            if variant.label == label:
                return variant
        known = ", ".join(v.label for v in self.variants) or "none"
        raise ConfigError(f"unknown variant '{label}' (variants: {known})", path="variants")

    def variants_of(self, method: MethodSpec) -> tuple[Variant | None, ...]:
        """The variants ``method`` runs on: those that apply to its statistic, or ``(None,)`` without variants."""
        if not self.variants:
            return (None,)
        return tuple(v for v in self.variants if v.applies_to(method))

    def data_of(self, variant: Variant | None) -> Mapping[str, Any]:
        """The data table of a variant (the experiment's own data for None)."""
        return self.data if variant is None else variant.data

    def generator(self, variant: Variant | None = None) -> Generator:
        """The data generator (of ``variant``, if given)."""
        if variant is not None:
            return variant.generator()
        options = {k: v for k, v in self.data.items() if k != "generator"}
        return make_generator(self.data.get("generator"), options, "experiment.data")

    def table(self, method: MethodSpec, variant: Variant | None = None) -> dict[str, Any]:
        """The pipeline table of ``method`` (without budget), with the variant's bounds when it has any."""
        table = dict(method.pipeline)
        if variant is not None and variant.bounds is not None:
            table["bounds"] = list(variant.bounds)
        return table

    def pipeline(self, method: MethodSpec, level: BudgetLevel | None, variant: Variant | None = None) -> Pipeline:
        """The pipeline of ``method`` at ``level`` (None for non-private methods) on ``variant``; validates it."""
        path = f"experiment.methods.{method.label}"
        table = dict(materialise(self.table(method, variant), path))
        if method.budget is not None:
            if level is None:
                raise ConfigError("no budget level is defined (experiment.grid.budgets)", path=f"{path}.budget")
            if method.budget not in level.slots:
                raise ConfigError(
                    f"budget level '{level.label}' has no slot '{method.budget}' (slots: {', '.join(level.slots)})",
                    path=f"{path}.budget",
                )
            table["budget"] = level.slots[method.budget]
        try:
            return Pipeline.from_dict(table, prefix=path)
        except BudgetError as exc:
            # A private method without a budget slot, or a reference given one: a config mistake.
            raise ConfigError(exc.message, path=exc.path) from exc

    def truth(self, method: MethodSpec, variant: Variant | None = None) -> float:
        """The true value the method's confidence set should contain (on ``variant``, if given)."""
        if method.truth is not None:
            return method.truth
        statistic = method.pipeline["statistic"]
        options = {k: v for k, v in statistic.items() if k != "name"} if isinstance(statistic, Mapping) else {}
        path = f"experiment.methods.{method.label}"
        data = dict(self.data_of(variant))
        key = json.dumps([data, method.statistic_name, options], sort_keys=True, default=repr)
        try:
            return _cached_truth(self.generator(variant), key, method.statistic_name, path)
        except ConfigError as exc:
            raise exc.with_prefix(path) from exc

    def oracle(self, n: int) -> float | None:
        """The oracle width at n (``oracle_width``), if the experiment states one."""
        if not self.oracle_width:
            return None
        coefficient, power = float(self.oracle_width["coefficient"]), float(self.oracle_width["power"])
        return float(coefficient * math.pow(n, power))

    def cells_levels(self, method: MethodSpec) -> tuple[BudgetLevel | None, ...]:
        """The levels a method runs at: every level if private, once (None) if not."""
        return self.levels if method.budget is not None else (None,)

    def refusal(self, method: MethodSpec, level: BudgetLevel | None, variant: Variant | None = None) -> str | None:
        """Why ``method`` refuses to build at ``level`` on ``variant`` (``record_refused`` experiments), or None.

        With ``record_refused``, a pipeline that raises ``BudgetError`` or ``ConfigError`` when it is built
        at a level (a budget or statistic the method refuses) is a *refusal*: that cell is recorded, not run.
        A typo is still an error: the names of all parts, the option names of every part table, and the
        method and statistic with their own options are checked first, independently of the budget.
        Without ``record_refused`` (and for non-private methods) this is always None, and a pipeline that
        does not build stops the run.
        """
        if not self.record_refused or level is None or method.budget is None:
            return None
        built = self._built(method, level, variant)
        return built if isinstance(built, str) else None

    def _built(self, method: MethodSpec, level: BudgetLevel, variant: Variant | None) -> Pipeline | str:
        """The pipeline of a private method at a level and variant, or the reason it refuses (memoised)."""
        key = (method.label, level.label, None if variant is None else variant.label)
        if key not in self._memo:
            path = f"experiment.methods.{method.label}"
            _check_parts(materialise(self.table(method, variant), path), path)
            try:
                self._memo[key] = self.pipeline(method, level, variant)
            except ConfigError as exc:  # BudgetError arrives as ConfigError (ExperimentSpec.pipeline)
                self._memo[key] = exc.message
        built: Pipeline | str = self._memo[key]
        return built

    def refusals(self) -> dict[tuple[str, str, str | None], str]:
        """``{(method label, level label, variant label or None): reason}`` for every refused cell group
        (see :meth:`refusal`)."""
        out: dict[tuple[str, str, str | None], str] = {}
        for method in self.methods:
            for level in self.cells_levels(method):
                for variant in self.variants_of(method):
                    reason = self.refusal(method, level, variant)
                    if reason is not None and level is not None:
                        out[(method.label, level.label, None if variant is None else variant.label)] = reason
        return out

    def size_refusals(self) -> dict[tuple[str, str, int, str | None], str]:
        """``{(method label, level label, n, variant label or None): reason}`` for cells a method refuses at
        their n alone.

        With ``record_refused``, a pipeline that builds at a level may still refuse the design at some n
        (:meth:`privframe.Pipeline.check`, e.g. blbquant's blocks too small for its ``min_block``): those
        cells are recorded, not run. Public inputs only: no data are drawn.
        """
        out: dict[tuple[str, str, int, str | None], str] = {}
        if not self.record_refused:
            return out
        for method in self.methods:
            for level in self.cells_levels(method):
                if level is None or method.budget is None:
                    continue
                for variant in self.variants_of(method):
                    pipe = self._built(method, level, variant)
                    if isinstance(pipe, str):
                        continue
                    for n in self.n:
                        try:
                            pipe.check(n)
                        except ConfigError as exc:
                            out[(method.label, level.label, n, None if variant is None else variant.label)] = (
                                exc.message
                            )
        return out

    def validate(self) -> None:
        """Build every pipeline and compute every truth once, so errors surface before any trial runs.

        Refused cells (``record_refused``) are checked for typos and skipped.
        """
        if self.variants:
            for each in self.variants:
                each.generator()
        else:
            self.generator()
        for method in self.methods:
            for variant in self.variants_of(method):
                for level in self.cells_levels(method):
                    if level is None or method.budget is None or not self.record_refused:
                        self.pipeline(method, level, variant)
                    else:
                        self.refusal(method, level, variant)
                self.truth(method, variant)

    def with_overrides(
        self,
        *,
        trials: int | None = None,
        n: Sequence[int] | None = None,
        methods: Sequence[str] | None = None,
        budgets: Sequence[str] | None = None,
        seed: int | None = None,
        compare: str | None = None,
        common_random_numbers: bool | None = None,
        variants: Sequence[str] | None = None,
        early_stop: bool | None = None,
    ) -> ExperimentSpec:
        """A copy with the grid narrowed or resized (``--trials``, ``--n``, ``--methods``, ``--budget``, ``--seed``,
        ``--variants``) or compared differently (``--compare``, ``--common-random-numbers``, ``--no-early-stop``).

        ``methods`` selects by label or by registered method name; the references of the selected
        methods are kept too (the relative width needs them), and so is the ``compare`` baseline.
        ``budgets`` selects levels by label, ``variants`` variants by label.
        """
        spec = self
        if variants is not None:
            if not self.variants:
                raise ConfigError("this experiment has no variants", path="variants")
            for label in variants:
                self.variant(label)
            spec = attrs.evolve(spec, variants=tuple(v for v in self.variants if v.label in set(variants)))
        if early_stop is not None:
            spec = attrs.evolve(spec, early_stop=bool(early_stop))
        if compare is not None:
            if compare not in self.labels():
                raise ConfigError(f"expected a method label ({', '.join(sorted(self.labels()))})", path="compare")
            spec = attrs.evolve(spec, compare=compare)
        if common_random_numbers is not None:
            spec = attrs.evolve(spec, common_random_numbers=bool(common_random_numbers))
        if trials is not None:
            spec = attrs.evolve(spec, trials=_positive_int(trials, "trials"))
        if seed is not None:
            spec = attrs.evolve(spec, seed=_seed(seed, "seed"))
        if n is not None:
            spec = attrs.evolve(spec, n=_n_grid(n, "n"))
        if methods is not None:
            spec = attrs.evolve(spec, methods=_select_methods(spec, methods))
        if budgets is not None:
            chosen = []
            known = [level.label for level in spec.levels]
            for label in budgets:
                if label not in known:
                    raise ConfigError(
                        f"unknown budget level '{label}' (levels: {', '.join(known) or 'none'})", path="budget"
                    )
                chosen.append(label)
            spec = attrs.evolve(spec, levels=tuple(level for level in spec.levels if level.label in chosen))
        return spec


def _check_parts(table: Mapping[str, Any], path: str) -> None:
    """Names and option names of every part in a method table, and the method and statistic themselves.

    Independent of the budget: what :meth:`ExperimentSpec.refusal` checks before it calls a build
    failure a refusal. Sampler, mechanism and accountant values are left to the build (their options
    may come from the method's defaults).
    """
    for kind in ("method", "statistic", "sampler", "mechanism", "accountant"):
        value = table.get(kind)
        if value is None:
            continue
        part = Part.coerce(value, f"{path}.{kind}")
        entry = registry.get(kind, part.name, path=f"{path}.{kind}")
        if kind in ("method", "statistic"):
            entry.create(dict(part.options), f"{path}.{kind}")
            continue
        declared = entry.options()
        for key in part.options:
            if key not in declared:
                raise ConfigError(
                    f"unknown option for {kind} '{part.name}' (known: {', '.join(declared) or 'none'})",
                    path=f"{path}.{kind}.{key}",
                )


_TRUTHS: dict[str, float] = {}


def _cached_truth(generator: Generator, key: str, statistic: str, path: str) -> float:
    """Truths can take a second (quadrature, optimisation): compute each (data, statistic, options) once.

    The statistic computes its own population value from the generator's law (``pp.PopulationStatistic``).
    """
    if key not in _TRUTHS:
        options = materialise({"statistic": json.loads(key)[2]}, path)["statistic"]
        part = registry.create("statistic", statistic, options, path="statistic")
        if not isinstance(part, PopulationStatistic):
            raise ConfigError(
                f"statistic '{statistic}' does not know its population value; give the method's truth explicitly",
                path="truth",
            )
        _TRUTHS[key] = float(part.population_value(generator.population()))
    return _TRUTHS[key]


def _select_methods(spec: ExperimentSpec, selection: Sequence[str]) -> tuple[MethodSpec, ...]:
    chosen: set[str] = set()
    for item in selection:
        matches = [m.label for m in spec.methods if item in (m.label, m.method_name)]
        if not matches:
            raise ConfigError(
                f"'{item}' matches no method label or name (labels: {', '.join(spec.labels())})", path="methods"
            )
        chosen.update(matches)
    for label in list(chosen):
        reference = spec.method(label).reference
        if reference is not None:
            chosen.add(reference)
    if spec.compare is not None:
        chosen.add(spec.compare)
        reference = spec.method(spec.compare).reference
        if reference is not None:
            chosen.add(reference)
    return tuple(m for m in spec.methods if m.label in chosen)


def materialise(table: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """Replace option tables ``{scipy = NAME, ...}`` by frozen scipy distributions (one level deep in parts)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            out[key] = {k: _scipy(v, f"{path}.{key}.{k}") for k, v in value.items()}
        else:
            out[key] = value
    return out


def _scipy(value: Any, path: str) -> Any:
    if not (isinstance(value, Mapping) and "scipy" in value):
        return value
    from scipy import stats

    name = value["scipy"]
    family = getattr(stats, name, None) if isinstance(name, str) else None
    if not isinstance(family, (stats.rv_continuous, stats.rv_discrete)):
        raise ConfigError("expected the name of a scipy.stats distribution", path=f"{path}.scipy")
    params = {k: v for k, v in value.items() if k != "scipy"}
    try:
        return family(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid parameters for scipy.stats.{name}: {exc}", path=path) from exc


# -- reading ------------------------------------------------------------------------------------------


def _positive_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("must be an integer >= 1", path=path)
    return value


def _seed(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError("must be a non-negative integer", path=path)
    return value


def _number(value: object, path: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError("must be a number", path=path)
    if not low < value < high:
        raise ConfigError(f"must satisfy {low:g} < value < {high:g}", path=path)
    return float(value)


def _n_grid(value: object, path: str) -> tuple[int, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise ConfigError("expected a non-empty list of sample sizes", path=path)
    sizes = []
    for i, item in enumerate(value):
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) or item < 3:
            raise ConfigError("must be an integer >= 3", path=f"{path}[{i}]")
        sizes.append(item)
    if len(set(sizes)) != len(sizes):
        raise ConfigError("sample sizes must be distinct", path=path)
    return tuple(sizes)


def _table(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError("expected a table", path=path)
    return value


def _string(value: object, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError("expected a non-empty string", path=path)
    return value


def _method(label: str, table: Mapping[str, Any], defaults: Mapping[str, Any], confidence: float) -> MethodSpec:
    path = f"experiment.methods.{label}"
    for key in table:
        if key not in _METHOD_KEYS:
            raise ConfigError(f"unknown key (expected one of {', '.join(_METHOD_KEYS)})", path=f"{path}.{key}")
    pipeline = {"confidence": confidence, **defaults, **{k: v for k, v in table.items() if k in _PIPELINE_KEYS}}
    for key in ("method", "statistic"):
        if key not in pipeline:
            raise ConfigError("missing (give it here or in experiment.defaults)", path=f"{path}.{key}")
    budget = table.get("budget")
    if budget is not None:
        budget = _string(budget, f"{path}.budget")
    reference = table.get("reference")
    if reference is not None:
        reference = _string(reference, f"{path}.reference")
    truth = table.get("truth")
    if truth is not None:
        truth = _number(truth, f"{path}.truth", -math.inf, math.inf)
    return MethodSpec(label, pipeline, budget, reference, truth)


def _flag(exp: Mapping[str, Any], key: str) -> bool:
    value = exp.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError("expected true or false", path=f"experiment.{key}")
    return value


def _by_label(items: object, path: str) -> list[Mapping[str, Any]]:
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise ConfigError("expected an array of tables", path=path)
    out = []
    for i, item in enumerate(items):
        table = _table(item, f"{path}[{i}]")
        if not isinstance(table.get("label"), str):
            raise ConfigError("expected a non-empty string", path=f"{path}[{i}].label")
        out.append(table)
    return out


def _extend(exp: Mapping[str, Any]) -> dict[str, Any]:
    """The ``experiment`` table of a config with ``extends = BUILTIN``, merged onto that built-in's table.

    The rules (docs/experiments.md, "Extending a built-in experiment"): top-level keys of the config
    replace the built-in's, ``data`` and ``oracle_width`` whole; ``defaults`` and ``report`` merge key by
    key; ``grid.n`` replaces the grid; a budget level of ``grid.budgets`` replaces the built-in's level
    with the same label, or is appended; a method table merges key by key into the built-in's method
    with the same label (so ``mechanism = "laplace"`` alone changes only the mechanism), or is appended.
    ``name`` is required: it names the output folder and is part of every seed.
    """
    parent_name = exp["extends"]
    if not isinstance(parent_name, str) or parent_name not in _BUILTIN_ORDER:
        raise ConfigError(f"expected a built-in experiment ({', '.join(_BUILTIN_ORDER)})", path="experiment.extends")
    if "name" not in exp:
        raise ConfigError("missing (a config that extends another needs its own name)", path="experiment.name")
    parent = dict(tomllib.loads(_builtin_text(parent_name))["experiment"])
    merged: dict[str, Any] = {**parent}
    for key, value in exp.items():
        if key in ("defaults", "report"):
            merged[key] = {**_table(parent.get(key, {}), key), **_table(value, f"experiment.{key}")}
        elif key == "grid":
            grid = dict(_table(parent.get("grid", {}), "grid"))
            child = _table(value, "experiment.grid")
            if "n" in child:
                grid["n"] = child["n"]
            if "budgets" in child:
                levels = {t["label"]: t for t in _by_label(grid.get("budgets", []), "experiment.grid.budgets")}
                for table in _by_label(child["budgets"], "experiment.grid.budgets"):
                    levels[table["label"]] = table
                grid["budgets"] = list(levels.values())
            for extra in child:
                if extra not in ("n", "budgets"):
                    grid[extra] = child[extra]  # rejected with its path by parse_experiment
            merged["grid"] = grid
        elif key == "methods":
            methods = {label: dict(table) for label, table in _table(parent["methods"], "methods").items()}
            for label, table in _table(value, "experiment.methods").items():
                methods[label] = {**methods.get(label, {}), **_table(table, f"experiment.methods.{label}")}
            merged["methods"] = methods
        elif key != "extends":
            merged[key] = value
    merged["extends"] = parent_name
    return merged


def _variants(items: object) -> tuple[Variant, ...]:
    """Read ``[[experiment.variants]]``: a label, a data table, optional bounds and statistics each."""
    if items is None:
        return ()
    out: list[Variant] = []
    for i, table in enumerate(_by_label(items, "experiment.variants")):
        path = f"experiment.variants[{i}]"
        for key in table:
            if key not in ("label", "data", "bounds", "statistics"):
                raise ConfigError("unknown key (expected label, data, bounds, statistics)", path=f"{path}.{key}")
        label = table["label"]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._=-]*", label):
            raise ConfigError("must be a plain name (letters, digits, '.', '_', '=', '-')", path=f"{path}.label")
        if "data" not in table:
            raise ConfigError("missing", path=f"{path}.data")
        data = _table(table["data"], f"{path}.data")
        generator = make_generator(
            data.get("generator"), {k: v for k, v in data.items() if k != "generator"}, f"{path}.data"
        )
        bounds: tuple[float, float] | None
        if "bounds" in table:
            value = table["bounds"]
            if (
                not isinstance(value, Sequence)
                or isinstance(value, str)
                or len(value) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
                or not value[0] < value[1]
            ):
                raise ConfigError("expected [low, high] with low < high", path=f"{path}.bounds")
            bounds = (float(value[0]), float(value[1]))
        else:
            bounds = record_bounds(generator)
        statistics = table.get("statistics")
        if statistics is not None:
            if (
                not isinstance(statistics, Sequence)
                or isinstance(statistics, str)
                or not statistics
                or not all(isinstance(v, str) for v in statistics)
            ):
                raise ConfigError("expected a non-empty list of statistic names", path=f"{path}.statistics")
            statistics = tuple(statistics)
        out.append(Variant(label, data, bounds, statistics))
    if len({v.label for v in out}) != len(out):
        raise ConfigError("labels must be distinct", path="experiment.variants")
    if not out:
        raise ConfigError("needs at least one variant", path="experiment.variants")
    return tuple(out)


def parse_experiment(config: Mapping[str, Any], source: str = "") -> ExperimentSpec:
    """Validate a config mapping ``{"experiment": {...}}`` and build the spec (pipelines included).

    A config with ``extends = BUILTIN`` is first merged onto that built-in experiment (:func:`_extend`).
    """
    if not isinstance(config, Mapping) or set(config) != {"experiment"}:
        raise ConfigError("expected one top-level table named 'experiment'", path="experiment")
    exp = _table(config["experiment"], "experiment")
    for key in exp:
        if key not in _EXPERIMENT_KEYS:
            raise ConfigError(f"unknown key (expected one of {', '.join(_EXPERIMENT_KEYS)})", path=f"experiment.{key}")
    if "extends" in exp:
        exp = _extend(exp)
    for key in ("name", "trials", "grid", "methods"):
        if key not in exp:
            raise ConfigError("missing", path=f"experiment.{key}")
    if "data" not in exp and "variants" not in exp:
        raise ConfigError("missing", path="experiment.data")
    name = _string(exp["name"], "experiment.name")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or ".." in name:
        # The name becomes a folder under --out: no separators, no "..", nothing absolute.
        raise ConfigError(
            "must be a plain folder name (letters, digits, '.', '_', '-'; no '/' or '..')", path="experiment.name"
        )
    delta = _number(exp.get("delta", 1e-6), "experiment.delta", 0.0, 1.0)
    confidence = _number(exp.get("confidence", 0.9), "experiment.confidence", 0.0, 1.0)
    measure_memory = exp.get("measure_memory", False)
    if not isinstance(measure_memory, bool):
        raise ConfigError("expected true or false", path="experiment.measure_memory")
    record_refused = _flag(exp, "record_refused")
    common = _flag(exp, "common_random_numbers")
    early_stop = _flag(exp, "early_stop")
    variants = _variants(exp.get("variants"))
    if variants and "data" in exp:
        raise ConfigError("give either [experiment.data] or [[experiment.variants]], not both", path="experiment.data")
    data = _table(exp["data"], "experiment.data") if not variants else {}
    grid = _table(exp["grid"], "experiment.grid")
    for key in grid:
        if key not in ("n", "budgets"):
            raise ConfigError("unknown key (expected n, budgets)", path=f"experiment.grid.{key}")
    if "n" not in grid:
        raise ConfigError("missing", path="experiment.grid.n")
    raw_levels = grid.get("budgets", [])
    if not isinstance(raw_levels, Sequence) or isinstance(raw_levels, str):
        raise ConfigError("expected an array of tables", path="experiment.grid.budgets")
    levels = tuple(parse_level(t, delta, f"experiment.grid.budgets[{i}]") for i, t in enumerate(raw_levels))
    if len({level.label for level in levels}) != len(levels):
        raise ConfigError("labels must be distinct", path="experiment.grid.budgets")
    defaults = _table(exp.get("defaults", {}), "experiment.defaults")
    for key in defaults:
        if key not in _PIPELINE_KEYS:
            raise ConfigError(
                f"unknown key (expected one of {', '.join(_PIPELINE_KEYS)})", path=f"experiment.defaults.{key}"
            )
    methods_table = _table(exp["methods"], "experiment.methods")
    if not methods_table:
        raise ConfigError("needs at least one method", path="experiment.methods")
    methods = tuple(
        _method(label, _table(table, f"experiment.methods.{label}"), defaults, confidence)
        for label, table in methods_table.items()
    )
    labels = {m.label for m in methods}
    for m in methods:
        if m.reference is not None and m.reference not in labels:
            raise ConfigError(f"no method labelled '{m.reference}'", path=f"experiment.methods.{m.label}.reference")
    compare = exp.get("compare")
    if compare is not None and (not isinstance(compare, str) or compare not in labels):
        raise ConfigError(f"expected a method label ({', '.join(sorted(labels))})", path="experiment.compare")
    report = _table(exp.get("report", {}), "experiment.report")
    for key in report:
        if key not in ("trials", "n", "include"):
            raise ConfigError("unknown key (expected trials, n, include)", path=f"experiment.report.{key}")
    if not isinstance(report.get("include", True), bool):
        raise ConfigError("expected true or false", path="experiment.report.include")
    if "trials" in report:
        _positive_int(report["trials"], "experiment.report.trials")
    if "n" in report:
        _n_grid(report["n"], "experiment.report.n")
    oracle = _table(exp.get("oracle_width", {}), "experiment.oracle_width")
    if oracle:
        for key in oracle:
            if key not in ("coefficient", "power"):
                raise ConfigError("unknown key (expected coefficient, power)", path=f"experiment.oracle_width.{key}")
        for key in ("coefficient", "power"):
            if key not in oracle:
                raise ConfigError("missing", path=f"experiment.oracle_width.{key}")
        _number(oracle["coefficient"], "experiment.oracle_width.coefficient", 0.0, math.inf)
        _number(oracle["power"], "experiment.oracle_width.power", -math.inf, math.inf)
    spec = ExperimentSpec(
        name=name,
        title=str(exp.get("title", name)),
        description=str(exp.get("description", "")),
        trials=_positive_int(exp["trials"], "experiment.trials"),
        seed=_seed(exp.get("seed", 0), "experiment.seed"),
        delta=delta,
        measure_memory=measure_memory,
        data=data,
        n=_n_grid(grid["n"], "experiment.grid.n"),
        levels=levels,
        methods=methods,
        report=report,
        oracle_width=oracle,
        source=source,
        record_refused=record_refused,
        common_random_numbers=common,
        compare=compare,
        extends=exp.get("extends"),
        variants=variants,
        early_stop=early_stop,
    )
    if not variants:
        spec.generator()
    for method in spec.methods:
        if not spec.variants_of(method):
            raise ConfigError(
                f"no variant applies to its statistic '{method.statistic_name}'",
                path=f"experiment.methods.{method.label}",
            )
    return spec


def builtin_names() -> tuple[str, ...]:
    """Names of the built-in experiments (``docs/experiments.md``), in the order of the reproduction report."""
    return _BUILTIN_ORDER


def report_names() -> tuple[str, ...]:
    """The built-in experiments of the reproduction report (``privframe experiment all``): those whose
    config does not set ``[experiment.report] include = false`` (the method map is run on its own)."""
    return tuple(name for name in _BUILTIN_ORDER if load_experiment(name).report.get("include", True))


def _builtin_text(name: str) -> str:
    return resources.files("privframe.experiments").joinpath("configs", f"{name}.toml").read_text(encoding="utf-8")


def load_experiment(experiment: str | Path | Mapping[str, Any] | ExperimentSpec) -> ExperimentSpec:
    """An :class:`ExperimentSpec` from a built-in name, a ``.toml``/``.json`` path, or a mapping.

    Only the config's structure is checked here; :meth:`ExperimentSpec.validate` checks that every
    method, part and option is registered (the runner calls it before the first trial).
    """
    if isinstance(experiment, ExperimentSpec):
        return experiment
    if isinstance(experiment, Mapping):
        return parse_experiment(experiment, "<mapping>")
    if isinstance(experiment, str) and experiment in _BUILTIN_ORDER:
        return parse_experiment(tomllib.loads(_builtin_text(experiment)), f"builtin:{experiment}")
    path = Path(experiment)
    if path.suffix.lower() not in (".toml", ".json"):
        raise ConfigError(
            f"'{experiment}' is neither a built-in experiment ({', '.join(_BUILTIN_ORDER)}) "
            "nor a .toml/.json config file",
            path="experiment",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path.name} ({exc.strerror})", path="experiment") from exc
    try:
        config = load_json(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path.name} is not valid {path.suffix[1:].upper()}: {exc}", path="experiment") from exc
    except RecursionError:
        raise ConfigError(f"{path.name} is nested too deeply to be an experiment", path="experiment") from None
    return parse_experiment(config, str(path))
