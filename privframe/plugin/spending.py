"""The privacy spender: charges each release to an accountant before any noise is drawn."""

from __future__ import annotations

import numpy as np

from privframe._typing import Array
from privframe.errors import BudgetError
from privframe.plugin.evaluation import guarded
from privframe.plugin.protocols import Accountant, Mechanism, SmoothMechanism
from privframe.privacy.budgets import Budget
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.privacy.releases import SmoothRelease

__all__ = ["PrivacySpender"]


class PrivacySpender:
    """Records events through an accountant and refuses any release that would exceed ``limit``.

    Parameters
    ----------
    accountant : Accountant
        Composes the events in its native unit.
    limit : Budget or None
        The most the caller may spend; ``None`` means no limit.
    """

    def __init__(self, accountant: Accountant, limit: Budget | None) -> None:
        self._accountant = accountant
        self._limit = limit
        self._events: list[PrivacyEvent] = []

    def charge(self, event: PrivacyEvent) -> None:
        """Record ``event``, or raise ``BudgetError`` (recording nothing) if the total would exceed the limit."""
        total = self._accountant.compose([*self._events, event], self._limit)
        if self._limit is not None and not self._accountant.fits(total, self._limit):
            raise BudgetError(
                f"releasing '{event.label}' would spend {total}, more than the limit {self._limit}; "
                "nothing was released",
                path="budget",
            )
        self._events.append(event)

    def release(self, mechanism: Mechanism, value: Array, event: PrivacyEvent, *, rng: np.random.Generator) -> Array:
        """Charge an event the caller planned (and perhaps annotated, e.g. with a ``count``), then draw its noise."""
        self.charge(event)
        with guarded("mechanism", mechanism.name, "apply"):
            return mechanism.apply(np.asarray(value, dtype=np.float64), event, rng)

    def release_smooth(
        self,
        mechanism: SmoothMechanism,
        value: Array,
        log_bound: float,
        gamma: float,
        budget: Budget,
        *,
        label: str,
        rng: np.random.Generator,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> tuple[SmoothRelease, PrivacyEvent]:
        """Plan, charge, then test and release through a smooth-bound mechanism.

        The event is charged before the test runs: a failed test (``PTRFailed``) has looked at the data, so
        its spend stays on the ledger.
        """
        event = mechanism.plan_smooth(gamma, budget, label=label, dimension=int(np.size(value)))
        self.charge(event)
        with guarded("mechanism", mechanism.name, "release_smooth"):
            released = mechanism.release_smooth(
                np.asarray(value, dtype=np.float64),
                log_bound,
                event,
                rng,
                proposal=proposal,
                fallback_sensitivity=fallback_sensitivity,
            )
        return released, event

    @property
    def accountant(self) -> Accountant:
        """The accountant that composes the events."""
        return self._accountant

    @property
    def limit(self) -> Budget | None:
        """The most this spender may spend (None: no limit)."""
        return self._limit

    def ledger(self) -> Ledger:
        """The frozen ledger of everything charged so far."""
        total = self._accountant.compose(self._events, self._limit) if self._events else None
        return Ledger(tuple(self._events), total, self._accountant.name)
