"""The part protocols: Statistic, Sampler, Mechanism, Accountant, and their optional capabilities.

Plugins implement these structurally (no base class needed). Optional capabilities are separate
protocols so a minimal plugin stays minimal; the core checks for them with ``isinstance``. This module
holds protocols only: the values they exchange live in :mod:`privframe.types` and
:mod:`privframe.ledger`; the Method protocol, which receives a run context, is in :mod:`privframe.method`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from privframe._typing import Array, IndexMatrix
from privframe.privacy.budgets import Budget
from privframe.privacy.events import PrivacyEvent
from privframe.privacy.releases import SmoothRelease, SmoothReleaseBatch
from privframe.resampling.design import Design

__all__ = [
    "Accountant",
    "BatchSmoothMechanism",
    "DecomposableStatistic",
    "DescribedNoise",
    "DirectStatistic",
    "Mechanism",
    "PopulationStatistic",
    "PreparingStatistic",
    "QuantileStatistic",
    "RangedStatistic",
    "RatedStatistic",
    "Sampler",
    "SelectionMechanism",
    "SmoothMechanism",
    "SmoothStatistic",
    "Statistic",
    "StatisticWithDefaultMechanism",
    "WeightedSelectionMechanism",
    "WeightedStatistic",
]


@runtime_checkable
class Statistic(Protocol):
    """A statistic theta: data -> R^d.

    Required: ``name``, ``evaluate_batch`` and ``sensitivity``. Optional capabilities
    (:class:`RatedStatistic`, :class:`DirectStatistic`, :class:`PreparingStatistic`, ...) have defaults:
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
class QuantileStatistic(Protocol):
    """A statistic that is the ``q``-quantile of scalar data (``median``: q = 0.5).

    Selection mechanisms such as ``exponential`` release it from the data directly, with the rank utility
    ``-|#{x_i < y} - q k|`` of sensitivity 1.
    """

    @property
    def q(self) -> float:
        """The quantile level, in (0, 1)."""


@runtime_checkable
class StatisticWithDefaultMechanism(Protocol):
    """A statistic that names the mechanism that privatises it when the user names none.

    A method that needs a mechanism and has no default of its own (``privsub``, ``blbquant``) gets
    ``default_mechanism(budget)``; a mechanism the user gives always overrides it.
    """

    def default_mechanism(self, budget: Budget) -> str:
        """The registered name of the default mechanism under ``budget`` (e.g. ``"exponential"``)."""


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
class Mechanism(Protocol):
    """Turns a value plus a sensitivity into a noisy release, in two steps.

    ``plan`` computes the noise scale and the privacy event (pure, no randomness), so an accountant can
    refuse the spend before any noise is drawn; ``apply`` draws the noise from the mechanism's own stream.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    def plan(self, sensitivity: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event (budget, sensitivity, noise scale) a release would spend."""

    def apply(self, value: Array, event: PrivacyEvent, rng: np.random.Generator) -> Array:
        """``value`` plus noise at the event's scale."""


@runtime_checkable
class DescribedNoise(Protocol):
    """A mechanism that states the law of the noise it adds, for methods that must account for it.

    Optional. The noise of one coordinate is ``noise_scale`` times a fixed symmetric law, where
    ``noise_scale`` is the event's (or the smooth release's) ``noise_scale``. The noise-aware one-shot
    radii use it: they widen the radius by the radius noise's upper quantile and convolve the roots with
    the centre's noise. Both functions are data-independent.
    """

    def noise_quantile(self, noise_scale: float, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (exact noise: rounding included)."""

    def noise_draws(self, noise_scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
        """Independent draws of the noise, for simulation (never added to a release)."""

    def noise_sd(self, noise_scale: float) -> float:
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
    """Composes privacy events in one native unit and enforces a limit."""

    @property
    def name(self) -> str:
        """Registered name."""

    def compose(self, events: Sequence[PrivacyEvent], limit: Budget | None = None) -> Budget:
        """The total guarantee of ``events`` in this accountant's unit.

        Where several valid compositions exist (e.g. basic or advanced), one that fits ``limit`` is
        preferred when a limit is given.
        """

    def fits(self, total: Budget, limit: Budget) -> bool:
        """Whether ``total`` is at least as private as ``limit``."""

    def per_call(self, total: Budget, count: int) -> Budget:
        """The largest per-call budget whose ``count``-fold composition fits ``total``."""
