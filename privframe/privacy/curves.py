"""Privacy curves of budgets and events: the tight (eps, delta) curve, GDP and pure views, and dp-accounting PLDs.

A budget is a guarantee in one unit; its *privacy curve* ``delta(eps)`` is the tightest (eps, delta)-DP
statement it implies for every eps (``docs/algorithms.md``, section 1). Accountants compose events in
their own unit; the curve is the common language a researcher can read off any event, and the
privacy-loss distribution (PLD, :func:`budget_pld`; :func:`privframe.privacy.ledger.event_pld` for a whole event)
hands a release to dp-accounting's numerical composition.

- ``GDP(mu)``: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (the Gaussian curve);
  ``GDP(mu, delta=d)`` adds ``d``.
- ``PureDP(e)``: randomized response's curve, ``delta(eps) = (1 - e^(eps - e)) / (1 + e^-e)`` for
  ``eps < e`` and 0 beyond; every e-DP mechanism is a post-processing of randomized response.
- ``ApproxDP(e, d)``: ``d + (1 - d)`` times the pure curve (Kairouz, Oh and Viswanath's dominating pair).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from privframe.errors import BudgetError, ConfigError
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP

__all__ = ["PLD_DISCRETIZATION", "PrivacyCurve", "budget_pld", "privacy_curve"]

PLD_DISCRETIZATION = 1e-4
"""dp-accounting's default privacy-loss grid; its PLDs are pessimistic (the reported delta is an upper bound)."""


def _pure_delta(epsilon: float, pure: float) -> float:
    """Randomized response's delta at ``epsilon`` for a ``pure``-DP guarantee."""
    if epsilon >= pure:
        return 0.0
    return -math.expm1(epsilon - pure) / (1.0 + math.exp(-pure))


def _pure_epsilon(delta: float, pure: float) -> float:
    """The inverse of :func:`_pure_delta`: the smallest eps >= 0 at which the curve is at most ``delta``."""
    if delta >= _pure_delta(0.0, pure):
        return 0.0
    eps = pure + math.log1p(-delta * (1.0 + math.exp(-pure)))
    while eps < pure and _pure_delta(eps, pure) > delta:  # rounding must never report too small an eps
        eps = math.nextafter(eps, math.inf)
    return max(eps, 0.0)


@attrs.frozen
class PrivacyCurve:
    """The tight (eps, delta) curve of one budget, with its GDP and pure-DP views.

    Parameters
    ----------
    budget : Budget
        The guarantee of one release.

    Examples
    --------
    >>> import privframe as pf
    >>> curve = pf.privacy_curve(pf.PureDP(1.0))
    >>> round(curve.delta(0.0), 6), curve.delta(1.0)
    (0.462117, 0.0)
    >>> round(curve.gdp_mu, 6), curve.pure_epsilon
    (1.232035, 1.0)
    >>> round(pf.privacy_curve(pf.GDP(1.0)).epsilon(1e-5), 6)
    4.377178
    """

    budget: Budget

    def delta(self, epsilon: float) -> float:
        """The smallest delta such that the budget implies (``epsilon``, delta)-DP."""
        epsilon = accounting.check_nonnegative(epsilon, "epsilon")
        budget = self.budget
        if isinstance(budget, GDP):
            return min(budget.delta + accounting.gdp_delta(epsilon, budget.mu), 1.0)
        base = budget.delta if isinstance(budget, ApproxDP) else 0.0
        return base + (1.0 - base) * _pure_delta(epsilon, budget.epsilon)

    def epsilon(self, delta: float) -> float:
        """The smallest eps such that the budget implies (eps, ``delta``)-DP (``BudgetError`` if none)."""
        delta = accounting.check_delta(delta, allow_zero=True)
        budget = self.budget
        base = budget.delta if isinstance(budget, (GDP, ApproxDP)) else 0.0
        if isinstance(budget, GDP):
            if delta <= base:
                raise BudgetError(
                    f"{budget} implies no (epsilon, delta) guarantee with delta <= {base:g}", path="delta"
                )
            return accounting.gdp_epsilon(delta - base, budget.mu)
        if delta < base:
            raise BudgetError(f"{budget} implies no (epsilon, delta) guarantee with delta < {base:g}", path="delta")
        if base == 0.0:
            return _pure_epsilon(delta, budget.epsilon)
        return _pure_epsilon((delta - base) / (1.0 - base), budget.epsilon)

    def points(self, epsilons: list[float]) -> list[tuple[float, float]]:
        """``(eps, delta(eps))`` at each of ``epsilons``: the curve as points."""
        return [(float(e), self.delta(e)) for e in epsilons]

    @property
    def gdp_mu(self) -> float | None:
        """The smallest mu with this budget implying mu-GDP, or None when no mu-GDP statement holds.

        ``GDP(mu)`` gives mu; a pure eps gives ``-2 Phi^{-1}(1 / (1 + e^eps))`` (exact: randomized response
        attains it); a budget with delta > 0 implies no mu-GDP guarantee.
        """
        budget = self.budget
        if isinstance(budget, GDP):
            return budget.mu if budget.delta == 0 else None
        if isinstance(budget, ApproxDP) and budget.delta > 0:
            return None
        return accounting.pure_dp_gdp_mu(budget.epsilon)

    @property
    def pure_epsilon(self) -> float | None:
        """The pure eps the budget implies, or None (a GDP or delta > 0 budget implies no finite pure eps)."""
        budget = self.budget
        if isinstance(budget, PureDP) or (isinstance(budget, ApproxDP) and budget.delta == 0):
            return budget.epsilon
        return None


def privacy_curve(budget: Budget) -> PrivacyCurve:
    """The privacy curve of ``budget`` (see :class:`PrivacyCurve`)."""
    if not isinstance(budget, (GDP, ApproxDP, PureDP)):
        raise ConfigError(f"expected a privacy budget, not {type(budget).__name__}", path="budget")
    return PrivacyCurve(budget)


def budget_pld(budget: Budget, discretization: float = PLD_DISCRETIZATION) -> Any:
    """dp-accounting's (pessimistic) privacy-loss distribution of one release with guarantee ``budget``.

    Needs the ``accounting`` extra. ``GDP(mu)`` is the Gaussian mechanism of sensitivity 1 and sd 1 / mu
    (exactly mu-GDP); pure and (eps, delta) budgets are their dominating pair. A (mu, delta)-GDP budget has
    no privacy-loss distribution: ``ConfigError``.
    """
    try:
        import dp_accounting  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "privacy-loss distributions need dp-accounting: pip install 'privframe[accounting]'", path="event"
        ) from exc
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    if isinstance(budget, GDP):
        if budget.delta > 0:
            raise ConfigError(
                f"a {budget} event (a guarantee that may fail with probability delta, as PTR's) has no "
                "privacy-loss distribution; compose it with the 'gdp' accountant",
                path="event.budget",
            )
        # The Gaussian mechanism of sensitivity 1 and sd 1 / mu is exactly mu-GDP.
        return pld.from_gaussian_mechanism(
            standard_deviation=1.0 / budget.mu, sensitivity=1.0, value_discretization_interval=discretization
        )
    delta = budget.delta if isinstance(budget, ApproxDP) else 0.0
    parameters = common.DifferentialPrivacyParameters(epsilon=budget.epsilon, delta=delta)
    return pld.from_privacy_parameters(parameters, value_discretization_interval=discretization)
