"""The Method protocol: a recipe that turns a run context into a confidence set.

Kept apart from :mod:`privframe.plugin.protocols` because a method receives a
:class:`~privframe.plugin.context.RunContext`, which itself builds on the part protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from privframe.bounds import Bounds, L2Ball
from privframe.plugin.context import RunContext
from privframe.plugin.protocols import Statistic
from privframe.plugin.traits import MethodNeeds
from privframe.privacy.budgets import Budget
from privframe.resampling.design import Design
from privframe.results import IntervalResult, RegionResult

__all__ = ["ChecksDesign", "Method", "PublicCall"]


@runtime_checkable
class Method(Protocol):
    """A recipe that wires the parts into a confidence set.

    ``needs`` (a :class:`~privframe.plugin.MethodNeeds`) says which parts the method uses, the protocols they
    must implement, what it needs of the statistic and which budget kind it hands its mechanism; the pipeline
    checks all of it when it is built, so ``run`` never does. ``defaults(budget, confidence)`` gives default
    part names (keys that are part kinds; ``None`` means the method does without that part this time) and
    default options for the parts (any other key, such as ``"m"``; options the user sets win). Without a
    default mechanism the statistic's own (``traits.default_mechanisms``) is used. ``run(ctx)`` receives
    everything resolved in a :class:`~privframe.plugin.context.RunContext`.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def needs(self) -> MethodNeeds:
        """What the method needs of its parts (may depend on its options)."""

    def defaults(self, budget: Budget | None, confidence: float) -> Mapping[str, object]:
        """Default part names and part options for this budget and confidence."""

    def run(self, ctx: RunContext[Any]) -> IntervalResult | RegionResult:
        """Compute the confidence set; releases are charged through ``ctx``."""


@attrs.frozen
class PublicCall:
    """What is public about one call before its data are read: n, the budget, the bounds, the confidence, and
    the resolved mechanism.

    Parameters
    ----------
    n : int
        The number of records.
    budget : Budget or None
        The call's budget (None for a non-private reference).
    bounds : Bounds, L2Ball or None
        The public bounds, in the data's own coordinates.
    confidence : float
        The nominal coverage.
    mechanism : object or None, default None
        The resolved mechanism part (None for a method without one), so a method can plan its releases, and
        refuse a budget the mechanism cannot honour, before the call is charged.
    """

    n: int
    budget: Budget | None
    bounds: Bounds | L2Ball | None
    confidence: float
    mechanism: object | None = None


@runtime_checkable
class ChecksDesign(Protocol):
    """A method that may refuse a call from its public inputs only, before any data are read.

    ``privframe.Pipeline.check(n)`` calls it, the front door before it reads the data and a session before it
    admits a call, so such a refusal costs nothing (BLBQuant refuses blocks too small for the statistic,
    PrivBoot's asymptotic accounting too few resamples for its budget, rank-quantile an n and budget at which
    no interval narrower than the bounds is valid).
    """

    def check_design(self, design: Design | None, statistic: Statistic, call: PublicCall) -> None:
        """Raise ``ConfigError`` if the call does not suit the method; ``design`` is the sampler's design at
        n, None for a method without a sampler."""
