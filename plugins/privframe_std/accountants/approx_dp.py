"""The (epsilon, delta) accountant: basic composition, and advanced composition for repeated events."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import attrs
from scipy import optimize

import privframe as pf
from privframe.accounting import advanced_composition, basic_composition
from privframe.errors import BudgetError, ConfigError
from privframe_std._validation import choice

__all__ = ["ApproxDPAccountant"]

_REL_TOL = 1e-12


def _slack(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise ConfigError(f"{attribute.name}: must be a number in (0, 1)")


def _as_eps_delta(event: pf.PrivacyEvent) -> tuple[float, float]:
    budget = event.budget
    if isinstance(budget, pf.PureDP):
        return budget.epsilon, 0.0
    if isinstance(budget, pf.ApproxDP):
        return budget.epsilon, budget.delta
    raise BudgetError(f"accountant: 'approx-dp' cannot compose the GDP event '{event.label}'; use the 'gdp' accountant")


@attrs.frozen
class ApproxDPAccountant:
    """Composes (eps, delta) and pure-DP events.

    Parameters
    ----------
    composition : {"basic", "advanced", "best"}, default "basic"
        "basic" adds epsilons and deltas. "advanced" applies the advanced composition theorem to each group
        of ``count`` identical releases (adding ``slack`` to delta). "best" uses, per group, whichever
        gives the smaller epsilon, falling back to basic composition when only that fits the limit.
    slack : float, default 1e-9
        The advanced-composition slack d.
    """

    name: ClassVar[str] = "approx-dp"
    composition: str = attrs.field(default="basic", validator=choice("basic", "advanced", "best"))
    slack: float = attrs.field(default=1e-9, validator=_slack)

    def _total(self, events: Sequence[pf.PrivacyEvent], mode: str) -> pf.ApproxDP | pf.PureDP:
        parts = []
        for event in events:
            eps, delta = _as_eps_delta(event)
            basic = (event.count * eps, min(event.count * delta, 1.0))
            if event.count == 1 or mode == "basic":
                parts.append(basic)
                continue
            advanced = advanced_composition(eps, delta, event.count, self.slack)
            parts.append(advanced if mode == "advanced" or advanced[0] < basic[0] else basic)
        eps, delta = basic_composition(parts)
        if delta == 0.0:
            return pf.PureDP(eps)
        if delta >= 1.0:
            raise BudgetError("delta: the composed delta reaches 1; the guarantee is void")
        return pf.ApproxDP(eps, delta)

    def compose(self, events: Sequence[pf.PrivacyEvent], limit: pf.Budget | None = None) -> pf.ApproxDP | pf.PureDP:
        """The total: ``PureDP`` when every event is pure and no slack was spent, else ``ApproxDP``.

        With ``composition="best"`` and a ``limit``, basic composition is used whenever the per-group
        choice by epsilon would not fit the limit but basic composition does (e.g. under a pure limit).
        """
        if not events:
            raise BudgetError("events: nothing to compose")
        total = self._total(events, self.composition)
        if self.composition == "best" and limit is not None and not self.fits(total, limit):
            basic = self._total(events, "basic")
            if self.fits(basic, limit):
                return basic
        return total

    def fits(self, total: pf.Budget, limit: pf.Budget) -> bool:
        """Whether (eps, delta) ``total`` is within ``limit`` (an (eps, delta) or pure limit)."""
        if isinstance(total, pf.GDP) or isinstance(limit, pf.GDP):
            return False
        t_delta = total.delta if isinstance(total, pf.ApproxDP) else 0.0
        l_delta = limit.delta if isinstance(limit, pf.ApproxDP) else 0.0
        return total.epsilon <= limit.epsilon * (1 + _REL_TOL) and t_delta <= l_delta * (1 + _REL_TOL)

    def per_call(self, total: pf.Budget, count: int) -> pf.ApproxDP | pf.PureDP:
        """The largest per-call budget whose ``count``-fold composition fits ``total``."""
        if count < 1:
            raise BudgetError("count: must be a positive integer")
        if isinstance(total, pf.GDP):
            raise BudgetError("budget: the 'approx-dp' accountant needs an (epsilon, delta) or pure budget")
        eps = total.epsilon
        delta = total.delta if isinstance(total, pf.ApproxDP) else 0.0
        best_eps, best_delta = eps / count, delta / count
        if count == 1:
            return total
        if self.composition == "basic":
            return pf.PureDP(best_eps) if best_delta == 0.0 else pf.ApproxDP(best_eps, best_delta)
        if self.composition == "advanced" and delta <= self.slack:
            raise BudgetError("slack: advanced composition needs a total delta larger than its slack")
        if delta > self.slack:
            per_delta = (delta - self.slack) / count

            def excess(e: float) -> float:
                return advanced_composition(e, per_delta, count, self.slack)[0] - eps

            if excess(eps) > 0:
                e_adv = float(optimize.brentq(excess, 0.0, eps, xtol=1e-15))
                while excess(e_adv) > 0:
                    e_adv = math.nextafter(e_adv, 0.0)
            else:
                e_adv = eps
            if self.composition == "advanced" or e_adv > best_eps:
                best_eps, best_delta = e_adv, per_delta
        if best_delta == 0.0:
            return pf.PureDP(best_eps)
        return pf.ApproxDP(best_eps, best_delta)
