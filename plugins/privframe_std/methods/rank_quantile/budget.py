"""From a budget to the pure epsilon of each exponential-mechanism selection (``docs/methods/rank-quantile.md``).

The rank-quantile interval runs either two independent selections (one per end) or one joint selection.
Every selection is an exponential mechanism with a sensitivity-1 utility, sampled with probability
proportional to ``exp(-eps d / 2)``: it is eps-DP and, more precisely, eps-*bounded-range* (eps-BR): for
every pair of neighbours the log-likelihood ratio of its outputs lies in an interval of length eps. This
module turns a budget into the largest per-selection eps that the budget allows, from public inputs only:

- ``PureDP(eps)``: basic composition, ``eps / 2`` per selection (``eps`` for a single one).
- ``ApproxDP(eps, delta)``: the largest of (i) the pure split, (ii) for two selections, the optimal
  (Kairouz-Oh-Viswanath) composition of the pure selections at ``delta``, (iii) the GDP route below at the
  largest mu whose mu-GDP implies ``(eps, delta)``. All three are sound; (ii) gains a few parts in 10^6 at
  delta = 1e-6. A single selection is one pure event, charged as it is: its epsilon is at most the budget's.
- ``GDP(mu)``: each selection is ``mu_i``-GDP and two compose to ``sqrt(2) mu_i``. With
  ``gdp_accounting="pure"``, ``mu_i = pure_dp_gdp_mu(eps_i)`` (every eps-DP mechanism is that GDP, and no
  smaller mu holds for all of them). With ``"bounded-range"`` (the default), ``mu_i = pure_dp_gdp_mu(eps_i / 2)``:
  every eps-BR mechanism's tradeoff curve lies above ``f_BR(a) = (1 - a) / (1 + (e^eps - 1) a)``
  (:func:`bounded_range_tradeoff`, proved in the method page), and ``G_mu <= f_BR`` holds for
  ``mu = pure_dp_gdp_mu(eps / 2)`` (attained at the symmetric point; verified numerically over eps, see the
  tests). It allows twice the per-selection eps of the pure conversion.
"""

from __future__ import annotations

import math

import attrs

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError
from privframe.privacy import accounting

__all__ = [
    "GDP_ACCOUNTING",
    "SelectionBudget",
    "bounded_range_gdp_mu",
    "bounded_range_tradeoff",
    "selection_epsilon",
]

GDP_ACCOUNTING = ("bounded-range", "pure")
"""How a GDP budget is met: through the bounded-range tradeoff curve (default) or the pure-DP conversion."""


@attrs.frozen
class SelectionBudget:
    """The per-selection epsilon a budget allows, and how it was obtained.

    Parameters
    ----------
    epsilon : float
        Pure epsilon of each selection.
    route : str
        Which accounting gave it (``"pure"``, ``"optimal-composition"``, ``"gdp-bounded-range"``,
        ``"gdp-pure"``).
    """

    epsilon: float
    route: str


def bounded_range_tradeoff(alpha: float, epsilon: float) -> float:
    """The lowest tradeoff curve of an eps-bounded-range mechanism at type-I error ``alpha``.

    A pair (P, Q) whose log-likelihood ratio lies in ``[a, a + eps]`` (``a <= 0 <= a + eps``) has type-II error
    at least ``max(1 - e^{a + eps} alpha, e^a (1 - alpha))`` for every test of level alpha; minimising over a
    gives ``(1 - alpha) / (1 + (e^eps - 1) alpha)``.
    """
    return (1.0 - alpha) / (1.0 + math.expm1(epsilon) * alpha)


def bounded_range_gdp_mu(epsilon: float) -> float:
    """The mu-GDP of an eps-bounded-range mechanism: ``pure_dp_gdp_mu(eps / 2)``.

    The tradeoff curve :func:`bounded_range_tradeoff` passes through ``(1 / (1 + e^{eps/2}), 1 / (1 + e^{eps/2}))``,
    the corner of randomized response at eps / 2, so no smaller mu holds; that this mu holds everywhere
    (``G_mu(a) <= f_BR(a)`` for every a) is checked numerically in the tests for eps up to 20.
    """
    return accounting.pure_dp_gdp_mu(epsilon / 2.0)


def _gdp_per_selection_mu(mu: float, selections: int) -> float:
    """The largest float mu_i with ``gdp_compose([mu_i] * selections) <= mu``."""
    mu_i = mu / math.sqrt(selections)
    while accounting.gdp_compose([mu_i] * selections) > mu:
        mu_i = math.nextafter(mu_i, 0.0)
    return mu_i


def _gdp_epsilon(mu: float, selections: int, gdp_accounting: str) -> SelectionBudget:
    mu_i = _gdp_per_selection_mu(mu, selections)
    if gdp_accounting == "bounded-range":
        # pure_dp_gdp_mu(eps / 2) <= mu_i  <=>  eps / 2 <= gdp_pure_epsilon(mu_i); doubling a float is exact.
        return SelectionBudget(2.0 * accounting.gdp_pure_epsilon(mu_i), "gdp-bounded-range")
    return SelectionBudget(accounting.gdp_pure_epsilon(mu_i), "gdp-pure")


def _optimal_composition_epsilon(epsilon: float, delta: float, selections: int) -> float:
    """The largest per-selection eps whose ``selections``-fold optimal composition is ``(epsilon, delta)``-DP."""
    target = delta * accounting.COMPOSITION_SAFETY

    def fits(e: float) -> bool:
        return accounting.optimal_composition_delta(e, 0.0, selections, epsilon) <= target

    low, high = epsilon / selections, epsilon * 1.5  # fits(low) holds: the basic composition spends no delta
    if fits(high):
        return high  # not reached for delta <= 0.1, kept for safety
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def selection_epsilon(budget: pp.Budget, selections: int, gdp_accounting: str = "bounded-range") -> SelectionBudget:
    """The largest pure epsilon per selection that ``selections`` (1 or 2) independent selections may spend.

    Parameters
    ----------
    budget : pp.PureDP, pp.ApproxDP or pp.GDP
        The budget of the whole release.
    selections : int
        1 (one joint or one-sided selection) or 2 (one selection per end).
    gdp_accounting : {"bounded-range", "pure"}
        How a GDP budget (or the GDP route of an (eps, delta) budget) is met.

    Returns
    -------
    SelectionBudget
        The epsilon and the route that gave it; the choice depends on public inputs only.
    """
    if selections not in (1, 2):
        raise ConfigError("must be 1 or 2", path="selections")
    if gdp_accounting not in GDP_ACCOUNTING:
        raise ConfigError(f"must be one of {', '.join(GDP_ACCOUNTING)}", path="gdp_accounting")
    if isinstance(budget, pp.PureDP):
        return SelectionBudget(budget.epsilon / selections, "pure")
    if isinstance(budget, pp.GDP):
        return _gdp_epsilon(budget.mu, selections, gdp_accounting)
    if isinstance(budget, pp.ApproxDP):
        best = SelectionBudget(budget.epsilon / selections, "pure")
        if budget.delta > 0:
            # One selection is one pure event, which the accountant charges as it is (basic composition of one):
            # an epsilon above the budget's, however small its delta, would be refused when charged.
            if selections > 1:
                optimal = _optimal_composition_epsilon(budget.epsilon, budget.delta, selections)
                if optimal > best.epsilon:
                    best = SelectionBudget(optimal, "optimal-composition")
            via_gdp = _gdp_epsilon(accounting.gdp_mu_for(budget.epsilon, budget.delta), selections, gdp_accounting)
            if via_gdp.epsilon > best.epsilon:
                best = via_gdp
        return best
    raise BudgetError("expected pp.PureDP, pp.ApproxDP or pp.GDP", path="budget")
