"""Budget levels: one privacy level of an experiment, expressed in every unit its methods need.

A level is a table with a ``label`` and named *slots*; each method names the slot it takes
(``budget = "gdp"``). A slot is either a literal budget table (``{unit = "gdp", mu = 8}``, as in a
pipeline config) or a *matched* budget ``{match = "gdp", unit = "pure-dp"}``: the budget in ``unit``
whose (epsilon, delta_ref)-DP equivalent equals that of the slot it matches, so no method is given a
weaker guarantee than the level states. With ``delta_ref`` the experiment's reporting delta (1e-6):

- the matched slot's epsilon: ``eps`` of ``PureDP(eps)``; ``eps`` of ``ApproxDP(eps, d)`` (``d <= delta_ref``);
  the tight ``GDP(mu, d0).to_approx_dp(delta_ref).epsilon`` of a GDP budget (``d0 < delta_ref``);
- ``unit = "pure-dp"``: ``PureDP(eps)``; ``unit = "approx-dp"``: ``ApproxDP(eps, delta_ref)``;
- ``unit = "gdp"``: the largest ``mu`` with ``GDP(mu)`` implying ``(eps, delta_ref)``; with ``delta = d``
  (for methods that need (mu, delta)-GDP, e.g. ``cr-ss``): ``GDP(mu, delta=d)`` with ``mu`` the largest
  whose curve gives ``(eps, delta_ref - d)``, so the total is again ``(eps, delta_ref)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import BudgetError, ConfigError
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table

__all__ = ["BudgetLevel", "budget_table", "epsilon_at", "match_budget", "parse_level"]

_LITERAL_UNITS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gdp": (("mu",), ("delta",)),
    "approx-dp": (("epsilon", "delta"), ()),
    "pure-dp": (("epsilon",), ()),
}


@attrs.frozen
class BudgetLevel:
    """One privacy level: a label and the budget of each slot.

    Attributes
    ----------
    label : str
        Shown in tables (``"mu=8"``, ``"eps=1"``).
    slots : mapping of str to Budget
        The budget each slot name stands for.
    """

    label: str
    slots: Mapping[str, Budget] = attrs.field(converter=frozen_mapping)


def epsilon_at(budget: Budget, delta_ref: float) -> float:
    """The epsilon of the (epsilon, delta_ref)-DP guarantee ``budget`` implies."""
    if isinstance(budget, PureDP):
        return budget.epsilon
    if isinstance(budget, ApproxDP):
        if budget.delta > delta_ref:
            raise BudgetError(
                "an (epsilon, delta) budget with delta above the reporting delta cannot be matched", path="delta"
            )
        return budget.epsilon
    if budget.delta >= delta_ref:
        raise BudgetError("a (mu, delta)-GDP budget with delta >= the reporting delta cannot be matched", path="delta")
    return budget.to_approx_dp(delta_ref).epsilon


def match_budget(source: Budget, unit: str, delta_ref: float, gdp_delta: float | None = None) -> Budget:
    """The budget in ``unit`` whose (epsilon, delta_ref) equivalent equals that of ``source``."""
    eps = epsilon_at(source, delta_ref)
    if unit == "pure-dp":
        return PureDP(eps)
    if unit == "approx-dp":
        return ApproxDP(eps, delta_ref)
    if unit == "gdp":
        if gdp_delta is None or gdp_delta == 0:
            return GDP(accounting.gdp_mu_for(eps, delta_ref))
        if not 0 < gdp_delta < delta_ref:
            raise BudgetError("must satisfy 0 < delta < the reporting delta", path="delta")
        return GDP(accounting.gdp_mu_for(eps, delta_ref - gdp_delta), delta=gdp_delta)
    raise BudgetError("expected one of gdp, approx-dp, pure-dp", path="unit")


def _literal(table: Mapping[str, Any], path: str) -> Budget:
    return budget_from_table(table, path)


def _matched(table: Mapping[str, Any], literals: Mapping[str, Budget], delta_ref: float, path: str) -> Budget:
    for key in table:
        if key not in ("match", "unit", "delta"):
            raise ConfigError("unknown key for a matched budget (expected match, unit, delta)", path=f"{path}.{key}")
    source = table["match"]
    if not isinstance(source, str) or source not in literals:
        raise ConfigError("expected the name of a literal budget slot of this level", path=f"{path}.match")
    unit = table.get("unit")
    if unit not in _LITERAL_UNITS:
        raise ConfigError(f"expected one of {', '.join(_LITERAL_UNITS)}", path=f"{path}.unit")
    gdp_delta = table.get("delta")
    if gdp_delta is not None and (unit != "gdp" or isinstance(gdp_delta, bool) or not isinstance(gdp_delta, float)):
        raise ConfigError("only a matched 'gdp' budget takes a delta (a number)", path=f"{path}.delta")
    try:
        return match_budget(literals[source], unit, delta_ref, gdp_delta)
    except BudgetError as exc:
        raise ConfigError(f"{path}.{exc}") from exc


def parse_level(table: object, delta_ref: float, path: str) -> BudgetLevel:
    """Read one budget level (``{label = ..., SLOT = {...}, ...}``); errors name ``path``."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table with a label and budget slots", path=path)
    label = table.get("label")
    if not isinstance(label, str) or not label:
        raise ConfigError("expected a non-empty string", path=f"{path}.label")
    literals: dict[str, Budget] = {}
    for slot, value in table.items():
        if slot == "label":
            continue
        if not isinstance(value, Mapping):
            raise ConfigError("expected a budget table", path=f"{path}.{slot}")
        if "match" not in value:
            literals[slot] = _literal(value, f"{path}.{slot}")
    slots: dict[str, Budget] = {}
    for slot, value in table.items():
        if slot != "label":
            slots[slot] = literals[slot] if slot in literals else _matched(value, literals, delta_ref, f"{path}.{slot}")
    if not slots:
        raise ConfigError("a budget level needs at least one slot besides its label", path=path)
    return BudgetLevel(label, slots)


def budget_table(budget: Budget) -> dict[str, Any]:
    """A budget as a plain table (``{"unit": "gdp", "mu": 8.0}``), for JSON and fingerprints."""
    table = budget_to_table(budget)
    assert table is not None  # only None for a None budget
    return table
