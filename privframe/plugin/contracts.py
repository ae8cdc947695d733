"""Contracts checked when a pipeline is built: method x statistic x mechanism x accountant x budget.

Everything here reads declarations and public inputs only (a statistic's traits and capabilities, a method's
needs, a mechanism's ``accepts``, an accountant's ``composes`` and ``per_call_units``, the budget's kind), so
a mismatch is refused with a ``ConfigError`` that names what works, before any data are read.
:func:`explain_statistic` answers "which methods accept this statistic?" for ``privframe plugins --explain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from privframe.errors import BudgetError, ConfigError, PluginError, PrivframeError
from privframe.plugin.evaluation import guarded
from privframe.plugin.protocols import Accountant, BudgetKind, Mechanism, SelectionMechanism, SmoothMechanism, Statistic
from privframe.plugin.registry import PluginRegistry
from privframe.plugin.traits import MethodNeeds, StatisticNeed, StatisticTraits, traits_of
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP

__all__ = ["Verdict", "check_parts", "check_statistic", "explain_statistic", "kind_name"]

_PROBES: dict[Any, Budget] = {GDP: GDP(1.0, delta=1e-6), ApproxDP: ApproxDP(1.0, 1e-6), PureDP: PureDP(1.0)}
"""A public budget of each kind, to ask a selection mechanism whether it serves a statistic at all."""


def kind_name(kind: BudgetKind) -> str:
    """``"GDP"``, ``"(epsilon, delta)"`` or ``"pure epsilon"`` for a budget class."""
    return {GDP: "GDP", ApproxDP: "(epsilon, delta)", PureDP: "pure epsilon"}.get(kind, getattr(kind, "__name__", "?"))


def _kinds(kinds: tuple[BudgetKind, ...]) -> str:
    return ", ".join(kind_name(kind) for kind in kinds) or "none"


def _units(part: object, member: str, kind: str, name: str) -> Mapping[BudgetKind, BudgetKind]:
    """A part's declared mapping of budget kinds (``accepts``, ``per_call_units``), checked."""
    value = getattr(part, member)
    if not isinstance(value, Mapping) or not all(k in _PROBES and v in _PROBES for k, v in value.items()):
        raise PluginError(
            f"{kind} '{name}'.{member} must map budget classes (pf.GDP, pf.ApproxDP, pf.PureDP) to budget classes"
        )
    return value


def _kinds_of(part: object, member: str, kind: str, name: str) -> tuple[BudgetKind, ...]:
    """A part's declared tuple of budget kinds (``composes``), checked."""
    value = getattr(part, member)
    if not isinstance(value, tuple) or not all(v in _PROBES for v in value):
        raise PluginError(
            f"{kind} '{name}'.{member} must be a tuple of budget classes (pf.GDP, pf.ApproxDP, pf.PureDP)"
        )
    return value


def check_statistic(method: str, needs: MethodNeeds, statistic: Statistic, traits: StatisticTraits) -> str | None:
    """Why ``method`` cannot use ``statistic`` (None when it can): the first need the statistic does not meet."""
    for need in sorted(needs.statistic, key=lambda item: item.name):
        if not need.holds(statistic, traits):
            trait = need in (
                StatisticNeed.CENTRED,
                StatisticNeed.BOOTSTRAP_CONSISTENT,
                StatisticNeed.QUANTILE,
                StatisticNeed.MEAN,
            )
            return (
                f"method '{method}' needs a statistic with {need.value}, and '{statistic.name}' "
                f"{'declares it has not' if trait else 'offers none'}"
            )
    return None


def _handed_kind(
    method: str, needs: MethodNeeds, accountant: Accountant | None, budget: Budget, names: Mapping[str, str]
) -> BudgetKind | None:
    """The kind of budget the method hands its mechanism under ``budget`` (None: the method converts itself)."""
    wanted = needs.mechanism_budget
    if wanted == "own":
        return None
    if wanted != "per-call":
        handed: BudgetKind = wanted
        _refuse_pure_as_gdp(handed, budget, method)
        return handed
    if accountant is None:
        return None
    units = _units(accountant, "per_call_units", "accountant", names.get("accountant", "?"))
    kind = units.get(type(budget))
    if kind is None:
        raise ConfigError(
            f"accountant '{names['accountant']}' cannot split a {kind_name(type(budget))} budget (it splits "
            f"{_kinds(tuple(units))} budgets); use an accountant that does, or another budget",
            path="accountant",
        )
    result: BudgetKind = kind
    _refuse_pure_as_gdp(result, budget, method)
    return result


def _refuse_pure_as_gdp(handed: BudgetKind, budget: Budget, method: str) -> None:
    """An ``ApproxDP(eps, 0)`` budget handed on as GDP: no mu-GDP guarantee implies pure eps-DP."""
    if handed is GDP and isinstance(budget, ApproxDP) and budget.delta == 0:
        raise BudgetError(
            f"{method} with these parts spends the budget as mu-GDP, and no mu-GDP guarantee implies "
            f"{budget} (delta = 0 is pure epsilon-DP): give delta > 0, or pf.PureDP({budget.epsilon:g}) with "
            "a pure mechanism (laplace)",
            path="budget.delta",
        )


def check_parts(
    method: str,
    needs: MethodNeeds,
    statistic: Statistic,
    parts: Mapping[str, object],
    names: Mapping[str, str],
    budget: Budget | None,
    reg: PluginRegistry,
) -> None:
    """Refuse a mismatch of the resolved parts with a ``ConfigError`` naming what works (public inputs only).

    Checked: the statistic meets the method's needs; a selection mechanism serves the statistic; the
    accountant can split the budget; the mechanism accepts the kind of budget the method (through its
    accountant) hands it; and, for the accountant's per-call shares, the accountant composes the kind of
    guarantee the mechanism then records (a method that hands a fixed kind records its events in the
    accountant's unit itself, as PrivBoot's exact accounting does).
    """
    traits = traits_of(statistic)
    refusal = check_statistic(method, needs, statistic, traits)
    if refusal is not None:
        accepting = [v.method for v in explain_statistic(statistic, reg) if v.accepts and v.private == needs.private]
        kind = "private methods" if needs.private else "references"
        raise ConfigError(f"{refusal}; {kind} that accept it: {', '.join(accepting) or 'none'}", path="statistic")
    mechanism = parts.get("mechanism")
    accountant = parts.get("accountant")
    if budget is None or mechanism is None:
        return
    assert accountant is None or isinstance(accountant, Accountant)
    mechanism_name = names["mechanism"]
    accepts = _units(mechanism, "accepts", "mechanism", mechanism_name)
    if isinstance(mechanism, SelectionMechanism) and not isinstance(mechanism, (Mechanism, SmoothMechanism)):
        probe = _PROBES[next(iter(accepts), PureDP)]
        try:
            with guarded("mechanism", mechanism_name, "plan_selection"):
                mechanism.plan_selection(statistic, probe, label="probe")
        except (ConfigError, BudgetError) as exc:
            raise ConfigError(exc.message, path="mechanism") from exc
    handed = _handed_kind(method, needs, accountant, budget, names)
    if handed is None:
        return  # the method converts the budget itself (a private estimator), and checks the kind when it plans
    if handed not in accepts:
        alternatives = _mechanisms_accepting(handed, needs, reg)
        how = f"through accountant '{names['accountant']}' " if needs.mechanism_budget == "per-call" else ""
        raise ConfigError(
            f"mechanism '{mechanism_name}' accepts {_kinds(tuple(accepts))} budgets, but method '{method}' hands it "
            f"{kind_name(handed)} budgets {how}under {budget}; use a mechanism that accepts them "
            f"({', '.join(alternatives) or 'none registered'}){_accountant_hint(needs, budget, tuple(accepts), reg)}",
            path="mechanism",
        )
    guarantee = accepts[handed]
    if accountant is not None and needs.mechanism_budget == "per-call":  # a fixed kind: the method records it
        composes = _kinds_of(accountant, "composes", "accountant", names["accountant"])
        if guarantee not in composes:
            raise ConfigError(
                f"accountant '{names['accountant']}' composes {_kinds(composes)} events, but mechanism "
                f"'{mechanism_name}' records {kind_name(guarantee)} guarantees under {kind_name(handed)} budgets; "
                "use an accountant that composes them",
                path="accountant",
            )


def _mechanisms_accepting(kind: BudgetKind, needs: MethodNeeds, reg: PluginRegistry) -> list[str]:
    names = []
    for entry in reg.entries("mechanism"):
        try:
            part = entry.create({}, "mechanism")
        except PrivframeError:
            continue
        if needs.mechanism is not None and not isinstance(part, needs.mechanism):
            continue
        accepts = getattr(part, "accepts", {})
        if isinstance(accepts, Mapping) and kind in accepts:
            names.append(entry.name)
    return names


def _accountant_hint(needs: MethodNeeds, budget: Budget, accepts: tuple[BudgetKind, ...], reg: PluginRegistry) -> str:
    if needs.mechanism_budget != "per-call":
        return ""
    fitting = []
    for entry in reg.entries("accountant"):
        try:
            part = entry.create({}, "accountant")
        except PrivframeError:
            continue
        units = getattr(part, "per_call_units", {})
        if isinstance(units, Mapping) and units.get(type(budget)) in accepts:
            fitting.append(entry.name)
    return f", or an accountant that hands it an accepted kind ({', '.join(fitting)})" if fitting else ""


@attrs.frozen
class Verdict:
    """Whether a method accepts a statistic (with their default options), and why not."""

    method: str
    accepts: bool
    reason: str = ""
    private: bool = True


def explain_statistic(statistic: Statistic, reg: PluginRegistry) -> list[Verdict]:
    """For every registered method (with its default options): does it accept ``statistic``, and if not, why.

    Only the statistic's declarations are read (its traits and capabilities against each method's needs); a
    method may still refuse a budget, bounds or a data shape when a pipeline is built or run.
    """
    traits = traits_of(statistic)
    verdicts = []
    for entry in reg.entries("method"):
        try:
            method = entry.create({}, "method")
            needs = method.needs
        except PrivframeError as exc:
            verdicts.append(Verdict(entry.name, False, f"cannot be built with its defaults: {exc.message}"))
            continue
        if not isinstance(needs, MethodNeeds):
            verdicts.append(Verdict(entry.name, False, "declares no MethodNeeds"))
            continue
        reason = check_statistic(entry.name, needs, statistic, traits)
        verdicts.append(Verdict(entry.name, reason is None, reason or "", needs.private))
    return verdicts
