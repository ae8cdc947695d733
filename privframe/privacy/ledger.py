"""The ledger a result carries: its privacy events and their composed total, and dp-accounting's view of them.

A :class:`Ledger` is the frozen list of events (:mod:`privframe.privacy.events`) plus their composed total in the
accountant's native unit. Accountant plugins compose events; the core only stores and converts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from privframe.errors import BudgetError, ConfigError
from privframe.privacy.budgets import GDP, MAX_DELTA, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table
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


def _target_delta(delta: object) -> float:
    """``delta`` as a float if it is a number in ``(0, MAX_DELTA]``, else ``BudgetError`` at ``delta``."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise BudgetError("must be a number (an int or a float; not a string, a bool or None)", path="delta")
    value = float(delta)
    if not (math.isfinite(value) and 0.0 < value <= MAX_DELTA):
        raise BudgetError(f"must satisfy 0 < delta <= {MAX_DELTA:g} (see pf.MAX_DELTA)", path="delta")
    return value


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
        """One line: the total in its native unit and as (eps, delta)-DP, flagged when only asymptotic.

        ``delta`` is the target delta of the (eps, delta) translation of a GDP total: a number with
        ``0 < delta <= pf.MAX_DELTA`` (anything else is a ``BudgetError`` at ``delta``, whatever the total).
        """
        delta = _target_delta(delta)
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

    def to_dict(self, delta: float = 1e-6) -> dict[str, Any]:
        """The ledger as a table (the ``privacy`` entry of a saved result); :meth:`from_dict` inverts it.

        ``total`` and each event's ``budget`` are budget tables (:func:`~privframe.budget_from_table`); the
        derived entries, written for readers and ignored when read back, are ``private``, ``asymptotic``,
        ``summary`` (:meth:`summary` at ``delta``) and ``approx_dp``, the total as ``{"epsilon", "delta"}``
        at ``delta`` (None when non-private, or when the total's own delta is not below ``delta``).

        Examples
        --------
        >>> import privframe as pf
        >>> ledger = pf.Ledger([pf.PrivacyEvent("center", "gaussian", pf.GDP(1.0))], pf.GDP(1.0), "gdp")
        >>> table = ledger.to_dict()
        >>> table["total"], table["summary"], round(table["approx_dp"]["epsilon"], 4)
        ({'unit': 'gdp', 'mu': 1.0}, '1-GDP = (4.887, 1e-06)-DP', 4.8866)
        >>> pf.Ledger.from_dict(table) == ledger
        True
        """
        delta = _target_delta(delta)
        try:
            approx = None if self.total is None else self.as_approx_dp(delta)
        except BudgetError:
            approx = None
        return {
            "private": self.private,
            "total": budget_to_table(self.total),
            "accountant": self.accountant,
            "asymptotic": self.asymptotic,
            "summary": self.summary(delta),
            "approx_dp": None if approx is None else {"epsilon": approx.epsilon, "delta": approx.delta},
            "events": [event.to_dict() for event in self.events],
        }

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], path: str = "privacy") -> Ledger:
        """The ledger a :meth:`to_dict` table describes; a malformed table raises ``ConfigError`` at ``path``."""
        if not isinstance(table, Mapping):
            raise ConfigError("expected a table", path=path)
        events = table.get("events", [])
        if not isinstance(events, list | tuple):
            raise ConfigError("expected a list of event tables", path=f"{path}.events")
        total = table.get("total")
        if total is not None and not isinstance(total, Mapping):
            raise ConfigError("expected a budget table or null", path=f"{path}.total")
        accountant = table.get("accountant", "")
        if not isinstance(accountant, str):
            raise ConfigError("expected a name", path=f"{path}.accountant")
        return cls(
            events=[PrivacyEvent.from_dict(event, f"{path}.events[{i}]") for i, event in enumerate(events)],
            total=None if total is None else budget_from_table(total, f"{path}.total"),
            accountant=accountant,
        )
