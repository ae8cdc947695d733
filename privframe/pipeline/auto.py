"""``method="auto"``: checked when the pipeline is built, chosen when n is known, from public information only.

The method map (:mod:`privframe.pipeline.methodmap`) is data; this module applies it to a pipeline: what can
be checked before n is known (:func:`check`), and the choice itself (:func:`select`), which makes the chosen
method's pipeline through the one construction path (:func:`privframe.pipeline.build.assemble`) with its reason
in ``chosen_by``. Only the statistic, n, the budget, the bounds' kind and the confidence are read, never the
data values.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from privframe.bounds import Bounds, L2Ball
from privframe.errors import BudgetError, ConfigError, CoverageWarning, caller_stacklevel, join_path
from privframe.pipeline import methodmap
from privframe.pipeline.parts import Part
from privframe.pipeline.resolve import PART_KINDS
from privframe.plugin.registry import PluginRegistry, registry
from privframe.plugin.traits import traits_of
from privframe.privacy.budgets import ApproxDP, Budget, PureDP
from privframe.resampling.blocks import RunOptions

__all__ = ["Assemble", "Recipe", "check", "select"]


class Recipe(Protocol):
    """What choosing needs of a pipeline (:class:`privframe.Pipeline` is one)."""

    @property
    def method(self) -> Part: ...

    @property
    def statistic(self) -> Part: ...

    @property
    def budget(self) -> Budget | None: ...

    @property
    def bounds(self) -> Bounds | L2Ball | None: ...

    @property
    def confidence(self) -> float: ...

    @property
    def options(self) -> RunOptions: ...

    @property
    def columns(self) -> tuple[str, ...] | None: ...

    @property
    def registry(self) -> PluginRegistry: ...

    @property
    def prefix(self) -> str: ...

    def check(self, n: int) -> None: ...

    def chosen(self, why: Mapping[str, Any]) -> Any: ...


Assemble = Callable[..., Any]
"""The one construction path of pipelines (:func:`privframe.pipeline.build.assemble`), passed in so that this
module does not import the module that imports it."""

_BOUNDS_KINDS = {"interval": "scalar bounds (low, high)", "ball": "an L2Ball bound", "none": "no bounds"}


def _path(prefix: str, key: str) -> str:
    return join_path(prefix, key) or key


def _map(method: Part, prefix: str, statistic: str, order_statistic: bool) -> methodmap.MethodMap:
    """The map an auto pipeline chooses from: its ``map`` option (a file or a MethodMap), else the shipped one
    (its cells of ``statistic``, and of every order statistic with ``order_statistic``: the same answers)."""
    chosen = method.options.get("map")
    try:
        if chosen is None:
            return methodmap.MethodMap.shipped_for(statistic, order_statistic)
        if isinstance(chosen, methodmap.MethodMap):
            return chosen
        if isinstance(chosen, (str, Path)):
            return methodmap.MethodMap.read(chosen)
        raise ConfigError("expected the path of a method-map file", path="map")
    except ConfigError as exc:
        raise exc.with_prefix(_path(prefix, "method")) from exc


def _entry_specs(entry: methodmap.MapEntry, statistic: Part) -> dict[str, Part | None]:
    """The map entry's method (with the options and parts the map's experiment gave it) for ``statistic``."""
    parts: dict[str, Part | None] = {
        kind: Part.coerce(entry.parts[kind], kind) if kind in entry.parts else None for kind in PART_KINDS
    }
    method = Part(entry.name, {k: v for k, v in entry.method.items() if k != "name"})
    return {"method": method, "statistic": statistic, **parts}


def _concrete(pipe: Recipe, entry: methodmap.MapEntry, assemble: Assemble, budget: Budget | None = None) -> Any:
    """``pipe`` with the map entry's method (and ``budget`` instead of the pipeline's, if given), resolved."""
    return assemble(
        _entry_specs(entry, pipe.statistic),
        {},
        budget=pipe.budget if budget is None else budget,
        bounds=pipe.bounds,
        confidence=pipe.confidence,
        options=pipe.options,
        columns=pipe.columns,
        reg=pipe.registry,
        prefix=pipe.prefix,
    )


def _accepted(
    statistic: Part, budget: Budget | None, bounds: Bounds | L2Ball | None, reg: PluginRegistry, assemble: Assemble
) -> list[str]:
    """Registered private methods whose pipeline builds for this statistic, budget and bounds (any n)."""
    names = []
    for name in reg.names("method"):
        try:
            assemble(
                {"method": Part(name), "statistic": statistic},
                {},
                budget=budget,
                bounds=bounds,
                confidence=0.9,
                options=RunOptions(),
                columns=None,
                reg=reg,
                prefix="",
            )
        except (BudgetError, ConfigError):
            continue
        names.append(name)
    return names


def _name_a_method(
    statistic: Part, budget: Budget | None, bounds: Bounds | L2Ball | None, reg: PluginRegistry, assemble: Assemble
) -> str:
    accepted = _accepted(statistic, budget, bounds, reg, assemble)
    if not accepted:
        return f"no registered method accepts statistic '{statistic.name}' at {budget}"
    return f"name one of the methods that accept '{statistic.name}' at {budget}: {', '.join(accepted)}"


def check(
    method: Part,
    statistic: Part,
    specs: Mapping[str, Part | None],
    extra: Mapping[str, Any],
    *,
    budget: Budget | None,
    bounds: Bounds | L2Ball | None,
    confidence: float,
    reg: PluginRegistry | None,
    prefix: str,
    assemble: Assemble,
) -> None:
    """What an auto pipeline can check before n is known: its settings, and that some mapped method fits."""
    chosen_registry = reg or registry
    if extra:
        raise ConfigError(
            "method 'auto' runs the chosen method with its own defaults; name a method to set part options",
            path=next(iter(extra)),
        )
    if budget is None:
        raise BudgetError(
            "method 'auto' chooses among private methods and needs a budget", path=_path(prefix, "budget")
        )
    for kind in PART_KINDS:
        if specs.get(kind) is not None:
            raise ConfigError(
                "method 'auto' runs the chosen method with its default parts; name a method to choose its parts",
                path=_path(prefix, kind),
            )
    for key in method.options:
        if key != "map":
            raise ConfigError(
                "method 'auto' takes one option, map (a method-map file)", path=_path(prefix, f"method.{key}")
            )
    path = _path(prefix, "statistic")
    part = chosen_registry.get("statistic", statistic.name, path=path).create(dict(statistic.options), path)
    method_map = _map(method, prefix, statistic.name, traits_of(part).quantile is not None)
    if bounds is None and traits_of(part).requires_bounds:
        raise ConfigError(f"statistic '{statistic.name}' needs public bounds", path=_path(prefix, "bounds"))
    bounds_kind = methodmap.bounds_kind(bounds)
    measured = method_map.methods_for(statistic.name, bounds_kind, traits_of(part).quantile)
    if not measured:
        if method_map.statistic_keys(statistic.name):
            what = f"statistic '{statistic.name}' with {_BOUNDS_KINDS[bounds_kind]}"
        else:
            what = f"statistic '{statistic.name}' (it has {', '.join(method_map.statistic_names())})"
        hint = _name_a_method(statistic, budget, bounds, chosen_registry, assemble)
        raise ConfigError(f"the method map has no measurements for {what}; {hint}", path=_path(prefix, "method"))
    for entry in measured:
        try:
            assemble(
                _entry_specs(entry, statistic),
                {},
                budget=budget,
                bounds=bounds,
                confidence=confidence,
                options=RunOptions(),
                columns=None,
                reg=reg,
                prefix=prefix,
            )
        except (BudgetError, ConfigError):
            continue
        return
    raise ConfigError(
        f"no method the method map measured for '{statistic.name}' accepts {budget}; "
        f"{_name_a_method(statistic, budget, bounds, chosen_registry, assemble)}",
        path=_path(prefix, "method"),
    )


def _quantile_level(statistic: Part, reg: PluginRegistry, prefix: str) -> float | None:
    """The statistic's quantile level (``traits.quantile``): order statistics are matched by level in the map."""
    path = _path(prefix, "statistic")
    part = reg.get("statistic", statistic.name, path=path).create(dict(statistic.options), path)
    return traits_of(part).quantile


def select(pipe: Recipe, n: int, assemble: Assemble) -> Any:
    """The best-ranked candidate of the nearest map cell that accepts the budget (public inputs only)."""
    budget = pipe.budget
    assert budget is not None  # checked when built
    level = _quantile_level(pipe.statistic, pipe.registry, pipe.prefix)
    method_map = _map(pipe.method, pipe.prefix, pipe.statistic.name, level is not None)
    located = method_map.locate(
        pipe.statistic.name, pipe.statistic.options, n, budget, methodmap.bounds_kind(pipe.bounds), level
    )
    if located is None:
        raise ConfigError(
            f"the method map has no measurements for statistic '{pipe.statistic.name}'; "
            f"{_name_a_method(pipe.statistic, budget, pipe.bounds, pipe.registry, assemble)}",
            path=_path(pipe.prefix, "method"),
        )
    cell = located.cell
    measured_n = [other.n for other in method_map.cells if other.statistic == cell.statistic]
    smallest, largest = min(measured_n), max(measured_n)
    if not smallest <= n <= largest:
        side = (
            f"smallest n for '{cell.statistic}' is {smallest}"
            if n < smallest
            else (f"largest n for '{cell.statistic}' is {largest}")
        )
        warnings.warn(
            CoverageWarning(
                f"method='auto' at n = {n} extrapolates from the method map, whose {side}: the coverage of its "
                "choice was not measured at this n; name a method whose coverage holds in finite samples "
                "(rank-quantile for quantiles, private-variance for means) or check the result's "
                "diagnostics['auto']"
            ),
            stacklevel=caller_stacklevel(),
        )
    measured_level = method_map.statistics[cell.statistic].get("quantile")
    if level is not None and isinstance(measured_level, (int, float)) and abs(float(measured_level) - level) > 1e-12:
        warnings.warn(
            CoverageWarning(
                f"method='auto' for the {level:g}-quantile uses the method map's cells of '{cell.statistic}', the "
                f"nearest level it measured: the coverage of its choice was not measured at level {level:g}; name "
                "a method whose coverage holds at every level (rank-quantile) or check the result's "
                "diagnostics['auto']"
            ),
            stacklevel=caller_stacklevel(),
        )
    entry, candidate, passed_over = _first_exact(pipe, cell, n, budget, assemble)
    pure = _pure_spelling(pipe, method_map, located, n, budget, level, assemble)
    if pure is not None and (entry is None or _narrower(pure[1], entry)):
        pure_located, pure_entry, pure_candidate, pure_passed = pure
        spelling = (
            f"{budget} spelled as {pure_candidate.budget}, which implies it: at the map's n = {cell.n} and "
            f"epsilon, the pure cell's choice {pure_entry.name} (relative width {pure_entry.rel_width:.3g}) is "
            f"narrower than the (epsilon, delta) cell's "
            + ("(none valid)" if entry is None else f"{entry.name} ({_width(entry)})")
        )
        why = methodmap.diagnostics(
            pure_located,
            method_map=method_map,
            n=n,
            budget=pure_candidate.budget,
            confidence=pipe.confidence,
            chosen=pure_entry,
            passed_over=pure_passed,
            spelling=spelling,
        )
        return pure_candidate.chosen(why)
    if entry is not None:
        why = methodmap.diagnostics(
            located,
            method_map=method_map,
            n=n,
            budget=budget,
            confidence=pipe.confidence,
            chosen=entry,
            passed_over=passed_over,
        )
        return candidate.chosen(why)
    skipped = {passed.label: reason for passed, reason in passed_over}
    measured = "; ".join(
        f"{other.name}: {skipped.get(other.label) or methodmap.excluded_reason(other, cell.nominal)}"
        for other in cell.entries
    )
    raise ConfigError(
        f"no method of the method map's nearest cell ({cell.statistic}, n = {cell.n}, {cell.budget}) has "
        f"{methodmap.CANDIDATE_RULE_SHORT} and accepts {budget} ({measured}); "
        f"{_name_a_method(pipe.statistic, budget, pipe.bounds, pipe.registry, assemble)}",
        path=_path(pipe.prefix, "method"),
    )


def _first_exact(
    pipe: Recipe, cell: methodmap.MapCell, n: int, budget: Budget, assemble: Assemble
) -> tuple[methodmap.MapEntry | None, Any, list[tuple[methodmap.MapEntry, str]]]:
    """The cell's best-ranked candidate that accepts ``budget`` at n with an exact guarantee, its pipeline, and
    the candidates passed over on the way (with why); ``(None, None, passed_over)`` when there is none."""
    passed_over: list[tuple[methodmap.MapEntry, str]] = []
    for entry in cell.candidates():
        try:
            candidate = _concrete(pipe, entry, assemble, budget)
            candidate.check(n)
        except (BudgetError, ConfigError) as exc:
            passed_over.append((entry, f"refused this budget: {exc.message}"))
            continue
        if candidate.asymptotic:
            passed_over.append((entry, "its guarantee holds only asymptotically (auto chooses exact ones)"))
            continue
        return entry, candidate, passed_over
    return None, None, passed_over


def _pure_spelling(
    pipe: Recipe,
    method_map: methodmap.MethodMap,
    located: methodmap.Located,
    n: int,
    budget: Budget,
    level: float | None,
    assemble: Assemble,
) -> tuple[methodmap.Located, methodmap.MapEntry, Any, list[tuple[methodmap.MapEntry, str]]] | None:
    """For an ``ApproxDP(eps, delta)`` budget, the choice at ``PureDP(eps)``, which implies it.

    Used only where the map measured both spellings at the same point: the (eps, delta) cell located and a
    pure-eps cell at the same n and the same epsilon. The two cells' relative widths are then comparable (the
    same datasets and references, :mod:`privframe.experiments.cells`), so a weaker guarantee never gets the
    wider interval. None otherwise.
    """
    if not isinstance(budget, ApproxDP) or budget.delta <= 0.0:
        return None
    cell = located.cell
    pure = PureDP(budget.epsilon)
    pure_located = method_map.locate(
        pipe.statistic.name, pipe.statistic.options, n, pure, methodmap.bounds_kind(pipe.bounds), level
    )
    if pure_located is None:
        return None
    other = pure_located.cell
    same_point = (
        cell.unit == "approx-dp"
        and other.unit == "pure-dp"
        and other.statistic == cell.statistic
        and other.n == cell.n
        and other.budget_table.get("epsilon") == cell.budget_table.get("epsilon")
    )
    if not same_point:
        return None
    entry, candidate, passed_over = _first_exact(pipe, other, n, pure, assemble)
    if entry is None:
        return None
    return pure_located, entry, candidate, passed_over


def _width(entry: methodmap.MapEntry) -> str:
    return "not measured" if entry.rel_width is None else f"{entry.rel_width:.3g}"


def _narrower(first: methodmap.MapEntry, second: methodmap.MapEntry) -> bool:
    """Whether ``first`` was measured narrower than ``second`` (relative widths; an unmeasured width never is)."""
    if first.rel_width is None:
        return False
    return second.rel_width is None or first.rel_width < second.rel_width
