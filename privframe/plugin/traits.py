"""What parts declare about themselves, in typed records read once when a pipeline is built.

A statistic declares its static facts in one :class:`StatisticTraits` record (bounds required, a centred
limit law, a consistent bootstrap, its quantile level, the mechanism that privatises it by default); a method
declares what it needs of its parts in one :class:`MethodNeeds` record. The capabilities a statistic *offers*
(a rate, a smooth sensitivity, weighted evaluation, partial sums) stay protocols
(:mod:`privframe.plugin.protocols`): they are functions, not facts. :mod:`privframe.plugin.contracts` checks
one against the other, before any data are read.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import PluginError
from privframe.plugin.protocols import (
    Accountant,
    BudgetKind,
    DecomposableStatistic,
    Mechanism,
    Sampler,
    SmoothStatistic,
    Statistic,
    WeightedStatistic,
)
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP

__all__ = [
    "DEFAULT_TRAITS",
    "MechanismBudget",
    "MethodNeeds",
    "StatisticNeed",
    "StatisticTraits",
    "default_mechanism",
    "traits_of",
]


def _level(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise PluginError("a statistic's quantile level must be a number in (0, 1) or None", path="traits.quantile")


def _mechanisms(value: Mapping[Any, str]) -> Mapping[Any, str]:
    for kind, name in value.items():
        if kind not in (GDP, ApproxDP, PureDP) or not isinstance(name, str):
            raise PluginError(
                "default_mechanisms maps budget classes (pf.GDP, pf.ApproxDP, pf.PureDP) to mechanism names",
                path="traits.default_mechanisms",
            )
    return frozen_mapping(value)


@attrs.frozen
class StatisticTraits:
    """A statistic's static declarations (the defaults describe a bounded, centred, non-quantile statistic).

    Parameters
    ----------
    requires_bounds : bool, default True
        Its sensitivity needs public bounds; a pipeline without them is a ``ConfigError`` when it is built.
    centred : bool, default True
        Its sampling law about the estimate is centred at the parameter (a mean, a smooth functional), so a
        ball about the estimate can cover. ``False`` for a distance such as Kolmogorov-Smirnov, whose
        estimate is biased upward: methods that draw a ball about the estimate refuse it.
    bootstrap_consistent : bool, default True
        The n-out-of-n bootstrap converges to its sampling law (``False`` for KS: PrivBoot refuses it).
    quantile : float or None, default None
        The quantile level when the statistic is the q-quantile of scalar data; selection mechanisms
        (``exponential``) release such statistics from the data directly.
    equivariant : bool, default False
        It is translation-equivariant, ``theta(x + c) = theta(x) + c`` (a mean, a quantile). With scalar
        bounds ``(low, high)`` privframe then computes it on the data shifted by the public ``low``, on bounds
        ``(0, high - low)``, and adds ``low`` back to what is released (post-processing): far from 0 the doubles
        are too coarse for a record's influence, and a statistic's own rounding could exceed its sensitivity.
    mean : bool, default False
        It is the arithmetic mean of the clipped records (scalar or vector): a method may compute the mean and
        other moments of the records itself (``private-variance``).
    default_mechanisms : mapping of budget class to mechanism name, default {}
        The mechanism a method without a default of its own (``privsub``, ``blbquant``) uses under a budget of
        each kind, e.g. ``{pf.GDP: "gaussian", pf.ApproxDP: "laplace", pf.PureDP: "laplace"}``; a mechanism
        the user names always wins.
    """

    requires_bounds: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    centred: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    bootstrap_consistent: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    quantile: float | None = attrs.field(default=None, validator=_level)
    equivariant: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    mean: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    default_mechanisms: Mapping[Any, str] = attrs.field(factory=dict, converter=_mechanisms, hash=False)


DEFAULT_TRAITS = StatisticTraits()
"""The traits of a statistic that declares none."""


def traits_of(statistic: Statistic) -> StatisticTraits:
    """The statistic's declared ``traits``, or :data:`DEFAULT_TRAITS`; anything else is a ``PluginError``."""
    traits = getattr(statistic, "traits", DEFAULT_TRAITS)
    if not isinstance(traits, StatisticTraits):
        raise PluginError(f"statistic '{statistic.name}'.traits must be a privframe.plugin.StatisticTraits")
    return traits


def default_mechanism(traits: StatisticTraits, budget: Budget) -> str | None:
    """The statistic's default mechanism under ``budget`` (None when it declares none for that kind)."""
    return traits.default_mechanisms.get(type(budget))


class StatisticNeed(enum.Enum):
    """Something a method needs of its statistic; each is checked when the pipeline is built."""

    CENTRED = "a limit law centred at the parameter (traits.centred)"
    BOOTSTRAP_CONSISTENT = "a consistent n-out-of-n bootstrap (traits.bootstrap_consistent)"
    SMOOTH_SENSITIVITY = "a smooth sensitivity (log_smooth_sensitivity, evaluate_log_smooth_batch)"
    WEIGHTED = "evaluation on weighted resamples (evaluate_weighted)"
    DECOMPOSABLE = "partial sums over data blocks (partial_batch, combine)"
    QUANTILE = "a quantile level of scalar data (traits.quantile)"
    MEAN = "the arithmetic mean of the records (traits.mean)"

    def holds(self, statistic: Statistic, traits: StatisticTraits) -> bool:
        """Whether ``statistic`` (with its ``traits``) meets this need."""
        if self is StatisticNeed.CENTRED:
            return traits.centred
        if self is StatisticNeed.BOOTSTRAP_CONSISTENT:
            return traits.bootstrap_consistent
        if self is StatisticNeed.SMOOTH_SENSITIVITY:
            return isinstance(statistic, SmoothStatistic)
        if self is StatisticNeed.WEIGHTED:
            return isinstance(statistic, WeightedStatistic)
        if self is StatisticNeed.QUANTILE:
            return traits.quantile is not None
        if self is StatisticNeed.MEAN:
            return traits.mean
        return isinstance(statistic, DecomposableStatistic)


MechanismBudget: TypeAlias = "Literal['per-call', 'own'] | BudgetKind"
"""What kind of budget a method hands its mechanism: ``"per-call"``, the accountant's per-call unit for the
user's budget (:attr:`privframe.plugin.Accountant.per_call_units`); a budget class, always that kind; or
``"own"``, a conversion the method (or its private estimator) makes and checks itself."""


def _protocols(value: object) -> tuple[type[Any], ...] | None:
    if value is None:
        return None
    if isinstance(value, type):
        return (value,)
    if isinstance(value, tuple) and value and all(isinstance(v, type) for v in value):
        return value
    raise PluginError("a method's needs name a protocol, a tuple of protocols, or None", path="needs")


def _needs(value: object) -> frozenset[StatisticNeed]:
    items = frozenset(value) if isinstance(value, (set, frozenset, tuple, list)) else None
    if items is None or not all(isinstance(item, StatisticNeed) for item in items):
        raise PluginError("a method's statistic needs are privframe.plugin.StatisticNeed members", path="needs")
    return items


def _distributed(_: object, __: object, value: object) -> None:
    if value is not True and value is not False and value != "own":
        raise PluginError('distributed is True, False or "own"', path="needs")


@attrs.frozen
class MethodNeeds:
    """What a method needs of its parts; the pipeline checks it when it is built, so ``run`` never does.

    Parameters
    ----------
    sampler, mechanism : protocol, tuple of protocols, or None, default Sampler and Mechanism
        The protocol(s) the part must implement (one of them, for a tuple); None: the method uses no such part.
        The defaults describe the usual method: it resamples, and adds noise to what it releases.
    private : bool, default True
        False for a non-private reference (which takes ``budget=None`` and no accountant). A private method
        always has an accountant: every release is charged through it.
    statistic : set of StatisticNeed, default empty
        What it needs of the statistic.
    mechanism_budget : "per-call", "own" or a budget class, default "per-call"
        The kind of budget the method hands its mechanism (see :data:`MechanismBudget`); the pipeline checks
        that the mechanism ``accepts`` it.
    distributed : bool or "own", default False
        Whether it accepts a Dask array that stays on the workers: True with a decomposable statistic (the
        library evaluates it from per-block partial sums); ``"own"`` when the method reads the blocks itself
        through ``ctx.distributed`` (as rank-quantile reads per-block counts on its public grid), with any
        statistic it accepts.
    shift : bool, default True
        Whether it may run in shifted coordinates (an equivariant statistic's data shifted by the public
        lower bound; see :class:`StatisticTraits`). False for a method that hands the data to user code
        expecting the original values (PrivSub with ``estimator=``).
    asymptotic : bool, default False
        True when the method, as configured, records a guarantee that holds only asymptotically (an explicit
        option such as Dette-Graw's ``calibration="clt"``; never a default). ``method="auto"`` never chooses
        such a pipeline, and a :class:`~privframe.Session` refuses it unless it allows asymptotic guarantees.
    """

    sampler: tuple[type[Any], ...] | None = attrs.field(default=(Sampler,), converter=_protocols)
    mechanism: tuple[type[Any], ...] | None = attrs.field(default=(Mechanism,), converter=_protocols)
    private: bool = True
    statistic: frozenset[StatisticNeed] = attrs.field(factory=frozenset, converter=_needs)
    mechanism_budget: Any = "per-call"
    distributed: bool | Literal["own"] = attrs.field(default=False, validator=_distributed)
    shift: bool = True
    asymptotic: bool = False

    def __attrs_post_init__(self) -> None:
        budget = self.mechanism_budget
        if budget not in ("per-call", "own", GDP, ApproxDP, PureDP):
            raise PluginError("mechanism_budget is 'per-call', 'own' or a budget class", path="needs")

    def part(self, kind: str) -> tuple[type[Any], ...] | None:
        """The protocols needed of the part of ``kind`` (``"sampler"``, ``"mechanism"``, ``"accountant"``)."""
        if kind == "accountant":
            return (Accountant,) if self.private else None
        value: tuple[type[Any], ...] | None = getattr(self, kind)
        return value
