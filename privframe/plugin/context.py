"""The run context: everything a method needs for one call, resolved and validated once by the pipeline.

A method receives a :class:`RunContext` and trusts it: the parts it declared in ``needs`` are present and
implement their protocols, a private method has a budget, the data are prepared by the statistic. The
context also carries the call's privacy spender, so every release of every method is charged through one
path, composed by the registered accountant the pipeline resolved, before any noise is drawn.

The context calls the statistic itself (each call guarded, :func:`privframe.plugin.evaluation.guarded`), so
a method reaches the statistic in one hop: ``ctx.evaluate()`` runs ``statistic.evaluate``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import attrs
import numpy as np

from privframe._rng import spawn_generators
from privframe._typing import Array, IndexMatrix, frozen_mapping
from privframe.bounds import Bounds, L2Ball
from privframe.data.distributed import DistributedData
from privframe.errors import BudgetError, ConfigError, DataError, PrivframeError
from privframe.plugin.evaluation import Coordinates, finite, global_sensitivity, guarded, row_slices
from privframe.plugin.protocols import (
    Accountant,
    DecomposableStatistic,
    DirectStatistic,
    Mechanism,
    PlainSumStatistic,
    RatedStatistic,
    Sampler,
    SmoothMechanism,
    SmoothStatistic,
    SortedSmoothStatistic,
    SortedStatistic,
    Statistic,
)
from privframe.plugin.spending import PrivacySpender
from privframe.privacy.budgets import Budget
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.ledger import Ledger
from privframe.privacy.releases import SmoothRelease
from privframe.resampling.blocks import Resamples, RunOptions, draw
from privframe.resampling.ranked import RankedData, rankable
from privframe.results import IntervalResult, RegionResult

__all__ = ["RunContext", "SmoothEvaluation"]

M = TypeVar("M")


@attrs.frozen
class SmoothEvaluation:
    """theta on every resample with the logs of the smooth bounds: at the full data and per resample."""

    values: Array
    log_full: float
    log_resamples: Array


def _checked(statistic: Statistic, values: object, rows: int, dimension: int) -> Array:
    out = np.asarray(values, dtype=np.float64)
    if out.shape != (rows, dimension):
        raise DataError(
            f"'{statistic.name}' returned shape {out.shape} on a resample, expected {(rows, dimension)}",
            path="statistic",
        )
    return out


def _sums_in_place(statistic: Statistic, x: Array, resamples: Resamples) -> bool:
    """Whether the resamples' sums of ``x`` can stand in for their rows: a sampler that sums in place, a
    plain-sum statistic, one-dimensional doubles (the shape of the data, never their values)."""
    return (
        resamples.sum_block is not None
        and isinstance(statistic, PlainSumStatistic)
        and isinstance(statistic, DecomposableStatistic)
        and x.ndim == 1
        and x.dtype == np.float64
        and bool(x.flags.c_contiguous)
    )


def _sorted_rows_of(statistic: Statistic, x: Array, resamples: Resamples, capability: type) -> RankedData | None:
    """The data ranked for sorted rows (sorted lazily, on the sampler's first use), or None where sorted rows
    cannot stand in for the index rows: a sampler that cannot sort, a statistic without the ``capability``
    (``SortedStatistic`` or ``SortedSmoothStatistic``), or data that are not one-dimensional doubles without a
    negative zero (their shape and sign bits, never their values, decide)."""
    if resamples.sort_block is None or not isinstance(statistic, capability) or not rankable(x):
        return None
    return RankedData(np.ascontiguousarray(x))


def _smooth(statistic: Statistic) -> SmoothStatistic:
    if not isinstance(statistic, SmoothStatistic):  # the pipeline checks the method's needs; a direct caller may not
        raise ConfigError(
            f"'{statistic.name}' has no smooth sensitivity (methods that scale noise to a smooth bound cannot use it)",
            path="statistic",
        )
    return statistic


@attrs.frozen(eq=False)
class RunContext(Generic[M]):
    """One call of a method: its resolved parts, data, budget, bounds, confidence, randomness and spender.

    Built by the pipeline; methods read it and charge every release through it. ``M`` is the mechanism
    protocol the method declared it needs (``RunContext[pp.Mechanism]``), the type of :attr:`mechanism`.

    Attributes
    ----------
    method : str
        The registered name of the method that runs.
    statistic : Statistic
        The statistic.
    data : ndarray
        The data, validated and prepared by the statistic (clipped to the public bounds).
    bounds : Bounds, L2Ball or None
        The public bounds.
    confidence : float
        Nominal coverage ``1 - alpha``.
    options : RunOptions
        Memory budget and worker threads.
    distributed : DistributedData or None
        The data as a Dask array when they stay on the workers (``docs/cluster.md``); ``data`` is then an
        empty placeholder and the in-memory evaluations refuse to run. Only methods whose needs declare
        ``distributed=True`` receive such a context.
    coordinates : Coordinates
        Where the statistic is computed: ``data`` and ``bounds`` are the original ones minus the public
        ``coordinates.offset`` (the lower bound, for a translation-equivariant statistic on scalar bounds;
        else 0). :meth:`interval` and :meth:`ball` add it back to what they report, so a method computes in
        these coordinates throughout and never adds it itself. ``pp.Preparation(ctx.statistic,
        ctx.coordinates)`` prepares records read elsewhere (on the workers of a cluster) the same way.
    """

    method: str
    statistic: Statistic
    data: Array
    bounds: Bounds | L2Ball | None
    confidence: float
    options: RunOptions = attrs.field(factory=RunOptions)
    distributed: DistributedData | None = None
    coordinates: Coordinates = attrs.field(
        default=attrs.Factory(lambda self: Coordinates(0.0, self.bounds), takes_self=True)
    )
    _parts: Mapping[str, object] = attrs.field(factory=dict, converter=frozen_mapping, alias="parts")
    _names: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_mapping, alias="names")
    _seed: np.random.SeedSequence = attrs.field(factory=np.random.SeedSequence, alias="seed")
    _requested: Budget | None = attrs.field(default=None, alias="requested")
    _limit: Budget | None = attrs.field(
        default=attrs.Factory(lambda self: self._requested, takes_self=True), alias="limit"
    )
    _region: bool = attrs.field(default=False, alias="region")
    _spender: PrivacySpender | None = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        accountant = self._parts.get("accountant")
        spender = None
        if self._limit is not None and isinstance(accountant, Accountant):
            spender = PrivacySpender(accountant, self._limit)
        object.__setattr__(self, "_spender", spender)

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
        if self._requested is None:
            raise BudgetError(f"method '{self.method}' is a non-private reference and has no budget", path="budget")
        return self._requested

    def _part(self, kind: str, protocol: type[Any]) -> Any:
        value = self._parts.get(kind)
        if not isinstance(value, protocol):
            raise ConfigError(f"method '{self.method}' has no {kind} implementing {protocol.__name__}", path=kind)
        return value

    @property
    def sampler(self) -> Sampler:
        """The sampler."""
        sampler: Sampler = self._part("sampler", Sampler)
        return sampler

    @property
    def mechanism(self) -> M:
        """The mechanism, of the protocol the method declared in its needs."""
        if "mechanism" not in self._parts:
            raise ConfigError(f"method '{self.method}' has no mechanism", path="mechanism")
        mechanism: M = self._parts["mechanism"]  # type: ignore[assignment]  # checked against needs when built
        return mechanism

    @property
    def accountant(self) -> Accountant:
        """The accountant that composes this call's events."""
        accountant: Accountant = self._part("accountant", Accountant)
        return accountant

    def generators(self, count: int) -> list[np.random.Generator]:
        """``count`` independent generators spawned from the call's seed (call once per run)."""
        return spawn_generators(self._seed, count)

    # -- the statistic --------------------------------------------------------------------------------

    def rate(self, k: int) -> float:
        """tau_k of the statistic: its own ``rate`` if it has one, else ``sqrt(k)``."""
        if isinstance(self.statistic, RatedStatistic):
            with guarded("statistic", self.statistic.name, "rate"):
                return float(self.statistic.rate(k))
        return math.sqrt(k)

    def sensitivity(self, k: int) -> float:
        """The statistic's finite L2 global sensitivity on k records (``ConfigError`` when it has none)."""
        return global_sensitivity(self.statistic, k, self.bounds, needed_by=self.method)

    def _in_memory(self) -> None:
        if self.distributed is not None:
            raise ConfigError(
                f"method '{self.method}' evaluated the statistic in memory on distributed data", path="method"
            )

    def evaluate(self) -> Array:
        """theta on the full data, a ``(d,)`` vector."""
        self._in_memory()
        statistic, x = self.statistic, self.data
        if isinstance(statistic, DirectStatistic):
            with guarded("statistic", statistic.name, "evaluate"):
                value = np.asarray(statistic.evaluate(x), dtype=np.float64).reshape(-1)
        else:
            index = np.arange(x.shape[0], dtype=np.intp)[np.newaxis, :]
            with guarded("statistic", statistic.name, "evaluate_batch"):
                value = np.asarray(statistic.evaluate_batch(x, index), dtype=np.float64).reshape(-1)
        return finite(value)

    def resample(self, rng: np.random.Generator) -> Resamples:
        """The sampler's resamples of the n records, seeded from ``rng``."""
        try:
            return draw(self.sampler, self.n, rng, self.options)
        except PrivframeError as exc:
            if isinstance(exc, ConfigError):
                raise exc.with_prefix("sampler") from exc
            raise

    def evaluate_resamples(self, resamples: Resamples, dimension: int) -> Array:
        """theta on every resample, ``(B, dimension)``, block by block within the memory budget (threads if asked).

        Statistics are computed row by row, so the result does not depend on how rows are grouped.
        """
        self._in_memory()
        statistic, x = self.statistic, self.data

        def rows(index: IndexMatrix) -> Array:
            with guarded("statistic", statistic.name, "evaluate_batch"):
                values = statistic.evaluate_batch(x, index)
            return _checked(statistic, values, index.shape[0], dimension)

        def chunk(block: IndexMatrix) -> Array:
            parts = [rows(index) for index in row_slices(resamples, x, block)]
            return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

        if _sums_in_place(statistic, x, resamples):
            summing = statistic
            assert isinstance(summing, PlainSumStatistic)  # checked by _sums_in_place: narrows the type
            assert isinstance(summing, DecomposableStatistic)

            def summed(i: int) -> Array:
                # The sampler sums each row where it stands (no index rows): the same doubles as the rows'
                # partials, since a plain-sum statistic's partials depend on those sums only. A sampler that
                # declines, or a partial that is not finite (the general path rescales), takes the rows.
                sums = resamples.block_sums(i, x)
                if sums is not None:
                    with guarded("statistic", summing.name, "sum_partials"):
                        partials = [summing.sum_partials(part) for part in sums]
                    if all(bool(np.isfinite(part).all()) for part in partials):
                        with guarded("statistic", summing.name, "combine"):
                            values = summing.combine(partials, resamples.m)
                        return _checked(summing, values, resamples.rows_in_block(i), dimension)
                return chunk(resamples.block(i))

            return finite(np.concatenate(resamples.map_block_numbers(summed), axis=0))
        ranked = _sorted_rows_of(statistic, x, resamples, SortedStatistic)
        if ranked is not None:
            sorting = statistic
            assert isinstance(sorting, SortedStatistic)  # checked by _sorted_rows_of: narrows the type

            def ascending(i: int) -> Array:
                # The sampler hands out each row's values ascending: the statistic reads them with no gather
                # and no sort, the same doubles. A sampler that declines takes the rows.
                sorted_rows = resamples.block_sorted(i, ranked)
                if sorted_rows is None:
                    return chunk(resamples.block(i))
                with guarded("statistic", sorting.name, "evaluate_sorted"):
                    values = sorting.evaluate_sorted(sorted_rows)
                return _checked(sorting, values, sorted_rows.shape[0], dimension)

            return finite(np.concatenate(resamples.map_block_numbers(ascending), axis=0))
        return finite(np.concatenate(resamples.map_blocks(chunk), axis=0))

    def evaluate_smooth(self, resamples: Resamples, dimension: int, beta: float) -> SmoothEvaluation:
        """theta on every resample, ``ln SS_beta`` at the full data and on every resample.

        Non-finite values are made finite as in :func:`~privframe.plugin.evaluation.finite`; a NaN ln SS
        becomes +inf (no bound), which a smooth-bound mechanism turns into an uninformative release.
        """
        self._in_memory()
        statistic, x, bounds = self.statistic, self.data, self.bounds
        smooth = _smooth(statistic)
        with guarded("statistic", statistic.name, "log_smooth_sensitivity"):
            log_full = float(smooth.log_smooth_sensitivity(x, beta, bounds))

        def rows(index: IndexMatrix) -> tuple[Array, Array]:
            with guarded("statistic", statistic.name, "evaluate_log_smooth_batch"):
                values, log_smooth = smooth.evaluate_log_smooth_batch(x, index, beta, bounds)
            return _checked(statistic, values, index.shape[0], dimension), np.asarray(log_smooth, dtype=np.float64)

        ranked = _sorted_rows_of(statistic, x, resamples, SortedSmoothStatistic)

        def block_parts(i: int) -> list[tuple[Array, Array]]:
            # The sampler hands out each row's values ascending (no index row, gather or sort): the same
            # doubles as the statistic's own sort of the gathered rows. A sampler that declines takes the rows.
            sorted_rows = None if ranked is None else resamples.block_sorted(i, ranked)
            if sorted_rows is not None:
                sorting = statistic
                assert isinstance(sorting, SortedSmoothStatistic)  # checked by _sorted_rows_of: narrows the type
                with guarded("statistic", statistic.name, "evaluate_log_smooth_sorted"):
                    values, log_smooth = sorting.evaluate_log_smooth_sorted(sorted_rows, beta, bounds)
                checked = _checked(statistic, values, sorted_rows.shape[0], dimension)
                return [(checked, np.asarray(log_smooth, dtype=np.float64))]
            return [rows(index) for index in row_slices(resamples, x, resamples.block(i))]

        parts = [part for block in resamples.map_block_numbers(block_parts) for part in block]
        values = np.concatenate([p[0] for p in parts], axis=0)
        log_smooth = np.concatenate([p[1] for p in parts], axis=0)
        if log_smooth.shape != (resamples.B,):
            raise DataError(f"'{statistic.name}' returned smooth sensitivities of the wrong shape", path="statistic")
        return SmoothEvaluation(
            values=finite(values),
            log_full=math.inf if math.isnan(log_full) else log_full,
            log_resamples=np.where(np.isnan(log_smooth), math.inf, log_smooth),
        )

    # -- releases -------------------------------------------------------------------------------------

    def _charging(self) -> PrivacySpender:
        if self._spender is None:
            raise BudgetError(f"method '{self.method}' is a non-private reference and cannot release", path="budget")
        return self._spender

    def with_limit(self, limit: Budget) -> RunContext[M]:
        """The same call under a different limit, for a method that runs at a documented conversion of the
        user's budget (PrivBoot's exact accounting at an (epsilon, delta) target). Only before any charge."""
        if self._spender is not None and self._spender.ledger().events:
            raise BudgetError("the limit can only change before anything is charged", path="budget")
        return attrs.evolve(self, limit=limit)

    def plan(self, sensitivity: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event the additive mechanism would spend on a ``dimension``-vector (draws nothing, charges nothing)."""
        mechanism: Mechanism = self._part("mechanism", Mechanism)
        return mechanism.plan(sensitivity, budget, label=label, dimension=dimension)

    def release(self, value: Array, event: PrivacyEvent, *, rng: np.random.Generator) -> Array:
        """Charge ``event`` (planned with :meth:`plan`, perhaps annotated, e.g. with a ``count``), then add the
        additive mechanism's noise to ``value``."""
        mechanism: Mechanism = self._part("mechanism", Mechanism)
        return self._charging().release(mechanism, value, event, rng=rng)

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
        mechanism: SmoothMechanism = self._part("mechanism", SmoothMechanism)
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

    def _parameters(self, extra: Mapping[str, Any] | None) -> dict[str, Any]:
        """The resolved settings every result reports (statistic, parts, n, budget), updated with ``extra``."""
        common: dict[str, Any] = {"statistic": self._names["statistic"]}
        estimand = getattr(self.statistic, "estimand", None)
        if isinstance(estimand, str):  # what the interval is for, when the name alone could mislead
            common["estimand"] = estimand
        for kind in ("sampler", "mechanism", "accountant"):
            if kind in self._parts:
                common[kind] = self._names[kind]
        common["n"] = self.n
        if self._requested is not None:
            common["budget"] = str(self._requested)
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
        """An interval result with the common parameters and this call's ledger (ends and centre mapped back
        from the statistic's coordinates by adding :attr:`offset`)."""
        shift = self.coordinates.offset
        return IntervalResult(
            low=low + shift,
            high=high + shift,
            center=center + shift,
            confidence=self.confidence,
            method=self.method,
            parameters=self._parameters(parameters),
            diagnostics=self._diagnostics(diagnostics),
            privacy=self.ledger(),
        )

    def _diagnostics(self, diagnostics: Mapping[str, Any] | None) -> dict[str, Any]:
        out = dict(diagnostics or {})
        if self.coordinates.offset:
            out["offset"] = self.coordinates.offset  # the statistic was computed on the data minus this public shift
        return out

    def ball(
        self,
        center: Array,
        radius: float,
        *,
        parameters: Mapping[str, Any] | None = None,
        diagnostics: Mapping[str, Any] | None = None,
    ) -> IntervalResult | RegionResult:
        """The ball of ``radius`` about ``center``: an interval for a scalar statistic (unless the caller asked
        for a region, ``pf.confidence_region``), else a region; with the common parameters and the ledger."""
        vector = np.asarray(center, dtype=np.float64).reshape(-1)
        if vector.shape[0] == 1 and not self._region:
            c = float(vector[0])
            return self.interval(c - radius, c + radius, c, parameters=parameters, diagnostics=diagnostics)
        return RegionResult(
            center=vector + self.coordinates.offset,
            radius=radius,
            confidence=self.confidence,
            method=self.method,
            parameters=self._parameters(parameters),
            diagnostics=self._diagnostics(diagnostics),
            privacy=self.ledger(),
        )
