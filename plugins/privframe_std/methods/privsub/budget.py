"""PrivSub's budget plan: per-call budgets for the full-data call and the T subsample calls, as events.

Three cases (``docs/methods/privsub.md``):

- an (eps, delta) or pure total with a calibratable estimator: :func:`calibrate_subsampled` splits it and
  solves for the largest per-call epsilon whose amplified T-fold composition fits;
- a GDP total: ``mu_full = sqrt(share) mu``, and the T calls together get ``mu_T = sqrt(1 - share) mu``. With
  a pure estimator each call runs at the largest eps whose T subsampled releases are ``mu_T``-GDP by the exact
  composed privacy-loss distribution (:mod:`privframe.privacy.amplification`; the ``gdp`` accountant counts
  them the same way); with a Gaussian one no amplification is claimed, ``mu_sub = mu_T / sqrt(T)``;
- an estimator that declares its own per-call budget: nothing is calibrated.

Either way the plan ends in two events that say what runs: one full-data call, and T calls each on a
subsample of m of the n records (``Subsample(n, m)``, ``count = T``). PrivSub charges them through its run
context; the registered accountant amplifies, composes, and refuses a run that does not fit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import attrs

import privframe.plugin as pp
from privframe.errors import BudgetError
from privframe.privacy import accounting
from privframe.privacy.amplification import largest_subsampled_epsilon, subsampled_pure_gdp_mu
from privframe_std.methods.privsub.calibration import (
    SubsampledCalibration,
    calibrate_subsampled,
    compose_subsampled,
)

__all__ = ["BudgetPlan", "plan_budgets"]


@attrs.frozen
class BudgetPlan:
    """Per-call budgets and how the calls were planned.

    Attributes
    ----------
    full_budget, sub_budget : Budget
        The budget handed to the estimator for the full-data call and for each subsample call (on its own
        m records).
    count : int
        T.
    calibration : SubsampledCalibration or None
        The (eps, delta) plan (None under a GDP total).
    diagnostics : mapping
        Public per-call budgets for the result's diagnostics.
    """

    full_budget: pp.Budget
    sub_budget: pp.Budget
    count: int
    calibration: SubsampledCalibration | None
    diagnostics: Mapping[str, Any]

    def events(
        self, full_event: pp.PrivacyEvent, sub_event: pp.PrivacyEvent, *, n: int, m: int
    ) -> tuple[pp.PrivacyEvent, pp.PrivacyEvent]:
        """The events to charge: the full call, and the T subsample calls with their sampling."""
        sampling = pp.Subsample(n=n, m=m)
        cal = self.calibration
        if cal is None:
            sub = attrs.evolve(
                sub_event,
                label="subsample",
                count=self.count,
                subsample=sampling,
                note=_join(sub_event.note, self._gdp_note(n, m)),
            )
            return attrs.evolve(full_event, label="full"), sub
        full_budget = _eps_budget(cal.epsilon_full, cal.delta_full)
        call_budget = _eps_budget(cal.epsilon_call, cal.delta_call)
        full = attrs.evolve(
            full_event, label="full", budget=full_budget, note=_join(full_event.note, f"recorded as {full_budget}")
        )
        sub = attrs.evolve(
            sub_event,
            label="subsample",
            budget=call_budget,
            count=self.count,
            subsample=sampling,
            note=_join(
                sub_event.note,
                f"each call {call_budget} on its own m = {m} records, amplified by subsampling without "
                f"replacement (m/n = {m / n:.6g}); calibrated for {cal.composition} composition",
            ),
            details={**sub_event.details, "sampling_rate": m / n},
        )
        return full, sub

    def _gdp_note(self, n: int, m: int) -> str:
        if self.diagnostics.get("composition") == "gdp-amplified":
            return (
                f"{self.count} calls, each on its own m = {m} of the n = {n} records, composed in GDP through the "
                "exact privacy-loss distribution amplified by subsampling without replacement"
            )
        return f"{self.count} calls composed in GDP; no amplification claimed for Gaussian noise"


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _eps_budget(epsilon: float, delta: float) -> pp.PureDP | pp.ApproxDP:
    return pp.PureDP(epsilon) if delta == 0 else pp.ApproxDP(epsilon, delta)


def _gdp_plan(mu: float, share: float, *, n: int, m: int, count: int, pure: bool) -> BudgetPlan:
    mu_full = math.sqrt(share) * mu
    mu_calls = math.sqrt(max(mu * mu - mu_full * mu_full, 0.0))
    while math.hypot(mu_full, mu_calls) > mu:
        mu_calls = math.nextafter(mu_calls, 0.0)
    if not pure:
        mu_sub = mu_calls / math.sqrt(count)
        diagnostics: dict[str, Any] = {"composition": "gdp", "mu_full": mu_full, "mu_sub": mu_sub}
        return BudgetPlan(pp.GDP(mu_full), pp.GDP(mu_sub), count, None, diagnostics)
    # Each side is rounded so that the accountant's own upward-rounded mu's stay within the budget.
    epsilon_full = accounting.gdp_pure_epsilon(mu_full)
    while accounting.pure_dp_gdp_mu(epsilon_full) > mu_full:
        epsilon_full = math.nextafter(epsilon_full, 0.0)
    epsilon_sub = largest_subsampled_epsilon(mu_calls * (1.0 - 1e-8), m / n, count)
    while subsampled_pure_gdp_mu(epsilon_sub, m / n, count) > mu_calls:
        epsilon_sub *= 1.0 - 1e-7
    diagnostics = {
        "composition": "gdp-amplified",
        "mu_full": mu_full,
        "mu_subsamples": mu_calls,
        "epsilon_full": epsilon_full,
        "epsilon_sub": epsilon_sub,
        "epsilon_sub_unamplified": accounting.gdp_pure_epsilon(mu_calls / math.sqrt(count)),
        "sampling_rate": m / n,
    }
    return BudgetPlan(pp.PureDP(epsilon_full), pp.PureDP(epsilon_sub), count, None, diagnostics)


def _eps_plan(cal: SubsampledCalibration, pure: bool) -> BudgetPlan:
    full: pp.Budget = pp.PureDP(cal.epsilon_full) if pure else pp.ApproxDP(cal.epsilon_full, cal.delta_full)
    sub: pp.Budget = pp.PureDP(cal.epsilon_call) if pure else pp.ApproxDP(cal.epsilon_call, cal.delta_call)
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
    return BudgetPlan(full, sub, cal.count, cal, diagnostics)


def _declared_plan(
    declared: pp.Budget, budget: pp.Budget, *, n: int, m: int, count: int, composition: str
) -> BudgetPlan:
    if isinstance(budget, pp.GDP) or isinstance(declared, pp.GDP):
        if isinstance(declared, pp.ApproxDP) and declared.delta > 0:
            raise BudgetError(
                "an (epsilon, delta) per-call guarantee cannot be composed into a GDP budget", path="budget"
            )
        if not isinstance(budget, pp.GDP) and not (isinstance(budget, pp.ApproxDP) and budget.delta > 0):
            raise BudgetError(
                "GDP per-call guarantees cannot give pure epsilon-DP; give a budget with delta > 0", path="budget"
            )
        return BudgetPlan(declared, declared, count, None, {"composition": "gdp"})
    eps = declared.epsilon
    delta = declared.delta if isinstance(declared, pp.ApproxDP) else 0.0
    limit_delta = budget.delta if isinstance(budget, pp.ApproxDP) else 0.0
    if limit_delta < delta:
        raise BudgetError("the estimator's declared per-call delta exceeds the budget's delta", path="budget")
    cal = compose_subsampled(
        eps, delta, eps, delta, n=n, m=m, count=count, target_delta=limit_delta - delta, composition=composition
    )
    return attrs.evolve(_eps_plan(cal, pure=delta == 0), full_budget=declared, sub_budget=declared)


# A pure function of public numbers; cached because Monte Carlo studies repeat the same settings.
_calibrate = functools.lru_cache(maxsize=256)(calibrate_subsampled)


def plan_budgets(
    budget: pp.Budget,
    estimator: pp.PrivateEstimator,
    *,
    n: int,
    m: int,
    count: int,
    share: float,
    slack_share: float,
    composition: str,
) -> BudgetPlan:
    """The per-call budgets of one PrivSub run (``BudgetError`` for a budget the estimator cannot honour)."""
    declared = estimator.declared_budget
    if declared is not None:
        return _declared_plan(declared, budget, n=n, m=m, count=count, composition=composition)
    if isinstance(budget, pp.GDP):
        return _gdp_plan(budget.mu, share, n=n, m=m, count=count, pure=estimator.pure)
    if not estimator.pure and (isinstance(budget, pp.PureDP) or budget.delta == 0):
        raise BudgetError(
            f"estimator '{estimator.name}' cannot give pure epsilon-DP; use a pure mechanism", path="budget"
        )
    delta = budget.delta if isinstance(budget, pp.ApproxDP) else 0.0
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
    return _eps_plan(cal, estimator.pure)
