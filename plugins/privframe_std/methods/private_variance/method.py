"""The ``private-variance`` method: a private mean and a private spread, inverted into a valid interval.

The plan, the statistics and the interval are the pure functions of
:mod:`~privframe_std.methods.private_variance.core` (``docs/methods/private-variance.md``); this module runs
them: it plans from public inputs, charges and makes the two exact lattice releases, and reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError, DataError
from privframe.privacy import noise
from privframe_std.mechanisms._checks import lattice_event
from privframe_std.methods.private_variance import core
from privframe_std.methods.private_variance.laws import GAUSSIAN

__all__ = ["PrivateVariance"]


def _spent(budget: pp.Budget) -> pp.Budget:
    """The budget the two releases spend: a (mu, delta)-GDP budget's mu (no delta is spent)."""
    return pp.GDP(budget.mu) if isinstance(budget, pp.GDP) else budget


@attrs.frozen
class PrivateVariance:
    """The mean's interval from two releases: the clipped mean and the second moment about the midpoint.

    Both releases carry exact lattice noise (Laplace or Gaussian, whichever spelling of the budget the plan
    expects to be narrower, decided from public inputs); the interval is the set of means the two releases
    cannot reject at the confidence, with the noise of both folded in and a t-factor on the sampling part,
    calibrated over every law on the bounds. Pure eps-DP, (eps, delta)-DP or mu-GDP.

    The method takes no options: the split of the budget between the releases, the mechanisms and the
    inflation of the spread are all chosen by the plan (:func:`~privframe_std.methods.private_variance.core.plan`).
    """

    name: ClassVar[str] = "private-variance"

    @property
    def needs(self) -> pp.MethodNeeds:
        """No sampler and no mechanism part (it releases its two statistics with exact lattice noise itself);
        the mean of scalar records."""
        return pp.MethodNeeds(sampler=None, mechanism=None, statistic={pp.StatisticNeed.MEAN}, mechanism_budget="own")

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """The ``gdp`` accountant for a GDP budget (a ``GDP(mu, delta)`` limit is met spending no delta),
        ``approx-dp`` otherwise."""
        if budget is None:
            raise BudgetError("private-variance is private and needs a budget", path="budget")
        return {"accountant": "gdp" if isinstance(budget, pp.GDP) else "approx-dp"}

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Refuse, from public inputs only, bounds that are not scalar, fewer than 2 records, and bounds so
        wide that the plan's noise variances overflow the doubles (the plan is computed here, and cached)."""
        if not isinstance(call.bounds, pp.Bounds):
            raise ConfigError("private-variance needs public scalar bounds (low, high)", path="bounds")
        if call.n < 2:
            raise ConfigError("private-variance needs at least 2 records", path="n")
        if call.budget is not None:
            try:
                core.plan(call.n, (call.bounds.low, call.bounds.high), _spent(call.budget), float(call.confidence))
            except OverflowError:
                raise ConfigError(
                    "are too wide for private-variance: the noise variance of the second moment, about "
                    "(width / 2)^4 / (n epsilon)^2, is not a finite double; rescale the data (and the bounds), "
                    "or use cr-gs",
                    path="bounds",
                ) from None

    def _events(
        self, plan: core.VariancePlan, budget: pp.Budget
    ) -> tuple[list[pp.PrivacyEvent], tuple[noise.LatticePlan, noise.LatticePlan]]:
        """The events to charge and the two releases' lattice plans.

        Under GDP each release is recorded at its ``GDP(mu_i)``, a Laplace release at its ``PureDP(eps_i)``.
        Under an (eps, delta) budget a Gaussian release of a mixed spelling is recorded at the ``(eps_i, delta)``
        it was calibrated to (the budget's epsilon less the Laplace release's), and two Gaussian releases,
        calibrated together as ``mu_1^2 + mu_2^2 <= mu^2`` with mu-GDP implying the budget, as one event at the
        whole budget (the (eps, delta) accountant composes (eps, delta) events only by adding them).
        """
        lattices = (plan.mean.lattice_plan(), plan.second_moment.lattice_plan())
        events = [
            lattice_event(
                pp.PrivacyEvent(
                    label=release.label, mechanism=release.kind, budget=release.budget, sensitivity=release.sensitivity
                ),
                lattice,
            )
            for release, lattice in zip(plan.releases, lattices, strict=True)
        ]
        if not isinstance(budget, pp.ApproxDP):
            return events, lattices
        kinds = [release.kind for release in plan.releases]
        if kinds == [GAUSSIAN, GAUSSIAN]:
            mu_1, mu_2 = plan.mean.parameter, plan.second_moment.parameter
            combined = attrs.evolve(
                events[0],
                label="mean and second moment",
                budget=budget,
                note=f"two Gaussian releases at mu_1 = {mu_1:.6g} and mu_2 = {mu_2:.6g}, composed as GDP, implying "
                f"{budget}; exact discrete Gaussians on power-of-two grids",
                details={"mu_1": mu_1, "mu_2": mu_2, "scale_2": lattices[1].scale},
            )
            return [combined], lattices
        for index, kind in enumerate(kinds):
            if kind == GAUSSIAN:
                eps_i = budget.epsilon - plan.releases[1 - index].parameter
                events[index] = attrs.evolve(events[index], budget=pp.ApproxDP(eps_i, budget.delta))
        return events, lattices

    def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pp.IntervalResult:
        """Plan, charge both releases, compute the two statistics, release them, invert into the interval."""
        bounds = ctx.bounds
        if not isinstance(bounds, pp.Bounds):
            raise ConfigError("private-variance needs public scalar bounds (low, high)", path="bounds")
        if ctx.data.ndim != 1:
            raise DataError("private-variance needs one-dimensional data", path="x")
        budget = ctx.budget
        spent = _spent(budget)
        plan = core.plan(ctx.n, (bounds.low, bounds.high), spent, float(ctx.confidence))
        events, lattices = self._events(plan, spent)
        for event in events:
            ctx.charge(event)
        (rng,) = ctx.generators(1)
        values = core.statistics(ctx.data, plan)
        released = [
            float(noise.release(np.array([value]), lattice, rng)[0])
            for value, lattice in zip(values, lattices, strict=True)
        ]
        low, high, centre = core.interval(released, core.noise_laws(plan), plan)
        return ctx.interval(
            float(low),
            float(high),
            float(centre),
            parameters={"spelling": plan.spelling, "share": plan.share},
            diagnostics={
                "inflation": plan.inflation,
                "t_factor": plan.t_factor,
                "criterion": plan.criterion,
                "noise_scales": tuple(lattice.scale for lattice in lattices),
            },
        )
