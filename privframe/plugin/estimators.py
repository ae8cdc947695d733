"""Private estimators: a DP release of a scalar statistic, run on many subsets of the data at once.

A private estimator is the black box of PrivSub and of BLBQuant (``docs/algorithms.md``, sections 4 and 5).
Given the data, a ``(T, k)`` index matrix and a **per-call** budget, ``release_batch`` returns ``T``
private values, one per row, and the :class:`~privframe.privacy.events.PrivacyEvent` of **one** call: every row is
a separate call on its own ``k`` records, so a method composes ``T`` copies of that event (after
amplification, where its sampler allows it). ``plan`` returns the same event without touching the data,
so a method can refuse an over-budget run before anything is released.

Two kinds, both frozen:

- :class:`MechanismEstimator` ``(statistic, mechanism, bounds)``: an additive mechanism (``laplace``,
  ``gaussian``) on the statistic's value, calibrated to its global L2 sensitivity on ``k`` records, or a
  :class:`~privframe.plugin.SelectionMechanism` (``exponential``) that selects its output from the data.
  It honours any per-call budget its mechanism does, so methods can **calibrate** it. A pure-DP mechanism
  (one whose ``plan`` accepts ``PureDP``) also runs under a GDP budget: it is run at the largest eps whose
  eps-DP implies the requested mu-GDP (:func:`privframe.privacy.accounting.gdp_pure_epsilon`), and the event is
  recorded as that ``GDP(mu)``.
- :class:`CallableEstimator` ``(function, budget)``: a user function that **declares** its own per-call
  guarantee. It cannot be calibrated, only accounted; privframe cannot check the claim, so, as for a plugin
  mechanism registered with ``asserts_privacy=True``, its author vouches for it.

Examples
--------
>>> import numpy as np
>>> import privframe.plugin as pp
>>> mean, laplace = pp.registry.create("statistic", "mean"), pp.registry.create("mechanism", "laplace")
>>> est = pp.MechanismEstimator(mean, laplace, pp.Bounds(0.0, 1.0))
>>> x = np.random.default_rng(0).uniform(size=1000)
>>> index = np.arange(1000).reshape(10, 100)
>>> values, event = est.release_batch(x, index, pp.PureDP(1.0), np.random.default_rng(1))
>>> values.shape, event.budget, round(event.sensitivity, 12)  # 1 / 100, and the mean's rounding, 2^-50
((10,), PureDP(epsilon=1.0), 0.01)

The Laplace noise has scale ``sensitivity / epsilon`` up to a hair: it is drawn exactly on a public
power-of-two grid and the rounding is charged in the sensitivity (``docs/configuration.md``, Mechanisms).

>>> 0.01 <= event.noise_scale <= 0.01 * pp.noise.max_scale_ratio(1.0)
True
>>> event.noise.epsilon <= 1.0, bool(np.all(values % event.noise.grid == 0))
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from privframe._typing import Array, IndexMatrix
from privframe.bounds import Bounds, L2Ball
from privframe.errors import BudgetError, ConfigError, DataError
from privframe.plugin.evaluation import finite, global_sensitivity, guarded
from privframe.plugin.protocols import Mechanism, SelectionMechanism, Statistic
from privframe.privacy import accounting
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.privacy.events import PrivacyEvent

__all__ = ["CallableEstimator", "MechanismEstimator", "PrivateEstimator"]


@runtime_checkable
class PrivateEstimator(Protocol):
    """A DP estimator of a scalar, vectorised over the rows of an index matrix (one call per row)."""

    @property
    def name(self) -> str:
        """A label for ledgers and diagnostics."""

    @property
    def pure(self) -> bool:
        """True when a call given an epsilon budget is pure eps-DP (needs no per-call delta)."""

    @property
    def declared_budget(self) -> Budget | None:
        """The fixed per-call budget of an estimator that declares its own; None when it can be calibrated."""

    def plan(self, k: int, budget: Budget, *, label: str) -> PrivacyEvent:
        """The event of one call on ``k`` records at ``budget`` (pure: draws nothing, reads no data)."""

    def release_batch(
        self, x: Array, index: IndexMatrix, budget: Budget, rng: np.random.Generator
    ) -> tuple[Array, PrivacyEvent]:
        """``T`` private values ``(T,)`` for a ``(T, k)`` index matrix, and the event of one call."""


def _check_index(x: Array, index: IndexMatrix) -> IndexMatrix:
    if index.ndim != 2 or index.shape[0] < 1 or index.shape[1] < 1:
        raise ConfigError("expected a non-empty (T, k) index matrix", path="index")
    if x.shape[0] < 1:
        raise DataError("is empty", path="x")
    return index


def _accepts_pure(mechanism: Mechanism | SelectionMechanism, statistic: Statistic) -> bool:
    try:
        if isinstance(mechanism, SelectionMechanism):
            mechanism.plan_selection(statistic, PureDP(1.0), label="probe")
        else:
            mechanism.plan(1.0, PureDP(1.0), label="probe")
    except BudgetError:
        return False
    return True


@attrs.frozen
class MechanismEstimator:
    """A registered statistic privatised by a registered mechanism, one call per index row.

    Parameters
    ----------
    statistic : Statistic
        A scalar statistic (``evaluate_batch`` returns ``(T, 1)``).
    mechanism : Mechanism or SelectionMechanism
        Additive noise calibrated to ``statistic.sensitivity(k, bounds)`` (which must be finite), or a
        selection mechanism that serves the statistic directly.
    bounds : Bounds, L2Ball or None
        The public bounds the sensitivity depends on (the data must already be prepared with them).
    """

    statistic: Statistic
    mechanism: Mechanism | SelectionMechanism
    bounds: Bounds | L2Ball | None = None
    pure: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.mechanism, (Mechanism, SelectionMechanism)):
            raise ConfigError("expected an additive-noise or a selection mechanism", path="mechanism")
        object.__setattr__(self, "pure", _accepts_pure(self.mechanism, self.statistic))

    @property
    def name(self) -> str:
        """``"<statistic>+<mechanism>"``."""
        return f"{self.statistic.name}+{self.mechanism.name}"

    @property
    def declared_budget(self) -> None:
        """Always None: the per-call budget is chosen by the caller."""
        return None

    def sensitivity(self, k: int) -> float | None:
        """The L2 sensitivity the additive noise is calibrated to on k records (None for selection)."""
        if isinstance(self.mechanism, SelectionMechanism):
            return None
        return global_sensitivity(
            self.statistic, k, self.bounds, needed_by=f"'{self.mechanism.name}'", path="mechanism"
        )

    def _native_budget(self, budget: Budget) -> tuple[Budget, float | None]:
        """The budget handed to the mechanism, and the GDP mu to record when a pure mechanism runs under GDP."""
        if isinstance(budget, GDP) and self.pure:
            if budget.delta:
                budget = GDP(budget.mu)  # a mu-GDP release spends no delta
            return PureDP(accounting.gdp_pure_epsilon(budget.mu)), budget.mu
        if isinstance(budget, ApproxDP) and self.pure:
            return PureDP(budget.epsilon), None
        return budget, None

    def _native_event(self, k: int, budget: Budget, label: str) -> tuple[PrivacyEvent, float | None]:
        native, mu = self._native_budget(budget)
        if isinstance(self.mechanism, SelectionMechanism):
            event = self.mechanism.plan_selection(self.statistic, native, label=label)
        else:
            event = self.mechanism.plan(self.sensitivity(k) or 0.0, native, label=label)
        return event, mu

    def plan(self, k: int, budget: Budget, *, label: str) -> PrivacyEvent:
        """The event of one call on k records; a pure mechanism under GDP is recorded as ``GDP(mu)``."""
        event, mu = self._native_event(k, budget, label)
        if mu is None:
            return event
        assert isinstance(event.budget, PureDP)
        return attrs.evolve(
            event,
            budget=GDP(mu),
            note=f"pure {event.budget.epsilon:.6g}-DP, which implies {mu:.6g}-GDP",
            details={**event.details, "epsilon": event.budget.epsilon},
        )

    def release_batch(
        self, x: Array, index: IndexMatrix, budget: Budget, rng: np.random.Generator
    ) -> tuple[Array, PrivacyEvent]:
        """One private value per row of ``index`` (vectorised over rows) and the event of one call."""
        index = _check_index(x, index)
        k = index.shape[1]
        if not isinstance(self.mechanism, SelectionMechanism):
            with guarded("statistic", self.statistic.name, "evaluate_batch"):
                raw = np.asarray(self.statistic.evaluate_batch(x, index), dtype=np.float64)
            if raw.shape != (index.shape[0], 1):
                raise ConfigError(
                    f"'{self.statistic.name}' is not scalar here; a private estimator needs d = 1", path="statistic"
                )
            return self.release_values(raw, k, budget, rng)
        native, _ = self._native_event(k, budget, "release")
        with guarded("mechanism", self.mechanism.name, "select_batch"):
            selected = self.mechanism.select_batch(self.statistic, x, index, self.bounds, native, rng)
        values = np.asarray(selected, dtype=np.float64)
        if values.shape != (index.shape[0], 1):
            raise ConfigError(f"'{self.mechanism.name}' returned the wrong shape", path="mechanism")
        return values[:, 0], self.plan(k, budget, label="release")

    def release_values(
        self, raw: Array, k: int, budget: Budget, rng: np.random.Generator
    ) -> tuple[Array, PrivacyEvent]:
        """Private values of statistics already computed on k records each, ``raw`` of shape ``(T, 1)``.

        For an additive mechanism only (a selection mechanism needs the records themselves): what
        :meth:`release_batch` does once the statistic is evaluated, e.g. from partial sums on the workers
        of a cluster.
        """
        if isinstance(self.mechanism, SelectionMechanism):
            raise ConfigError(
                f"'{self.mechanism.name}' selects from the records; it cannot release a precomputed value",
                path="mechanism",
            )
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != 1:
            raise ConfigError(
                f"'{self.statistic.name}' is not scalar here; a private estimator needs d = 1", path="statistic"
            )
        native, _ = self._native_event(k, budget, "release")
        with guarded("mechanism", self.mechanism.name, "apply"):
            values = np.asarray(self.mechanism.apply(finite(raw), native, rng), dtype=np.float64)
        if values.shape != raw.shape:
            raise ConfigError(f"'{self.mechanism.name}' returned the wrong shape", path="mechanism")
        return values[:, 0], self.plan(k, budget, label="release")


def _declared(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, (GDP, ApproxDP, PureDP)):
        raise ConfigError("expected pf.PureDP, pf.ApproxDP or pf.GDP (the per-call guarantee)", path=attribute.name)


def _callable(_: Any, attribute: Any, value: Any) -> None:
    if not callable(value):
        raise ConfigError("expected a callable", path=attribute.name)


@attrs.frozen
class CallableEstimator:
    """A user function that declares its own per-call privacy guarantee.

    Parameters
    ----------
    function : callable
        ``function(subset, rng) -> float`` on one subset of records (``x[row]``), drawing its noise from
        ``rng``; with ``batched=True`` instead ``function(x, index, rng) -> (T,)`` for all rows at once.
    budget : PureDP, ApproxDP or GDP
        The guarantee of **one** call, under replace-one on the records it receives. privframe cannot
        verify it: the author of ``function`` vouches for it.
    name : str, default "callable"
        Label for the ledger.
    batched : bool, default False
        Whether ``function`` is vectorised over rows (otherwise it is called once per row, a Python loop).
    """

    function: Callable[..., Any] = attrs.field(validator=_callable)
    budget: Budget = attrs.field(validator=_declared)
    name: str = "callable"
    batched: bool = False

    @property
    def pure(self) -> bool:
        """Whether the declared guarantee is pure eps-DP."""
        return isinstance(self.budget, PureDP) or (isinstance(self.budget, ApproxDP) and self.budget.delta == 0)

    @property
    def declared_budget(self) -> Budget:
        """The declared per-call budget."""
        return self.budget

    def plan(self, k: int, budget: Budget, *, label: str) -> PrivacyEvent:
        """The declared event; ``budget`` must be the declared one (a fixed estimator cannot be calibrated)."""
        if budget != self.budget:
            raise BudgetError("a callable estimator runs only at the per-call budget it declares", path="budget")
        return PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=self.budget,
            note="per-call guarantee declared by the user; privframe cannot verify it",
        )

    def release_batch(
        self, x: Array, index: IndexMatrix, budget: Budget, rng: np.random.Generator
    ) -> tuple[Array, PrivacyEvent]:
        """The function on every row of ``index`` (a loop over rows unless ``batched``)."""
        index = _check_index(x, index)
        event = self.plan(index.shape[1], budget, label="release")
        with guarded("estimator", self.name, "function"):
            if self.batched:
                values = np.asarray(self.function(x, index, rng), dtype=np.float64).reshape(-1)
            else:
                values = np.array([float(self.function(x[row], rng)) for row in index], dtype=np.float64)
        if values.shape != (index.shape[0],):
            raise DataError(f"'{self.name}' must return one number per row", path="estimator")
        # A non-finite output is the function's own release (it is private by its author's claim); refusing it
        # would add a data-dependent failure, so it is made finite like a statistic's value.
        return finite(values), event
