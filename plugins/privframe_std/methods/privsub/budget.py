"""PrivSub's budget plan: per-call budgets for the full-data call and the T subsample calls, and the ledger.

Three cases (algorithms.md 1 and 4):

- an (eps, delta) or pure total with a calibratable estimator: :func:`privframe.accounting.calibrate_subsampled`
  splits it, amplifies each subsample call (subsampling without replacement), composes the T calls with the
  tightest of basic, advanced and optimal composition, and solves for the per-call epsilon;
- a GDP total: ``mu_full = sqrt(share) mu`` and ``mu_sub = mu sqrt((1 - share) / T)`` compose exactly to mu.
  There is no closed-form amplification of GDP by subsampling, so none is claimed (**[choice]**; give an
  (eps, delta) budget to benefit from amplification);
- an estimator that declares its own per-call budget: nothing is calibrated; the run is accounted the same
  way and refused if it does not fit the total.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import attrs

import privframe as pf
from privframe import accounting
from privframe.errors import BudgetError

__all__ = ["BudgetPlan", "plan_budgets"]

_REL_TOL = 1e-12  # float rounding in sums of per-call budgets


@attrs.frozen
class BudgetPlan:
    """Per-call budgets, what they compose to, and how.

    Attributes
    ----------
    full_budget, sub_budget : Budget
        The budget of the full-data call and of each subsample call (on its own m records).
    total : Budget
        What the whole run composes to; at most the requested budget.
    accountant : str
        How the total was composed (``"gdp"`` or ``"amplified-<composition>"``).
    count : int
        T.
    calibration : SubsampledCalibration or None
        The (eps, delta) calibration (None under a GDP total).
    diagnostics : mapping
        Public per-call budgets for the result's diagnostics.
    """

    full_budget: pf.Budget
    sub_budget: pf.Budget
    total: pf.Budget
    accountant: str
    count: int
    calibration: accounting.SubsampledCalibration | None
    diagnostics: Mapping[str, Any]

    def ledger(self, full_event: pf.PrivacyEvent, sub_event: pf.PrivacyEvent) -> pf.Ledger:
        """The ledger: the full call and the T subsample calls, in the total's unit, with provenance."""
        cal = self.calibration
        if cal is None:
            sub = attrs.evolve(
                sub_event,
                label="subsample",
                count=self.count,
                note=_join(sub_event.note, f"{self.count} calls composed exactly in GDP; no amplification claimed"),
            )
            return pf.Ledger((attrs.evolve(full_event, label="full"), sub), self.total, self.accountant)
        full = attrs.evolve(
            full_event,
            label="full",
            budget=_eps_budget(cal.epsilon_full, cal.delta_full),
            note=_join(full_event.note, f"recorded as {_eps_budget(cal.epsilon_full, cal.delta_full)}"),
        )
        q = cal.m / cal.n
        sub = attrs.evolve(
            sub_event,
            label="subsample",
            budget=_eps_budget(cal.epsilon_amplified, cal.delta_amplified),
            count=self.count,
            note=_join(
                sub_event.note,
                f"each call {_eps_budget(cal.epsilon_call, cal.delta_call)} on its own m = {cal.m} records; amplified "
                f"by subsampling without replacement (m/n = {q:.6g}); {self.count} calls composed by "
                f"{cal.composition} composition to ({cal.epsilon_composed:.6g}, {cal.delta_composed:.3g})",
            ),
            details={
                **sub_event.details,
                "epsilon_call": cal.epsilon_call,
                "delta_call": cal.delta_call,
                "sampling_rate": q,
                "epsilon_composed": cal.epsilon_composed,
                "delta_composed": cal.delta_composed,
            },
        )
        return pf.Ledger((full, sub), self.total, self.accountant)


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _eps_budget(epsilon: float, delta: float) -> pf.PureDP | pf.ApproxDP:
    return pf.PureDP(epsilon) if delta == 0 else pf.ApproxDP(epsilon, delta)


def _check_fits(total: pf.Budget, budget: pf.Budget) -> None:
    if isinstance(budget, pf.GDP):
        ok = isinstance(total, pf.GDP) and total.mu <= budget.mu * (1 + _REL_TOL)
    else:
        limit_delta = budget.delta if isinstance(budget, pf.ApproxDP) else 0.0
        if isinstance(total, pf.GDP):
            ok = limit_delta > 0 and total.to_approx_dp(limit_delta).epsilon <= budget.epsilon * (1 + _REL_TOL)
        else:
            total_delta = total.delta if isinstance(total, pf.ApproxDP) else 0.0
            ok = total.epsilon <= budget.epsilon * (1 + _REL_TOL) and total_delta <= limit_delta * (1 + _REL_TOL)
    if not ok:
        raise BudgetError(f"budget: this run would spend {total}, more than the budget {budget}; nothing was released")


def _gdp_plan(mu_full: float, mu_sub: float, count: int, budget: pf.Budget, pure: bool) -> BudgetPlan:
    total = pf.GDP(accounting.gdp_compose([mu_full, *([mu_sub] * count)]))
    _check_fits(total, budget)
    diagnostics: dict[str, Any] = {"composition": "gdp", "mu_full": mu_full, "mu_sub": mu_sub}
    if pure:
        diagnostics["epsilon_full"] = accounting.gdp_pure_epsilon(mu_full)
        diagnostics["epsilon_sub"] = accounting.gdp_pure_epsilon(mu_sub)
    return BudgetPlan(pf.GDP(mu_full), pf.GDP(mu_sub), total, "gdp", count, None, diagnostics)


def _eps_plan(cal: accounting.SubsampledCalibration, budget: pf.Budget, pure: bool) -> BudgetPlan:
    total = _eps_budget(cal.epsilon_total, cal.delta_total)
    _check_fits(total, budget)
    full: pf.Budget = pf.PureDP(cal.epsilon_full) if pure else pf.ApproxDP(cal.epsilon_full, cal.delta_full)
    sub: pf.Budget = pf.PureDP(cal.epsilon_call) if pure else pf.ApproxDP(cal.epsilon_call, cal.delta_call)
    diagnostics = {
        "composition": cal.composition,
        "epsilon_full": cal.epsilon_full,
        "delta_full": cal.delta_full,
        "epsilon_sub": cal.epsilon_call,
        "delta_sub": cal.delta_call,
        "epsilon_sub_amplified": cal.epsilon_amplified,
        "delta_sub_amplified": cal.delta_amplified,
        "epsilon_composed": cal.epsilon_composed,
        "delta_composed": cal.delta_composed,
        "sampling_rate": cal.m / cal.n,
        "composition_candidates": dict(cal.candidates),
    }
    return BudgetPlan(full, sub, total, f"amplified-{cal.composition}", cal.count, cal, diagnostics)


def _declared_plan(
    declared: pf.Budget, budget: pf.Budget, *, n: int, m: int, count: int, composition: str
) -> BudgetPlan:
    if isinstance(budget, pf.GDP) or isinstance(declared, pf.GDP):
        if isinstance(declared, pf.GDP):
            mu = declared.mu
        elif isinstance(declared, pf.PureDP) or declared.delta == 0:
            mu = accounting.pure_dp_gdp_mu(declared.epsilon)
        else:
            raise BudgetError("budget: an (epsilon, delta) per-call guarantee cannot be composed into a GDP budget")
        if not isinstance(budget, pf.GDP) and not (isinstance(budget, pf.ApproxDP) and budget.delta > 0):
            raise BudgetError(
                "budget: GDP per-call guarantees cannot give pure epsilon-DP; give a budget with delta > 0"
            )
        plan = _gdp_plan(mu, mu, count, budget, pure=False)
        return attrs.evolve(plan, full_budget=declared, sub_budget=declared)
    eps = declared.epsilon
    delta = declared.delta if isinstance(declared, pf.ApproxDP) else 0.0
    limit_delta = budget.delta if isinstance(budget, pf.ApproxDP) else 0.0
    if limit_delta < delta:
        raise BudgetError("budget: the estimator's declared per-call delta exceeds the budget's delta")
    cal = accounting.compose_subsampled(
        eps, delta, eps, delta, n=n, m=m, count=count, target_delta=limit_delta - delta, composition=composition
    )
    plan = _eps_plan(cal, budget, pure=delta == 0)
    return attrs.evolve(plan, full_budget=declared, sub_budget=declared)


# A pure function of public numbers; cached because Monte Carlo studies repeat the same settings.
_calibrate = functools.lru_cache(maxsize=256)(accounting.calibrate_subsampled)


def plan_budgets(
    budget: pf.Budget,
    estimator: pf.PrivateEstimator,
    *,
    n: int,
    m: int,
    count: int,
    share: float,
    slack_share: float,
    composition: str,
) -> BudgetPlan:
    """The per-call budgets and the total for one PrivSub run; raises ``BudgetError`` if it cannot fit."""
    declared = estimator.declared_budget
    if declared is not None:
        return _declared_plan(declared, budget, n=n, m=m, count=count, composition=composition)
    if isinstance(budget, pf.GDP):
        mu = budget.mu
        return _gdp_plan(math.sqrt(share) * mu, mu * math.sqrt((1 - share) / count), count, budget, estimator.pure)
    if not estimator.pure and (isinstance(budget, pf.PureDP) or budget.delta == 0):
        raise BudgetError(f"budget: estimator '{estimator.name}' cannot give pure epsilon-DP; use a pure mechanism")
    delta = budget.delta if isinstance(budget, pf.ApproxDP) else 0.0
    cal = _calibrate(
        budget.epsilon,
        delta,
        n=n,
        m=m,
        count=count,
        share=share,
        slack_share=slack_share,
        per_call_delta=not estimator.pure,
        composition=composition,
    )
    return _eps_plan(cal, budget, estimator.pure)
