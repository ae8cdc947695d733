"""The part protocols: Statistic, Sampler, Mechanism, Accountant, and the statistics' optional capabilities.

Plugins implement these structurally (no base class needed). A statistic's optional *capabilities* (functions
it offers: a rate, a smooth sensitivity, weighted evaluation, partial sums...) are separate protocols, so a
minimal plugin stays minimal; its static *traits* (bounds required, centred limit law, quantile level, default
mechanisms) are one record, :class:`privframe.plugin.StatisticTraits`. The pipeline reads both once, when it is
built (:mod:`privframe.plugin.contracts`), and checks them against what the method declares it needs. This
module holds protocols only; the values they exchange live in :mod:`privframe.privacy` and
:mod:`privframe.resampling`, and the Method protocol, which receives a run context, is in
:mod:`privframe.plugin.method`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from privframe._typing import Array, IndexMatrix
from privframe.privacy.budgets import GDP, ApproxDP, Budget, PureDP
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.releases import SmoothRelease, SmoothReleaseBatch
from privframe.resampling.design import Design
from privframe.resampling.ranked import RankedData

__all__ = [
    "MECHANISM_PROTOCOLS",
    "Accountant",
    "BatchSmoothMechanism",
    "BudgetKind",
    "DecomposableStatistic",
    "DescribedNoise",
    "DirectStatistic",
    "Mechanism",
    "PlainSumStatistic",
    "PopulationStatistic",
    "PreparingStatistic",
    "RangedStatistic",
    "RatedStatistic",
    "Sampler",
    "SelectionMechanism",
    "SmoothMechanism",
    "SmoothStatistic",
    "SortedSmoothStatistic",
    "SortedStatistic",
    "SortingSampler",
    "Statistic",
    "SummingSampler",
    "WeightedSelectionMechanism",
    "WeightedStatistic",
]

BudgetKind: TypeAlias = "type[GDP] | type[ApproxDP] | type[PureDP]"
"""A budget class (``GDP``, ``ApproxDP`` or ``PureDP``): what a mechanism accepts or an accountant composes."""


@runtime_checkable
class Statistic(Protocol):
    """A statistic theta: data -> R^d.

    Required: ``name``, ``evaluate_batch`` and ``sensitivity``. Optional: a ``traits`` attribute
    (:class:`privframe.plugin.StatisticTraits`; the defaults when absent), and capabilities
    (:class:`RatedStatistic`, :class:`DirectStatistic`, :class:`PreparingStatistic`, ...) with defaults:
    rate ``sqrt(k)``, evaluation as a batch of one, and clipping to the bounds.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    def evaluate_batch(self, x: Array, index: IndexMatrix) -> Array:
        """Values on B resamples: ``(B, d)`` for a ``(B, m)`` index matrix, vectorised over B."""

    def sensitivity(self, k: int, bounds: Any) -> float | None:
        """L2 global sensitivity on k records under replace-one, or None if unbounded."""


@runtime_checkable
class RatedStatistic(Protocol):
    """A statistic whose convergence rate tau_k is not ``sqrt(k)``."""

    def rate(self, k: int) -> float:
        """tau_k."""


@runtime_checkable
class DirectStatistic(Protocol):
    """A statistic with a faster full-data evaluation than a batch of one."""

    def evaluate(self, x: Array) -> Array:
        """Value on the full data, shape ``(d,)``."""


@runtime_checkable
class PreparingStatistic(Protocol):
    """A statistic that validates and clips its own data (the default clips to the bounds)."""

    def prepare(self, x: Array, bounds: Any) -> Array:
        """Return the data the statistic is computed on, clipped to the public bounds."""


@runtime_checkable
class ShapedStatistic(Protocol):
    """A statistic that states which data shapes it takes, so a wrong shape is refused before a value is read.

    ``check_shape`` sees only public inputs (the shape ``(n,)`` or ``(n, d)``, the public bounds), so its
    refusal is public: a :class:`~privframe.Session` refuses such a call before it is charged. Its ``prepare``
    should call it too, so the two never disagree. Without it a wrong shape is refused by ``prepare``, after
    the call has been charged.
    """

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """Raise ``DataError`` (path ``"x"``) or ``ConfigError`` when records of this shape cannot be used."""


@runtime_checkable
class SmoothStatistic(Protocol):
    """A statistic with a smooth upper bound on its local sensitivity (needed by CR-SS), carried as a log.

    ``SS_beta(x) = max_j e^{-j beta} A^(j)(x)`` with ``A^(j)`` bounding the local sensitivity at every dataset
    within distance j and ``A^(j)(x') <= A^(j+1)(x)`` for neighbours (``docs/algorithms.md``, section 3.2).
    privframe never handles ``SS`` itself, only ``ln SS``: on tied data ``e^{-j beta}`` underflows long before
    the maximum is reached, while its log stays an ordinary number.

    Both members return ``ln SS_beta``, which must be **finite** (a non-finite value is a ``PluginError``) and
    **exactly beta-smooth in floating point**: ``|ln SS(x) - ln SS(x')| <= beta`` for the returned floats at
    every pair of neighbours, not only up to rounding, since PTR's privacy rests on it. (Computing
    ``ln A^(j) - j beta`` naively violates it by an ulp for many j; the built-in statistics compute on a
    fixed-point grid, ``privframe_std.statistics.order.log_grid``, where the relevant sums are exact.)
    """

    def log_smooth_sensitivity(self, x: Array, beta: float, bounds: Any) -> float:
        """``ln SS_beta`` at the prepared full data ``x``."""

    def evaluate_log_smooth_batch(self, x: Array, index: IndexMatrix, beta: float, bounds: Any) -> tuple[Array, Array]:
        """Values ``(B, d)`` and ``ln SS_beta`` ``(B,)`` of B resamples, vectorised over B."""


@runtime_checkable
class SortedStatistic(Protocol):
    """A statistic of one-dimensional data that can take its resamples as sorted values (the order
    statistics): with a :class:`SortingSampler` no index row is written, gathered or sorted.

    ``evaluate_sorted(rows)`` receives ``(B, k)`` rows, each the prepared values of one resample in ascending
    order, and returns what :meth:`Statistic.evaluate_batch` returns for those resamples, bit for bit.
    """

    def evaluate_sorted(self, rows: Array) -> Array:
        """Values ``(B, d)`` of B resamples given as ascending rows."""


@runtime_checkable
class SortedSmoothStatistic(Protocol):
    """A smooth statistic of one-dimensional data that can take its resamples as sorted values (the order
    statistics): with a :class:`SortingSampler` no index row is written, gathered or sorted.

    ``evaluate_log_smooth_sorted(rows, beta, bounds)`` receives ``(B, k)`` rows, each the prepared values
    of one resample in ascending order, and returns what :meth:`SmoothStatistic.evaluate_log_smooth_batch`
    returns for those resamples, bit for bit.
    """

    def evaluate_log_smooth_sorted(self, rows: Array, beta: float, bounds: Any) -> tuple[Array, Array]:
        """Values ``(B, d)`` and ``ln SS_beta`` ``(B,)`` of B resamples given as ascending rows."""


@runtime_checkable
class WeightedStatistic(Protocol):
    """A scalar statistic that can be evaluated on weighted resamples of a small block (BLBQuant).

    A weighted resample has an integer count per record (a multinomial draw); the statistic on it is the
    statistic of the multiset with each record repeated that many times.
    """

    def evaluate_weighted(self, values: Array, weights: Array) -> Array:
        """``(R,)`` values for ``values`` ``(b,)`` sorted ascending and counts ``weights`` ``(R, b)``."""


@runtime_checkable
class DecomposableStatistic(Protocol):
    """A statistic whose value on a resample is built from per-part pieces (sums and counts), so it can be
    computed where the data live (a Dask array on a cluster) and combined on the client.

    The records ``0..n-1`` are cut into fixed public *data blocks* (``DATA_BLOCK`` rows, independent of how
    the data are chunked). For one data block, :meth:`partial_batch` receives the prepared (clipped) records
    of every resample that fall in the block, concatenated resample by resample in increasing record order
    (resample r has ``lengths[r]`` of them; with one data block, in the sampler's row order), and returns
    one row of partial values per resample. :meth:`combine` receives those partials for every data block, in
    block order, and returns the statistic. Rows are independent: a row's value depends on its partials
    only. The statistic must be symmetric in a resample's records. The full data are one resample holding
    every record. ``evaluate_batch`` (and ``evaluate``, if defined)
    must compute exactly this, summing in the same order, so that in-memory and distributed runs agree
    bit for bit. The ``mean`` implements it; see ``docs/cluster.md``.
    """

    def partial_batch(self, values: Array, lengths: npt.NDArray[np.integer[Any]]) -> Array:
        """``(rows, p)`` partial values of one data block: ``values`` ``(sum(lengths),)`` or
        ``(sum(lengths), d)`` prepared records, resample r owning ``lengths[r]`` consecutive ones."""

    def combine(self, partials: Sequence[Array], k: int) -> Array:
        """``(rows, d)`` statistic values from the partials of every data block, in block order, of
        resamples of k records each."""


@runtime_checkable
class PlainSumStatistic(Protocol):
    """A decomposable statistic whose partial of a data block depends on the plain sums of the block's
    prepared records only (the scalar mean): a sampler that sums rows where they stand
    (:class:`SummingSampler`) then spares the index rows.

    ``sum_partials(sums)`` turns the ``(rows,)`` plain sums of one data block (each resample's records in
    the block, added in increasing record order from 0.0) into what :meth:`DecomposableStatistic.partial_batch`
    returns for those records, bit for bit; :meth:`DecomposableStatistic.combine` does the rest. The engine
    uses it for one-dimensional data only, and evaluates the rows instead where a partial is not finite.
    """

    def sum_partials(self, sums: Array) -> Array:
        """``(rows, p)`` partials of one data block from the ``(rows,)`` plain sums of its records."""


@runtime_checkable
class PopulationStatistic(Protocol):
    """A statistic that knows the population value it estimates under a data-generating law (experiments).

    ``population`` is what an experiment's data generator describes: for scalar data an object with
    scipy's frozen-distribution methods ``mean()``, ``ppf(q)`` and ``cdf(x)``; richer models (records of
    a logistic regression) expose their own parameters. Raise ``ConfigError`` for a law the statistic does
    not know.
    """

    def population_value(self, population: Any) -> float:
        """The population value theta(P)."""


@runtime_checkable
class RangedStatistic(Protocol):
    """A scalar statistic that knows the range of its value from the public bounds (mean: the bounds; a
    distance between CDFs: [0, 1]; a variance: [0, inf)).

    Every method intersects its interval (and its centre) with the range: post-processing of released
    values, so the guarantee is unchanged, and an interval never claims values the parameter cannot take.
    """

    def value_range(self, bounds: Any) -> tuple[float, float] | None:
        """``(low, high)`` of the statistic's value given the public bounds (None: no known range)."""


@runtime_checkable
class Sampler(Protocol):
    """Draws resamples independently of the data values: a design plus a block draw.

    ``design(n)`` fixes n, m, B, kappa and replacement from public quantities; ``draw_block(design, rng,
    rows)`` draws ``rows`` index rows of that design from ``rng``. Seeding, chunking and threads belong
    to the engine (:mod:`privframe.resampling`).
    """

    @property
    def name(self) -> str:
        """Registered name."""

    def design(self, n: int) -> Design:
        """The design for a population of n records (raises ``ConfigError`` for sizes that do not fit n)."""

    def draw_block(self, design: Design, rng: np.random.Generator, rows: int) -> IndexMatrix:
        """``(rows, m)`` indices into ``range(n)``; may raise ``SamplerRejected``."""


@runtime_checkable
class SummingSampler(Protocol):
    """A sampler that can sum the data over the rows it draws without writing them (``wor``).

    ``draw_block_sums(design, rng, rows, x)`` returns, for the rows ``draw_block(design, rng, rows)`` would
    draw from the same ``rng``, one ``(rows,)`` array per public data block in block order: each row's sum
    of ``x`` (one-dimensional doubles) over its records in the block, added in increasing record order from
    0.0. None says "draw the rows instead" (the engine then calls ``draw_block`` with a fresh generator of
    the same seed). Used with a :class:`PlainSumStatistic`.
    """

    def draw_block_sums(self, design: Design, rng: np.random.Generator, rows: int, x: Array) -> list[Array] | None:
        """Per data block, ``(rows,)`` sums of ``x`` over the rows ``draw_block`` would draw, or None."""


@runtime_checkable
class SortingSampler(Protocol):
    """A sampler that can hand out the values of the rows it draws in ascending order, without writing the
    rows (``wor``).

    ``draw_block_sorted(design, rng, rows, ranked)`` returns ``(rows, m)``: for each row that
    ``draw_block(design, rng, rows)`` would draw from the same ``rng``, the values of its records (``x[i]``,
    from :class:`~privframe.resampling.ranked.RankedData`, the data sorted once with each record's rank)
    ascending. None says "draw the rows instead" (the engine then calls ``draw_block`` with a fresh
    generator of the same seed). Used with a :class:`SortedSmoothStatistic`.
    """

    def draw_block_sorted(
        self, design: Design, rng: np.random.Generator, rows: int, ranked: RankedData
    ) -> Array | None:
        """``(rows, m)`` ascending values of the rows ``draw_block`` would draw, or None."""


@runtime_checkable
class Mechanism(Protocol):
    """Turns a value plus a sensitivity into a noisy release, in two steps.

    ``plan`` computes the noise scale and the privacy event (pure, no randomness), so an accountant can
    refuse the spend before any noise is drawn; ``apply`` draws the noise from the mechanism's own stream.

    ``accepts`` maps each budget kind ``plan`` can be calibrated to to the kind of guarantee its events then
    record (the Gaussian mechanism: ``{GDP: GDP, ApproxDP: GDP}``, Gaussian noise is mu-GDP however it was
    asked for); a pipeline checks it against the method and the accountant when it is built, before any data
    are read.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def accepts(self) -> Mapping[BudgetKind, BudgetKind]:
        """Budget kind ``plan`` accepts -> the kind of guarantee its events record for it."""

    def plan(self, sensitivity: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event (budget, sensitivity, noise scale) a release would spend."""

    def apply(self, value: Array, event: PrivacyEvent, rng: np.random.Generator) -> Array:
        """``value`` plus noise at the event's scale."""


@runtime_checkable
class DescribedNoise(Protocol):
    """A mechanism that states the law of the noise one of its events adds: an optimisation, never required.

    Methods that account for the noise (the noise-aware one-shot radii, PrivBoot's variance correction) draw
    it from the mechanism itself on a public input when a mechanism does not describe it
    (:func:`privframe.plugin.noise_law`); a description makes that exact and fast. Each member receives the
    event of the release (its ``noise_scale`` is the scale actually used, for a smooth-bound release the
    released one), so a law whose shape depends on the budget can describe itself. All are data-independent.
    """

    def noise_quantile(self, event: PrivacyEvent, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (exact noise: rounding included)."""

    def noise_draws(self, event: PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
        """Independent draws of the noise, for simulation (never added to a release)."""

    def noise_sd(self, event: PrivacyEvent) -> float:
        """An upper bound on the standard deviation of one coordinate's noise."""


@runtime_checkable
class SmoothMechanism(Protocol):
    """Releases a value with noise scaled to a data-dependent bound (propose-test-release).

    The caller supplies ``log_bound`` = ln s(D), where ``|g(D) - g(D')| <= s(D)`` and
    ``|ln s(D) - ln s(D')| <= gamma`` for all neighbours. The bound travels as a log because s(D) of a
    large sample can underflow a double while its log stays exact. As with :class:`Mechanism`,
    ``plan_smooth`` fixes the privacy event before anything touches the data, so an accountant can refuse
    it first.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def accepts(self) -> Mapping[BudgetKind, BudgetKind]:
        """Budget kind ``plan_smooth`` accepts -> the kind of guarantee its events record for it."""

    def plan_smooth(self, gamma: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event a release with log-smoothness ``gamma`` would spend."""

    def release_smooth(
        self,
        value: Array,
        log_bound: float,
        event: PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> SmoothRelease:
        """Test and release; raises ``PTRFailed`` when a test fails and no fallback applies."""


@runtime_checkable
class BatchSmoothMechanism(SmoothMechanism, Protocol):
    """A smooth-bound mechanism that can also make many independent releases in one vectorised call.

    Optional: the auditor uses it when present (an audit needs tens of thousands of releases).
    """

    def release_smooth_batch(
        self,
        values: Array,
        log_bounds: Array,
        event: PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> SmoothReleaseBatch:
        """Row i of ``values`` ``(N, d)`` released with bound ``exp(log_bounds[i])``, independently."""


@runtime_checkable
class SelectionMechanism(Protocol):
    """Selects its release from the data (the exponential mechanism) instead of adding noise to a value.

    It needs the data, not a value and a sensitivity, so it works through methods that call it directly
    (``privsub``); additive-noise methods (``cr-gs``) cannot use it. As with :class:`Mechanism`,
    ``plan_selection`` fixes the privacy event (pure, no randomness) before anything touches the data, and
    refuses statistics the mechanism cannot serve.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def accepts(self) -> Mapping[BudgetKind, BudgetKind]:
        """Budget kind ``plan_selection`` accepts -> the kind of guarantee its events record for it."""

    def plan_selection(self, statistic: Statistic, budget: Budget, *, label: str) -> PrivacyEvent:
        """The event one release of ``statistic`` would spend."""

    def select_batch(
        self,
        statistic: Statistic,
        x: Array,
        index: IndexMatrix,
        bounds: Any,
        event: PrivacyEvent,
        rng: np.random.Generator,
    ) -> Array:
        """One private value of ``statistic`` per row of ``index`` (each row one call): shape ``(T, 1)``."""


@runtime_checkable
class WeightedSelectionMechanism(Protocol):
    """A selection mechanism that can also run on weighted resamples of a small block (BLBQuant)."""

    def select_weighted(
        self,
        statistic: Statistic,
        values: Array,
        weights: Array,
        bounds: Any,
        event: PrivacyEvent,
        rng: np.random.Generator,
    ) -> Array:
        """One private value per weighted resample: ``values`` ``(b,)`` sorted, counts ``weights`` ``(R, b)``;
        returns ``(R,)``."""


@runtime_checkable
class Accountant(Protocol):
    """Composes privacy events in one native unit and enforces a limit.

    ``composes`` names the kinds of event guarantees it composes; ``per_call_units`` maps each kind of total
    budget it can split to the kind of the per-call budgets ``per_call`` hands out (the ``gdp`` accountant:
    ``{GDP: GDP, ApproxDP: GDP}``). A pipeline checks both when it is built.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    @property
    def composes(self) -> tuple[BudgetKind, ...]:
        """The kinds of event budgets :meth:`compose` accepts."""

    @property
    def per_call_units(self) -> Mapping[BudgetKind, BudgetKind]:
        """Total budget kind -> the kind of the per-call budgets :meth:`per_call` returns for it."""

    def compose(self, events: Sequence[PrivacyEvent], limit: Budget | None = None) -> Budget:
        """The total guarantee of ``events`` in this accountant's unit.

        Where several valid compositions exist (e.g. basic or advanced), one that fits ``limit`` is
        preferred when a limit is given.
        """

    def fits(self, total: Budget, limit: Budget) -> bool:
        """Whether ``total`` is at least as private as ``limit``."""

    def per_call(self, total: Budget, count: int) -> Budget:
        """The largest per-call budget whose ``count``-fold composition fits ``total``."""


MECHANISM_PROTOCOLS: tuple[type[Any], ...] = (Mechanism, SmoothMechanism, SelectionMechanism)
"""A mechanism implements at least one of these: additive noise, a smooth-bound release, or a selection."""
