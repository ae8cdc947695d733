"""The ledger a result carries: its privacy events and their composed total, and dp-accounting's view of them.

A :class:`Ledger` is the frozen list of events (:mod:`privframe.privacy.events`) plus their composed total in the
accountant's native unit. Accountant plugins compose events; the core only stores and converts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from privframe.errors import BudgetError
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.privacy.curves import PLD_DISCRETIZATION, budget_pld
from privframe.privacy.events import PrivacyEvent

__all__ = ["Ledger", "event_pld"]


def event_pld(event: PrivacyEvent, *, discretization: float = PLD_DISCRETIZATION) -> Any:
    """dp-accounting's privacy-loss distribution of ``event`` (all ``count`` releases composed).

    Needs the ``accounting`` extra (``pip install 'privframe[accounting]'``). The PLD is pessimistic:
    dp-accounting rounds privacy losses up, and a release on a subsample is counted at its own guarantee
    (no amplification is claimed). Compose events with ``pld.compose`` and read
    ``get_epsilon_for_delta`` / ``get_delta_for_epsilon`` off the result.

    Examples
    --------
    >>> import privframe as pf
    >>> event = pf.PrivacyEvent("bootstrap", "gaussian", pf.GDP(0.1), count=100)
    >>> round(pf.event_pld(event).get_epsilon_for_delta(1e-5), 2)  # the composition is 1-GDP
    4.38
    """
    one = budget_pld(event.budget, discretization)
    return one.self_compose(event.count) if event.count > 1 else one


def _as_events(events: Iterable[PrivacyEvent]) -> tuple[PrivacyEvent, ...]:
    return tuple(events)


@attrs.frozen
class Ledger:
    """The privacy spend of one result: frozen events plus their composed total.

    Parameters
    ----------
    events : tuple of PrivacyEvent
        Every release that touched the data, in order.
    total : Budget or None
        The composition of the events in the accountant's native unit (None for non-private results).
    accountant : str
        Name of the accountant that composed the total.
    """

    events: tuple[PrivacyEvent, ...] = attrs.field(converter=_as_events)
    total: Budget | None
    accountant: str = ""

    @property
    def private(self) -> bool:
        """False for non-private references, which must never be used as a release."""
        return self.total is not None

    def as_approx_dp(self, delta: float) -> ApproxDP:
        """The total as (eps, delta)-DP at the given ``delta`` (tight for GDP)."""
        if self.total is None:
            raise BudgetError("a non-private result has no (epsilon, delta) guarantee", path="privacy")
        return self.total.to_approx_dp(delta)

    def summary(self, delta: float = 1e-6) -> str:
        """One line: the total in its native unit and as (eps, delta)-DP, flagged when only asymptotic."""
        if self.total is None:
            return "non-private (no privacy guarantee)"
        flag = " (asymptotic guarantee)" if self.asymptotic else ""
        if isinstance(self.total, (PureDP, ApproxDP)) or (isinstance(self.total, GDP) and delta <= self.total.delta):
            return f"{self.total}{flag}"
        approx = self.as_approx_dp(delta)
        return f"{self.total} = ({approx.epsilon:.4g}, {approx.delta:g})-DP{flag}"

    @property
    def asymptotic(self) -> bool:
        """True when any event's guarantee holds only asymptotically (e.g. Dette-Graw's "clt" calibration)."""
        return any(event.asymptotic for event in self.events)
