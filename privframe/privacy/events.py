"""Privacy events: frozen records of one privatised release, or of a homogeneous group of them.

In the style of dp-accounting's events: an event says what ran (``count`` releases, each ``budget``-private
with respect to the records it saw, optionally on a uniform subsample); accountants compose them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import BudgetError, ConfigError
from privframe.privacy.budgets import Budget, budget_from_table, budget_to_table
from privframe.privacy.curves import PrivacyCurve, privacy_curve
from privframe.privacy.noise import FloatNoise, NoisePlan, noise_plan_from_dict

__all__ = ["PrivacyEvent", "Subsample"]


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
    noise : LatticePlan, FloatNoise or None, default None
        How the noise is drawn: the exact lattice plan (grid, integer parameters, the guarantee the rounded
        release meets), or :class:`~privframe.privacy.noise.FloatNoise` for a simulation-only release.
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
    noise: NoisePlan | None = None

    @property
    def simulated(self) -> bool:
        """True when the noise is floating point (``exact=False``): for simulations only, never publish it."""
        return isinstance(self.noise, FloatNoise)

    @property
    def curve(self) -> PrivacyCurve:
        """The privacy curve of one release (its tight (eps, delta) curve, GDP and pure views).

        For the whole event (``count`` releases composed, in any accountant's terms) use the accountants, or
        :func:`privframe.privacy.ledger.event_pld` for dp-accounting's numerical composition.
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
        if self.noise is not None:
            table["noise"] = self.noise.to_dict()
        return table

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], path: str = "event") -> PrivacyEvent:
        """The event a :meth:`to_dict` table describes; a malformed table raises ``ConfigError`` at ``path``."""
        if not isinstance(table, Mapping):
            raise ConfigError("expected a table", path=path)
        known = {"label", "mechanism", "budget", "sensitivity", "noise_scale", "count", "asymptotic", "note"}
        unknown = set(table) - known - {"details", "subsample", "noise"}
        if unknown:
            raise ConfigError("unknown key", path=f"{path}.{sorted(unknown)[0]}")
        budget = table.get("budget")
        if not isinstance(budget, Mapping):
            raise ConfigError("expected a budget table", path=f"{path}.budget")
        fields = {key: table[key] for key in known - {"budget"} if key in table}
        sub = table.get("subsample")
        plan = table.get("noise")
        try:
            return cls(
                budget=budget_from_table(budget, f"{path}.budget"),
                details=dict(table.get("details", {})),
                subsample=None if sub is None else Subsample(int(sub["n"]), int(sub["m"])),
                noise=None if plan is None else noise_plan_from_dict(plan),
                **fields,
            )
        except (TypeError, KeyError, ValueError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError("malformed event", path=path) from exc
