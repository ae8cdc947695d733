"""Privacy budgets as frozen value objects with validated fields and sound conversions.

``GDP(mu)`` is mu-Gaussian DP, ``GDP(mu, delta=d)`` is (mu, d)-GDP (mu-GDP except on an event of
probability at most d), ``ApproxDP(epsilon, delta)`` and ``PureDP(epsilon)`` are the classical units.
A conversion is offered only where it is sound: the converted budget is implied by the original.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from privframe.errors import BudgetError, ConfigError, join_path
from privframe.privacy import accounting

__all__ = [
    "GDP",
    "MAX_DELTA",
    "ApproxDP",
    "Budget",
    "PureDP",
    "as_gdp",
    "budget_from_table",
    "budget_to_table",
    "delta_of",
    "split_budget",
]

MAX_DELTA = 0.1
"""The largest delta a budget may carry.

delta is the probability that the guarantee fails outright: a mechanism that publishes each record in full
with probability delta is (0, delta)-DP. A meaningful delta is far below 1 / n (1e-6 and smaller are usual);
no dataset size makes a delta above 0.1 meaningful (it allows publishing a tenth of the records), so such a
delta is refused as the typo it almost certainly is (``docs/concepts.md``, budgets).
"""

_NOT_A_NUMBER = "must be a number (an int or a float; not a string, a bool or None)"
_DELTA_RULE = f"must satisfy 0 <= delta <= {MAX_DELTA:g} (delta should be far below 1/n; see pf.MAX_DELTA)"


def _is_number(value: object) -> bool:
    """A real number: an int, a float, a numpy real scalar, a ``Fraction`` or a ``Decimal``; never a bool, a
    string (``"1"`` is text, not a number) or None."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (numbers.Real, decimal.Decimal))


def _number(value: object) -> object:
    """Convert a number to float; leave anything else for the validator to reject with a BudgetError."""
    if not _is_number(value):
        return value
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond the doubles: not finite, which the validator then says
        return math.inf
    except (TypeError, ValueError):
        return value


def _checked_delta(value: object) -> float:
    """A target ``delta`` handed to a conversion, as a float; a ``BudgetError`` (path "delta") if not a number."""
    if not _is_number(value):
        raise BudgetError(_NOT_A_NUMBER, path="delta")
    return float(value)  # type: ignore[arg-type]


def _positive_finite(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not isinstance(value, float):
        raise BudgetError(_NOT_A_NUMBER, path=attribute.name)
    if not math.isfinite(value) or value <= 0:
        raise BudgetError("must be a finite number > 0", path=attribute.name)


def _delta_range(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not isinstance(value, float):
        raise BudgetError(_NOT_A_NUMBER, path=attribute.name)
    if not (math.isfinite(value) and 0 <= value <= MAX_DELTA):
        raise BudgetError(_DELTA_RULE, path=attribute.name)


@attrs.frozen
class GDP:
    """mu-Gaussian differential privacy, optionally with a failure probability ``delta``.

    Parameters
    ----------
    mu : float
        The GDP parameter (> 0): distinguishing neighbours is as hard as telling N(0, 1) from N(mu, 1).
    delta : float, default 0
        For (mu, delta)-GDP: the guarantee may fail on an event of probability at most ``delta``
        (``0 <= delta <= MAX_DELTA``).

    Examples
    --------
    >>> import privframe as pf
    >>> round(pf.GDP(1.0).to_approx_dp(1e-5).epsilon, 6)
    4.377178
    """

    mu: float = attrs.field(converter=_number, validator=_positive_finite)
    delta: float = attrs.field(default=0.0, converter=_number, validator=_delta_range, kw_only=True)

    def delta_at(self, epsilon: float) -> float:
        """The delta of the tight (eps, delta)-DP curve implied at ``epsilon`` (plus this budget's delta)."""
        return min(self.delta + accounting.gdp_delta(epsilon, self.mu), 1.0)

    def to_approx_dp(self, delta: float) -> ApproxDP:
        """The smallest eps such that this budget implies (eps, delta)-DP.

        For (mu, delta0)-GDP the target ``delta`` must exceed ``delta0``; the difference is spent on the
        tight Gaussian curve.
        """
        delta = _checked_delta(delta)
        if not (math.isfinite(delta) and 0 < delta <= MAX_DELTA):
            raise BudgetError(f"must satisfy 0 < delta <= {MAX_DELTA:g} (see pf.MAX_DELTA)", path="delta")
        if delta <= self.delta:
            raise BudgetError("must exceed the budget's own delta to convert (mu, delta)-GDP", path="delta")
        return ApproxDP(accounting.gdp_epsilon(delta - self.delta, self.mu), delta)

    def __str__(self) -> str:
        if self.delta:
            return f"({self.mu:g}, {self.delta:g})-GDP"
        return f"{self.mu:g}-GDP"


@attrs.frozen
class ApproxDP:
    """(epsilon, delta)-differential privacy.

    Parameters
    ----------
    epsilon : float
        Privacy-loss bound (> 0).
    delta : float
        Failure probability, ``0 <= delta <= MAX_DELTA`` (0.1; it should be far below 1/n).
    """

    epsilon: float = attrs.field(converter=_number, validator=_positive_finite)
    delta: float = attrs.field(converter=_number, validator=_delta_range)

    def to_approx_dp(self, delta: float) -> ApproxDP:
        """This budget at a target delta: itself when ``delta >= self.delta``, else a ``BudgetError``."""
        delta = _checked_delta(delta)
        if delta < self.delta:
            raise BudgetError("an (epsilon, delta) budget cannot be converted to a smaller delta", path="delta")
        return ApproxDP(self.epsilon, delta)

    def to_gdp(self) -> GDP:
        """The largest mu whose mu-GDP guarantee implies this (eps, delta) (requires delta > 0)."""
        if self.delta <= 0:
            raise BudgetError("no mu-GDP guarantee implies pure epsilon-DP; use a budget with delta > 0", path="delta")
        return GDP(accounting.gdp_mu_for(self.epsilon, self.delta))

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@attrs.frozen
class PureDP:
    """Pure epsilon-differential privacy.

    Parameters
    ----------
    epsilon : float
        Privacy-loss bound (> 0).
    """

    epsilon: float = attrs.field(converter=_number, validator=_positive_finite)

    def to_approx_dp(self, delta: float = 0.0) -> ApproxDP:
        """eps-DP implies (eps, delta)-DP for every delta."""
        return ApproxDP(self.epsilon, delta)

    def __str__(self) -> str:
        return f"{self.epsilon:g}-DP"


Budget: TypeAlias = GDP | ApproxDP | PureDP


def delta_of(budget: Budget) -> float:
    """The delta a budget allows: that of ``GDP(mu, delta)`` or ``ApproxDP(epsilon, delta)``, 0 for ``PureDP``."""
    return budget.delta if isinstance(budget, (GDP, ApproxDP)) else 0.0


def as_gdp(budget: Budget) -> GDP:
    """A GDP budget whose guarantee implies ``budget``, or ``BudgetError`` if none exists.

    ``GDP`` passes through; ``ApproxDP(eps, delta)`` with delta > 0 becomes the largest mu-GDP that implies
    it; ``PureDP`` cannot be honoured by a Gaussian-noise method.
    """
    if isinstance(budget, GDP):
        return budget
    if isinstance(budget, ApproxDP):
        return budget.to_gdp()
    raise BudgetError("a GDP method cannot honour pure epsilon-DP; give pf.GDP(...) or pf.ApproxDP(...)", path="budget")


def split_budget(total: Budget, share: float) -> tuple[Budget, Budget]:
    """``total`` cut into a ``share`` and the rest, in its own unit; the two parts compose back to it.

    GDP parts split ``mu^2`` (composition in quadrature is exact); (eps, delta) and pure parts split eps and
    delta (basic composition adds them).
    """
    rest = 1.0 - share
    if isinstance(total, GDP):
        return (
            GDP(math.sqrt(share) * total.mu, delta=share * total.delta),
            GDP(math.sqrt(rest) * total.mu, delta=rest * total.delta),
        )
    if isinstance(total, PureDP):
        return PureDP(share * total.epsilon), PureDP(rest * total.epsilon)
    return ApproxDP(share * total.epsilon, share * total.delta), ApproxDP(rest * total.epsilon, rest * total.delta)


_BUDGET_UNITS: dict[str, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    "gdp": (GDP, ("mu",), ("delta",)),
    "approx-dp": (ApproxDP, ("epsilon", "delta"), ()),
    "pure-dp": (PureDP, ("epsilon",), ()),
}


def budget_from_table(table: Mapping[str, Any], path: str = "budget") -> Budget:
    """A budget from its config table (``{"unit": "gdp", "mu": 1.0}``); errors name ``path``.

    Examples
    --------
    >>> import privframe as pf
    >>> pf.budget_from_table({"unit": "approx-dp", "epsilon": 1.0, "delta": 1e-6})
    ApproxDP(epsilon=1.0, delta=1e-06)
    """
    if not isinstance(table, Mapping):
        raise ConfigError(
            "expected a table such as {unit = 'gdp', mu = 1.0} (or a pf.GDP, pf.ApproxDP or pf.PureDP)", path=path
        )
    unit = table.get("unit")
    if not isinstance(unit, str) or unit not in _BUDGET_UNITS:
        raise ConfigError(f"expected one of {', '.join(_BUDGET_UNITS)}", path=f"{path}.unit")
    cls, required, optional = _BUDGET_UNITS[unit]
    for key in table:
        if key != "unit" and key not in required + optional:
            raise ConfigError(f"unknown key for a '{unit}' budget", path=f"{path}.{key}")
    for key in required:
        if key not in table:
            raise ConfigError("missing", path=f"{path}.{key}")
    args = [table[k] for k in required]
    kwargs = {k: table[k] for k in optional if k in table}
    try:
        budget: Budget = cls(*args, **kwargs)
    except BudgetError as exc:
        raise ConfigError(exc.message, path=join_path(path, exc.path)) from exc
    return budget


def budget_to_table(budget: Budget | None) -> dict[str, Any] | None:
    """The config table of ``budget`` (the inverse of :func:`budget_from_table`; None stays None)."""
    if budget is None:
        return None
    if isinstance(budget, GDP):
        table: dict[str, Any] = {"unit": "gdp", "mu": budget.mu}
        if budget.delta:
            table["delta"] = budget.delta
        return table
    if isinstance(budget, ApproxDP):
        return {"unit": "approx-dp", "epsilon": budget.epsilon, "delta": budget.delta}
    return {"unit": "pure-dp", "epsilon": budget.epsilon}
