"""The GDP accountant: mu's compose in quadrature, deltas of (mu, delta)-GDP events add."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import attrs

import privframe.plugin as pp
from privframe.errors import BudgetError
from privframe.privacy.accounting import gdp_compose, gdp_epsilon, pure_dp_gdp_mu
from privframe.privacy.amplification import subsampled_pure_gdp_mu

__all__ = ["GDPAccountant"]

_REL_TOL = 1e-12  # float rounding in sqrt(sum mu^2); far below any meaningful budget difference


@attrs.frozen
class GDPAccountant:
    """Composes GDP events: ``mu = sqrt(sum count_i mu_i^2)``, ``delta = sum count_i delta_i``.

    A pure eps-DP event counts as the smallest mu it implies, ``mu = -2 Phi^{-1}(1 / (1 + e^eps))`` (exact:
    randomised response attains it). ``count`` pure releases each on its own subsample of m of the n records
    (``event.subsample``) count together as the mu of their exact composed privacy-loss distribution, amplified
    by the sampling rate m/n (:func:`privframe.privacy.amplification.subsampled_pure_gdp_mu`); a GDP release on a
    subsample is counted at its own guarantee (no amplification is claimed for Gaussian noise). (eps, delta)
    events belong to ``approx-dp``.
    """

    name: ClassVar[str] = "gdp"
    composes: ClassVar[tuple[pp.BudgetKind, ...]] = (pp.GDP, pp.PureDP)
    per_call_units: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pp.GDP: pp.GDP, pp.ApproxDP: pp.GDP}
    )

    def compose(self, events: Sequence[pp.PrivacyEvent], limit: pp.Budget | None = None) -> pp.GDP:
        """The GDP total of ``events`` (the composition is exact, so ``limit`` does not change it)."""
        if not events:
            raise BudgetError("nothing to compose", path="events")
        mus: list[float] = []
        delta = 0.0
        for event in events:
            budget = event.budget
            if isinstance(budget, pp.PureDP) or (isinstance(budget, pp.ApproxDP) and budget.delta == 0):
                if event.subsample is not None and event.subsample.m < event.subsample.n:
                    rate = event.subsample.m / event.subsample.n
                    mus.append(subsampled_pure_gdp_mu(budget.epsilon, rate, event.count))
                else:
                    mus.extend([pure_dp_gdp_mu(budget.epsilon)] * event.count)
                continue
            if not isinstance(event.budget, pp.GDP):
                raise BudgetError(
                    f"'gdp' composes GDP events only; '{event.label}' is {event.budget} (use 'approx-dp')",
                    path="accountant",
                )
            mus.extend([event.budget.mu] * event.count)
            delta += event.count * event.budget.delta
        if delta >= 1.0:
            raise BudgetError("the composed delta reaches 1; the guarantee is void", path="delta")
        return pp.GDP(gdp_compose(mus), delta=delta)

    def fits(self, total: pp.Budget, limit: pp.Budget) -> bool:
        """Whether the GDP ``total`` implies ``limit`` (a GDP or an (eps, delta) limit)."""
        if not isinstance(total, pp.GDP):
            return False
        if isinstance(limit, pp.GDP):
            return total.mu <= limit.mu * (1 + _REL_TOL) and total.delta <= limit.delta * (1 + _REL_TOL)
        if isinstance(limit, pp.ApproxDP):
            if limit.delta <= total.delta:
                return False
            # gdp_epsilon may be 0 (a tiny mu implies (0, delta)-DP), which no ApproxDP value can hold
            return gdp_epsilon(limit.delta - total.delta, total.mu) <= limit.epsilon * (1 + _REL_TOL)
        return False

    def per_call(self, total: pp.Budget, count: int) -> pp.GDP:
        """``GDP(mu / sqrt(count), delta / count)``: count equal calls compose exactly to ``total``."""
        if count < 1:
            raise BudgetError("must be a positive integer", path="count")
        gdp = pp.as_gdp(total)
        return pp.GDP(gdp.mu / math.sqrt(count), delta=gdp.delta / count)
