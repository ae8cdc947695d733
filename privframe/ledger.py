"""Privacy events and the ledger a result carries.

A :class:`PrivacyEvent` is a frozen record of one privatised release (or of a homogeneous group of
them). A :class:`Ledger` is the frozen list of events plus their composed total in the accountant's
native unit. Accountant plugins compose events; the core only stores and converts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from privframe._frozen import frozen_mapping
from privframe.budgets import GDP, ApproxDP, Budget, PureDP, budget_from_table, budget_to_table
from privframe.curves import PLD_DISCRETIZATION, PrivacyCurve, budget_pld, privacy_curve
from privframe.errors import BudgetError, ConfigError

__all__ = ["Ledger", "PrivacyEvent", "Subsample", "event_pld"]


def _positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BudgetError("must be a positive integer", path=attribute.name)


@attrs.frozen
class Subsample:
    """A release that saw only a uniform size-m subset, drawn without replacement, of the n records.

    Accountants amplify its guarantee by the sampling rate m/n (see ``docs/algorithms.md``, section 1).
    """

    n: int = attrs.field(validator=_positive_int)
    m: int = attrs.field(validator=_positive_int)

    def __attrs_post_init__(self) -> None:
        if self.m > self.n:
            raise BudgetError("must satisfy 1 <= m <= n", path="m")


@attrs.frozen
class PrivacyEvent:
    """One privatised release, or ``count`` identical ones composed together.

    An event says what ran, in the style of dp-accounting's events: ``count`` releases (composed), each
    ``budget``-private with respect to the records it saw; with ``subsample`` each of them saw a uniform
    subset of the data (amplified by the accountant); ``asymptotic`` flags a guarantee that holds only in
    a limit. Accountants compose events; methods never compose by hand.

    Parameters
    ----------
    label : str
        What was released (``"center"``, ``"radius"``, ``"subsample"``...).
    mechanism : str
        The registered mechanism that released it.
    budget : Budget
        The guarantee of one release, in the mechanism's native unit.
    sensitivity : float or None
        The sensitivity the noise was calibrated to (None when not meaningful).
    noise_scale : float or None
        The standard deviation (Gaussian) or scale (Laplace) of the noise actually drawn.
    count : int, default 1
        Number of identical releases this event stands for (a ``count``-fold composition).
    subsample : Subsample, optional
        Each release ran on a uniform size-m subset of the n records (its ``budget`` is with respect to
        those m records); accountants amplify it.
    asymptotic : bool, default False
        True when the guarantee holds only asymptotically (flagged, never hidden).
    note : str, default ""
        Free-text provenance (amplification, group privacy factor, ...).
    details : mapping of str to float, default {}
        Public parameters of the mechanism that the guarantee depends on (e.g. PTR-GDP's ``gamma``,
        ``mu_test`` and ``mu_release``).
    """

    label: str
    mechanism: str
    budget: Budget
    sensitivity: float | None = None
    noise_scale: float | None = None
    count: int = attrs.field(default=1, validator=_positive_int)
    asymptotic: bool = False
    note: str = ""
    details: Mapping[str, float] = attrs.field(factory=dict, converter=frozen_mapping, hash=False)
    subsample: Subsample | None = None

    @property
    def curve(self) -> PrivacyCurve:
        """The privacy curve of one release (its tight (eps, delta) curve, GDP and pure views).

        For the whole event (``count`` releases composed, in any accountant's terms) use the accountants, or
        :func:`privframe.curves.event_pld` for dp-accounting's numerical composition.
        """
        return privacy_curve(self.budget)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table of every field (budgets as config tables); :meth:`from_dict` inverts it."""
        table: dict[str, Any] = {
            "label": self.label,
            "mechanism": self.mechanism,
            "budget": budget_to_table(self.budget),
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "count": self.count,
            "asymptotic": self.asymptotic,
            "note": self.note,
            "details": dict(self.details),
        }
        if self.subsample is not None:
            table["subsample"] = {"n": self.subsample.n, "m": self.subsample.m}
        return table

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], path: str = "event") -> PrivacyEvent:
        """The event a :meth:`to_dict` table describes; a malformed table raises ``ConfigError`` at ``path``."""
        if not isinstance(table, Mapping):
            raise ConfigError("expected a table", path=path)
        known = {"label", "mechanism", "budget", "sensitivity", "noise_scale", "count", "asymptotic", "note"}
        unknown = set(table) - known - {"details", "subsample"}
        if unknown:
            raise ConfigError("unknown key", path=f"{path}.{sorted(unknown)[0]}")
        budget = table.get("budget")
        if not isinstance(budget, Mapping):
            raise ConfigError("expected a budget table", path=f"{path}.budget")
        fields = {key: table[key] for key in known - {"budget"} if key in table}
        sub = table.get("subsample")
        try:
            return cls(
                budget=budget_from_table(budget, f"{path}.budget"),
                details=dict(table.get("details", {})),
                subsample=None if sub is None else Subsample(int(sub["n"]), int(sub["m"])),
                **fields,
            )
        except (TypeError, KeyError, ValueError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError("malformed event", path=path) from exc


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
