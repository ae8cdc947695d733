"""The run context: everything a method needs for one call, resolved and validated once by the pipeline.

A method receives a :class:`RunContext` and trusts it: the parts it declared in ``needs`` are present and
implement their protocols, a private method has a budget, the data are prepared by the statistic. The
context also carries the call's privacy spender, so every release of every method is charged through one
path, composed by the registered accountant the pipeline resolved, before any noise is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from privframe._rng import spawn_generators
from privframe._typing import Array, frozen_mapping
from privframe.bounds import Bounds, L2Ball
from privframe.data.distributed import DistributedData
from privframe.errors import BudgetError, ConfigError, PrivframeError
from privframe.plugin import evaluation
from privframe.plugin.protocols import Accountant, Mechanism, Sampler, SmoothMechanism, Statistic
from privframe.plugin.spending import PrivacySpender
from privframe.privacy.budgets import Budget
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.privacy.releases import SmoothRelease
from privframe.resampling.blocks import Resamples, RunOptions, draw
from privframe.results import IntervalResult, RegionResult

__all__ = ["RunContext"]


def _spender(parts: Mapping[str, object], limit: Budget | None) -> PrivacySpender | None:
    accountant = parts.get("accountant")
    if limit is None or accountant is None:
        return None
    assert isinstance(accountant, Accountant)  # checked by the pipeline against the method's needs
    return PrivacySpender(accountant, limit)


@attrs.frozen(eq=False)
class RunContext:
    """One call of a method: its resolved parts, data, budget, bounds, confidence, seed and spender.

    Built by the pipeline; methods read it and charge every release through it. Attributes are read-only.

    Attributes
    ----------
    method : str
        The registered name of the method that runs.
    statistic : Statistic
        The statistic.
    data : ndarray
        The data, validated and prepared by the statistic (clipped to the public bounds).
    parts : mapping
        The other parts by kind (``"sampler"``, ``"mechanism"``, ``"accountant"``); a kind the method does
        without is absent.
    names : mapping
        The registered name of every part, the method and the statistic included.
    bounds : Bounds, L2Ball or None
        The public bounds.
    confidence : float
        Nominal coverage ``1 - alpha``.
    seed : numpy.random.SeedSequence
        The call's randomness; spawn independent generators with :meth:`generators`.
    options : RunOptions
        Memory budget and worker threads.
    requested : Budget or None
        The user's budget (None for a non-private reference).
    limit : Budget or None
        What this call may spend: the requested budget, unless the method runs at a documented conversion
        of it (:meth:`with_limit`).
    distributed : DistributedData or None
        The data as a Dask array when they stay on the workers (``docs/cluster.md``); ``data`` is then an
        empty placeholder and the in-memory evaluations refuse to run. Only methods declaring
        ``distributed = True`` receive such a context.
    """

    method: str
    statistic: Statistic
    data: Array
    parts: Mapping[str, object] = attrs.field(converter=frozen_mapping)
    names: Mapping[str, str] = attrs.field(converter=frozen_mapping)
    bounds: Bounds | L2Ball | None
    confidence: float
    seed: np.random.SeedSequence
    options: RunOptions = attrs.field(factory=RunOptions)
    requested: Budget | None = None
    limit: Budget | None = attrs.field(default=attrs.Factory(lambda self: self.requested, takes_self=True))
    distributed: DistributedData | None = None
    _spender: PrivacySpender | None = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_spender", _spender(self.parts, self.limit))

    # -- what the call knows --------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Number of records."""
        if self.distributed is not None:
            return self.distributed.n
        return int(self.data.shape[0])

    @property
    def budget(self) -> Budget:
        """The user's budget of a private call (never None for a private method)."""
        if self.requested is None:
            raise BudgetError(f"method '{self.method}' is a non-private reference and has no budget", path="budget")
        return self.requested

    def _missing(self, kind: str, protocol: str) -> ConfigError:
        return ConfigError(f"method '{self.method}' has no {kind} implementing {protocol}", path=kind)

    @property
    def sampler(self) -> Sampler:
        """The sampler."""
        value = self.parts.get("sampler")
        if not isinstance(value, Sampler):
            raise self._missing("sampler", "Sampler")
        return value

    @property
    def accountant(self) -> Accountant:
        """The accountant that composes this call's events."""
        value = self.parts.get("accountant")
        if not isinstance(value, Accountant):
            raise self._missing("accountant", "Accountant")
        return value

    @property
    def mechanism(self) -> object | None:
        """The mechanism, whichever protocol it implements (None when the method does without one)."""
        return self.parts.get("mechanism")

    @property
    def additive_mechanism(self) -> Mechanism:
        """The mechanism as an additive-noise ``pf.Mechanism`` (what :meth:`release` uses)."""
        value = self.parts.get("mechanism")
        if not isinstance(value, Mechanism):
            raise self._missing("mechanism", "Mechanism")
        return value

    @property
    def smooth_mechanism(self) -> SmoothMechanism:
        """The mechanism as a smooth-bound ``pf.SmoothMechanism`` (what :meth:`release_smooth` uses)."""
        value = self.parts.get("mechanism")
        if not isinstance(value, SmoothMechanism):
            raise self._missing("mechanism", "SmoothMechanism")
        return value

    def generators(self, count: int) -> list[np.random.Generator]:
        """``count`` independent generators spawned from the call's seed (call once per run)."""
        return spawn_generators(self.seed, count)

    # -- statistic and resamples ----------------------------------------------------------------------

    def rate(self, k: int) -> float:
        """tau_k of the statistic."""
        return evaluation.rate(self.statistic, k)

    def sensitivity(self, k: int) -> float:
        """The statistic's finite L2 global sensitivity on k records (``ConfigError`` when it has none)."""
        return evaluation.global_sensitivity(self.statistic, k, self.bounds, needed_by=self.method)

    def _in_memory(self) -> None:
        if self.distributed is not None:
            raise ConfigError(
                f"method '{self.method}' evaluated the statistic in memory on distributed data", path="method"
            )

    def evaluate(self) -> Array:
        """theta on the full data, a ``(d,)`` vector."""
        self._in_memory()
        return evaluation.evaluate_full(self.statistic, self.data)

    def resample(self, rng: np.random.Generator) -> Resamples:
        """The sampler's resamples of the n records, seeded from ``rng``."""
        try:
            return draw(self.sampler, self.n, rng, self.options)
        except PrivframeError as exc:
            if isinstance(exc, ConfigError):
                raise exc.with_prefix("sampler") from exc
            raise

    def evaluate_resamples(self, resamples: Resamples, dimension: int) -> Array:
        """theta on every resample, ``(B, dimension)``."""
        self._in_memory()
        return evaluation.evaluate_resamples(self.statistic, self.data, resamples, dimension)

    def log_smooth_sensitivity(self, beta: float) -> float:
        """``ln SS_beta`` of the statistic at the full data."""
        self._in_memory()
        return evaluation.log_smooth_sensitivity(self.statistic, self.data, beta, self.bounds)

    def evaluate_smooth(self, resamples: Resamples, dimension: int, beta: float) -> tuple[Array, Array]:
        """theta and ``ln SS_beta`` on every resample: ``(B, dimension)`` and ``(B,)``."""
        self._in_memory()
        return evaluation.evaluate_resamples_smooth(self.statistic, self.data, resamples, dimension, beta, self.bounds)

    # -- releases -------------------------------------------------------------------------------------

    def _charging(self) -> PrivacySpender:
        if self._spender is None:
            raise BudgetError(f"method '{self.method}' is a non-private reference and cannot release", path="budget")
        return self._spender

    def with_limit(self, limit: Budget) -> RunContext:
        """The same call under a different limit, for a method that runs at a documented conversion of the
        user's budget (PrivBoot's exact accounting at an (epsilon, delta) target). Only before any charge."""
        if self._spender is not None and self._spender.ledger().events:
            raise BudgetError("the limit can only change before anything is charged", path="budget")
        return attrs.evolve(self, limit=limit)

    def plan(self, sensitivity: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event the additive mechanism would spend (pure: draws nothing, charges nothing)."""
        return self.additive_mechanism.plan(sensitivity, budget, label=label, dimension=dimension)

    def release(
        self, value: Array, sensitivity: float, budget: Budget, *, label: str, rng: np.random.Generator
    ) -> tuple[Array, PrivacyEvent]:
        """Plan, charge, then add the additive mechanism's noise: the noisy value and its event."""
        mechanism = self.additive_mechanism
        return self._charging().release(mechanism, value, sensitivity, budget, label=label, rng=rng)

    def release_planned(self, value: Array, event: PrivacyEvent, *, rng: np.random.Generator) -> Array:
        """Charge an event planned with :meth:`plan` (and annotated, e.g. with a ``count``), then add noise."""
        return self._charging().release_planned(self.additive_mechanism, value, event, rng=rng)

    def release_smooth(
        self,
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
        """Plan, charge, then test and release through the smooth-bound mechanism."""
        mechanism = self.smooth_mechanism
        return self._charging().release_smooth(
            mechanism,
            value,
            log_bound,
            gamma,
            budget,
            label=label,
            rng=rng,
            proposal=proposal,
            fallback_sensitivity=fallback_sensitivity,
        )

    def charge(self, event: PrivacyEvent) -> None:
        """Charge a release made by other means (a private estimator, a sparse-vector search) before making it."""
        self._charging().charge(event)

    def ledger(self) -> Ledger:
        """Everything charged so far (an empty ledger for a non-private reference)."""
        if self._spender is None:
            return Ledger((), None)
        return self._spender.ledger()

    # -- results --------------------------------------------------------------------------------------

    def parameters(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The resolved settings every result reports (statistic, parts, n, budget), updated with ``extra``."""
        common: dict[str, Any] = {"statistic": self.names["statistic"]}
        for kind in ("sampler", "mechanism", "accountant"):
            if kind in self.parts:
                common[kind] = self.names[kind]
        common["n"] = self.n
        if self.requested is not None:
            common["budget"] = str(self.requested)
        common.update(extra or {})
        return common

    def interval(
        self,
        low: float,
        high: float,
        center: float,
        *,
        parameters: Mapping[str, Any] | None = None,
        diagnostics: Mapping[str, Any] | None = None,
    ) -> IntervalResult:
        """An interval result with the common parameters and this call's ledger."""
        return IntervalResult(
            low=low,
            high=high,
            center=center,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters(parameters),
            diagnostics=diagnostics or {},
            privacy=self.ledger(),
        )

    def region(
        self,
        center: Array,
        radius: float,
        *,
        parameters: Mapping[str, Any] | None = None,
        diagnostics: Mapping[str, Any] | None = None,
    ) -> RegionResult:
        """A ball result with the common parameters and this call's ledger."""
        return RegionResult(
            center=center,
            radius=radius,
            confidence=self.confidence,
            method=self.method,
            parameters=self.parameters(parameters),
            diagnostics=diagnostics or {},
            privacy=self.ledger(),
        )
