"""The (epsilon, delta) accountant: amplification by subsampling, and basic, advanced or optimal composition."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import attrs

import privframe.plugin as pp
from privframe.errors import BudgetError
from privframe.privacy.accounting import (
    COMPOSITIONS,
    advanced_composition,
    amplify_wor,
    basic_composition,
    compose_homogeneous,
)

__all__ = ["ApproxDPAccountant"]

_REL_TOL = 1e-12


def _as_eps_delta(event: pp.PrivacyEvent) -> tuple[float, float]:
    """One release's (eps, delta), amplified when it ran on a subsample."""
    budget = event.budget
    if isinstance(budget, pp.PureDP):
        eps, delta = budget.epsilon, 0.0
    elif isinstance(budget, pp.ApproxDP):
        eps, delta = budget.epsilon, budget.delta
    else:
        raise BudgetError(
            f"'approx-dp' cannot compose the GDP event '{event.label}'; use the 'gdp' accountant", path="accountant"
        )
    if event.subsample is not None:
        eps, delta = amplify_wor(eps, delta, event.subsample.m, event.subsample.n)
    return eps, delta


@attrs.frozen
class ApproxDPAccountant:
    """Composes (eps, delta) and pure-DP events.

    An event that ran on a subsample (``event.subsample``) is first amplified by subsampling without
    replacement, ``(ln(1 + q (e^eps - 1)), q delta)`` with ``q = m / n``. A group of ``count`` identical
    releases is then composed by one of three theorems (``docs/algorithms.md``, section 1): basic (epsilons
    and deltas add), advanced (with a slack d added to delta) or optimal (Kairouz, Oh and Viswanath: the
    exact epsilon at a total delta). Groups are added by basic composition.

    The slack of advanced and optimal composition is the delta the limit leaves over once every event's own
    delta is paid, shared equally between the groups with ``count > 1``; without a limit it is ``slack``.

    Parameters
    ----------
    composition : {"best", "basic", "advanced", "optimal"}, default "best"
        How each group of repeated releases is composed; "best" takes the smallest epsilon of the three.
    slack : float, default 1e-9
        The slack d when no limit is given.
    """

    name: ClassVar[str] = "approx-dp"
    composes: ClassVar[tuple[pp.BudgetKind, ...]] = (pp.PureDP, pp.ApproxDP)
    per_call_units: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pp.PureDP: pp.PureDP, pp.ApproxDP: pp.ApproxDP}
    )
    composition: str = attrs.field(default="best", validator=pp.validators.choice("best", *COMPOSITIONS))
    slack: float = attrs.field(default=1e-9, validator=pp.validators.probability)

    def _group(self, event: pp.PrivacyEvent, mode: str, slack: float) -> tuple[float, float]:
        eps, delta = _as_eps_delta(event)
        count = event.count
        if count == 1 or mode == "basic":
            return count * eps, min(count * delta, 1.0)
        if mode == "advanced":
            return advanced_composition(eps, delta, count, slack)
        if mode == "optimal":
            return compose_homogeneous("optimal", eps, delta, count, count * delta + slack)
        candidates = [compose_homogeneous("basic", eps, delta, count, 0.0)]
        if slack > 0:
            candidates.append(advanced_composition(eps, delta, count, slack))
            with contextlib.suppress(BudgetError):  # a slack below what rounding needs: basic, advanced remain
                candidates.append(compose_homogeneous("optimal", eps, delta, count, count * delta + slack))
        return min(candidates, key=lambda pair: pair[0])

    def _slack(self, events: Sequence[pp.PrivacyEvent], limit: pp.Budget | None) -> float:
        groups = sum(1 for event in events if event.count > 1)
        if groups == 0 or not isinstance(limit, (pp.ApproxDP, pp.PureDP)):
            return self.slack
        own = math.fsum(event.count * _as_eps_delta(event)[1] for event in events)
        spare = (limit.delta if isinstance(limit, pp.ApproxDP) else 0.0) - own
        return spare / groups if spare > 0 else (self.slack if self.composition == "advanced" else 0.0)

    def _total(self, events: Sequence[pp.PrivacyEvent], mode: str, slack: float) -> pp.ApproxDP | pp.PureDP:
        eps, delta = basic_composition([self._group(event, mode, slack) for event in events])
        if delta == 0.0:
            return pp.PureDP(eps)
        if delta >= 1.0:
            raise BudgetError("the composed delta reaches 1; the guarantee is void", path="delta")
        return pp.ApproxDP(eps, delta)

    def compose(self, events: Sequence[pp.PrivacyEvent], limit: pp.Budget | None = None) -> pp.ApproxDP | pp.PureDP:
        """The total: ``PureDP`` when every event is pure and no slack was spent, else ``ApproxDP``.

        With a ``limit``, basic composition is used whenever the chosen composition would not fit it but
        basic composition does (e.g. under a pure limit).
        """
        if not events:
            raise BudgetError("nothing to compose", path="events")
        total = self._total(events, self.composition, self._slack(events, limit))
        if self.composition != "basic" and limit is not None and not self.fits(total, limit):
            basic = self._total(events, "basic", 0.0)
            if self.fits(basic, limit):
                return basic
        return total

    def fits(self, total: pp.Budget, limit: pp.Budget) -> bool:
        """Whether (eps, delta) ``total`` is within ``limit`` (an (eps, delta) or pure limit)."""
        if isinstance(total, pp.GDP) or isinstance(limit, pp.GDP):
            return False
        t_delta = total.delta if isinstance(total, pp.ApproxDP) else 0.0
        l_delta = limit.delta if isinstance(limit, pp.ApproxDP) else 0.0
        return total.epsilon <= limit.epsilon * (1 + _REL_TOL) and t_delta <= l_delta * (1 + _REL_TOL)

    def per_call(self, total: pp.Budget, count: int) -> pp.ApproxDP | pp.PureDP:
        """The largest per-call budget whose ``count``-fold composition fits ``total``.

        Basic composition splits epsilon and delta evenly; advanced composition (with ``slack``) is used
        when it allows a larger per-call epsilon (or always, with ``composition="advanced"``).
        """
        if count < 1:
            raise BudgetError("must be a positive integer", path="count")
        if isinstance(total, pp.GDP):
            raise BudgetError("the 'approx-dp' accountant needs an (epsilon, delta) or pure budget", path="budget")
        eps = total.epsilon
        delta = total.delta if isinstance(total, pp.ApproxDP) else 0.0
        best_eps, best_delta = eps / count, delta / count
        if count == 1:
            return total
        if self.composition == "basic":
            return pp.PureDP(best_eps) if best_delta == 0.0 else pp.ApproxDP(best_eps, best_delta)
        if self.composition == "advanced" and delta <= self.slack:
            raise BudgetError("advanced composition needs a total delta larger than its slack", path="slack")
        if delta > self.slack:
            per_delta = (delta - self.slack) / count
            slack = delta - count * per_delta  # exactly the slack compose() sees against this total

            def excess(e: float) -> float:
                return advanced_composition(e, per_delta, count, slack)[0] - eps

            if excess(eps) > 0:
                from scipy import optimize  # imported on first use

                e_adv = float(optimize.brentq(excess, 0.0, eps, xtol=1e-15))
                while excess(e_adv) > 0:
                    e_adv = math.nextafter(e_adv, 0.0)
            else:
                e_adv = eps
            if self.composition == "advanced" or e_adv > best_eps:
                best_eps, best_delta = e_adv, per_delta
        if best_delta == 0.0:
            return pp.PureDP(best_eps)
        return pp.ApproxDP(best_eps, best_delta)
