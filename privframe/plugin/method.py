"""The Method protocol: a recipe that turns a run context into a confidence set.

Kept apart from :mod:`privframe.protocols` because a method receives a :class:`~privframe.context.RunContext`,
which itself builds on the part protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from privframe.plugin.context import RunContext
from privframe.privacy.budgets import Budget
from privframe.results import IntervalResult, RegionResult

__all__ = ["Method"]


@runtime_checkable
class Method(Protocol):
    """A recipe that wires the parts into a confidence set.

    ``needs`` maps each part kind the method uses besides the statistic (``"sampler"``, ``"mechanism"``,
    ``"accountant"``) to the protocol, or tuple of protocols, the part must implement; the pipeline checks
    it, so ``run`` never does. A private method needs an accountant: every release is charged through it.
    ``defaults(budget, confidence)`` gives default part names (keys that are part kinds; ``None`` means the
    method does without that part this time) and default options for the parts (any other key, such as
    ``"m"``; options the user sets win). Without a default mechanism the statistic's own
    ``default_mechanism(budget)`` is used. ``private`` is False for non-private references, which take
    ``budget=None``. ``run(ctx)`` receives everything resolved in a :class:`~privframe.context.RunContext`.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def needs(self) -> Mapping[str, type[Any] | tuple[type[Any], ...]]:
        """Part kind -> the protocol(s) the part must implement."""

    @property
    def private(self) -> bool:
        """False for a non-private reference (which then takes ``budget=None``)."""

    def defaults(self, budget: Budget | None, confidence: float) -> Mapping[str, object]:
        """Default part names and part options for this budget and confidence."""

    def run(self, ctx: RunContext) -> IntervalResult | RegionResult:
        """Compute the confidence set; releases are charged through ``ctx``."""
