"""The plugin protocols: Statistic, Sampler, Mechanism, Accountant, Method.

Plugins implement these structurally (no base class needed). Optional capabilities are separate
protocols so a minimal plugin stays minimal; the core checks for them with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, overload, runtime_checkable

import attrs
import numpy as np

from privframe.budgets import Budget
from privframe.ledger import PrivacyEvent
from privframe.types import Array, Bounds, IndexMatrix, L2Ball

if TYPE_CHECKING:
    from privframe.results import IntervalResult, RegionResult

T = TypeVar("T")

__all__ = [
    "Accountant",
    "BlockSeeds",
    "DirectStatistic",
    "Mechanism",
    "Method",
    "Parts",
    "PreparingStatistic",
    "RatedStatistic",
    "QuantileStatistic",
    "Resamples",
    "Sampler",
    "SelectionMechanism",
    "StatisticWithDefaultMechanism",
    "SmoothMechanism",
    "SmoothRelease",
    "SmoothStatistic",
    "Statistic",
]


@runtime_checkable
class Statistic(Protocol):
    """A statistic theta: data -> R^d.

    Required: ``name``, ``evaluate_batch`` and ``sensitivity``. Optional capabilities
    (:class:`RatedStatistic`, :class:`DirectStatistic`, :class:`PreparingStatistic`) have defaults:
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
    """A statistic with a smooth upper bound on its local sensitivity (needed by CR-SS).

    ``SS_beta(x) = max_j e^{-j beta} A^(j)(x)`` with ``A^(j)`` bounding the local sensitivity at every dataset
    within distance j (algorithms.md 3.2), so ``|ln SS(x) - ln SS(x')| <= beta`` for neighbours.
    """

    def smooth_sensitivity(self, x: Array, beta: float, bounds: Any) -> float:
        """``SS_beta`` at the prepared full data ``x``."""

    def evaluate_smooth_batch(self, x: Array, index: IndexMatrix, beta: float, bounds: Any) -> tuple[Array, Array]:
        """Values ``(B, d)`` and smooth sensitivities ``(B,)`` of B resamples, vectorised over B."""


class BlockSeeds(Sequence[np.random.SeedSequence]):
    """``count`` independent seeds derived lazily from one parent, so B = 10^9 costs no memory up front.

    Seed i is ``SeedSequence(parent.entropy, spawn_key=parent.spawn_key + (i,))``, exactly what
    ``parent.spawn(count)[i]`` would return for a parent that has spawned nothing; the caller must not spawn
    from ``parent`` elsewhere (spawn a dedicated child for it).
    """

    def __init__(self, parent: np.random.SeedSequence, count: int) -> None:
        self._parent = parent
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> np.random.SeedSequence: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[np.random.SeedSequence]: ...

    def __getitem__(self, i: int | slice) -> np.random.SeedSequence | Sequence[np.random.SeedSequence]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError("block index out of range")
        parent = self._parent
        return np.random.SeedSequence(parent.entropy, spawn_key=(*parent.spawn_key, i), pool_size=parent.pool_size)

    def __repr__(self) -> str:
        return f"BlockSeeds(count={self._count})"


@attrs.frozen
class Resamples:
    """B resamples of size m drawn independently of the data values.

    Rows are produced in fixed blocks of ``block_rows``, each from its own spawned generator, so the
    result is bit-identical whatever chunk size the consumer asks for.

    Parameters
    ----------
    n, m, B : int
        Population size, resample size, number of resamples.
    kappa : int
        Largest multiplicity of one record within one resample (1 without replacement).
    replace : bool
        Whether rows are drawn with replacement.
    block_seeds : sequence of SeedSequence
        One seed per block of rows (a tuple, or a lazy :class:`BlockSeeds`).
    block_rows : int
        Rows per block (the last block may be shorter).
    draw_block : callable
        ``draw_block(generator, rows) -> (rows, m)`` index matrix; raises ``SamplerRejected``.
    memory_budget : int
        Bytes the consumer may spend on the chunks in flight together.
    workers : int
        Threads that evaluate chunks in parallel (1: serial).
    rho : float or None
        Bound on the probability that the draw is rejected (multiplicity-constrained samplers); None for
        samplers that never reject.
    """

    n: int
    m: int
    B: int
    kappa: int
    replace: bool
    block_seeds: Sequence[np.random.SeedSequence]
    block_rows: int
    draw_block: Any = attrs.field(repr=False)
    memory_budget: int = 2**28
    workers: int = 1
    rho: float | None = None

    def chunk_rows(self, bytes_per_row: int) -> int:
        """Rows per chunk so that ``workers`` chunks in flight fit the memory budget.

        A multiple of ``block_rows`` and at least one block (a single block may exceed the budget when one
        row alone is larger than it).
        """
        rows = self.memory_budget // (max(1, bytes_per_row) * max(1, self.workers))
        return max(self.block_rows, (rows // self.block_rows) * self.block_rows)

    def chunk_spans(self, bytes_per_row: int | None = None) -> list[tuple[int, int]]:
        """``(first_block, stop_block)`` of each chunk, in row order."""
        per_row = 16 * self.m if bytes_per_row is None else bytes_per_row
        total = len(self.block_seeds)
        blocks_per_chunk = self.chunk_rows(per_row) // self.block_rows
        if self.workers > 1:  # at least one chunk per worker, so every thread has work
            blocks_per_chunk = min(blocks_per_chunk, max(1, -(-total // self.workers)))
        return [(start, min(start + blocks_per_chunk, total)) for start in range(0, total, blocks_per_chunk)]

    def rows(self, span: tuple[int, int]) -> IndexMatrix:
        """The index rows of the blocks ``span[0] <= i < span[1]``."""
        parts = [self.block(i) for i in range(*span)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def chunks(self, bytes_per_row: int | None = None) -> Iterator[IndexMatrix]:
        """Yield consecutive ``(rows, m)`` index matrices covering all B rows."""
        for span in self.chunk_spans(bytes_per_row):
            yield self.rows(span)

    def map_chunks(self, function: Callable[[IndexMatrix], T], bytes_per_row: int | None = None) -> list[T]:
        """``function`` applied to every chunk, in row order, on up to ``workers`` threads.

        Each block has its own seed, so the rows (and any result computed from them) do not depend on the
        chunk size or the number of workers. Threads pay because numpy releases the GIL in the heavy kernels
        (random integers, sorting, gathering).
        """
        spans = self.chunk_spans(bytes_per_row)

        def task(span: tuple[int, int]) -> T:
            return function(self.rows(span))

        if self.workers <= 1 or len(spans) <= 1:
            return [task(span) for span in spans]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(spans))) as pool:
            return list(pool.map(task, spans))

    def map_blocks(self, function: Callable[[IndexMatrix], T]) -> list[T]:
        """``function`` applied to every block, in row order, on up to ``workers`` threads.

        The hot path of the engine: a block (at most 32 rows) keeps its index rows and gathered values
        cache-sized, and no chunk is ever concatenated. Workers take contiguous runs of blocks, so results
        are identical for any worker count.
        """
        blocks = range(len(self.block_seeds))
        if self.workers <= 1 or len(blocks) <= 1:
            return [function(self.block(i)) for i in blocks]
        per_task = -(-len(blocks) // self.workers)

        def task(start: int) -> list[T]:
            return [function(self.block(i)) for i in range(start, min(start + per_task, len(blocks)))]

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return [value for run in pool.map(task, range(0, len(blocks), per_task)) for value in run]

    def block(self, i: int) -> IndexMatrix:
        """The i-th block of rows."""
        rows = min(self.block_rows, self.B - i * self.block_rows)
        index: IndexMatrix = self.draw_block(np.random.default_rng(self.block_seeds[i]), rows)
        return index

    def matrix(self) -> IndexMatrix:
        """All B rows at once (small problems and tests only; ignores the memory budget)."""
        return np.concatenate([self.block(i) for i in range(len(self.block_seeds))], axis=0)


@runtime_checkable
class Sampler(Protocol):
    """Draws resamples independently of the data values."""

    @property
    def name(self) -> str:
        """Registered name."""

    def draw(self, n: int, rng: np.random.Generator) -> Resamples:
        """Resamples of a population of size n."""


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


@attrs.frozen
class SmoothRelease:
    """What a smooth-bound (propose-test-release) mechanism released.

    Parameters
    ----------
    value : ndarray
        The noisy value.
    bound : float
        The bound the noise was scaled to: the privately proposed ``b`` (variant "bound"), the public
        proposal ``b_0`` (variant "classic", test passed) or the global sensitivity (fallback). All of these
        are released quantities, never the non-private smooth bound itself.
    noise_scale : float
        Standard deviation of the release noise.
    passed : bool
        False when the test failed and the fallback was used.
    """

    value: Array
    bound: float
    noise_scale: float
    passed: bool = True


@runtime_checkable
class SmoothMechanism(Protocol):
    """Releases a value with noise scaled to a data-dependent bound (propose-test-release).

    The caller supplies ``bound`` s(D) with ``|g(D) - g(D')| <= s(D)`` and ``|ln s(D) - ln s(D')| <= gamma``
    for all neighbours. As with :class:`Mechanism`, ``plan_smooth`` fixes the privacy event before anything
    touches the data, so an accountant can refuse it first.
    """

    @property
    def name(self) -> str:
        """Registered name."""

    def plan_smooth(self, gamma: float, budget: Budget, *, label: str, dimension: int = 1) -> PrivacyEvent:
        """The event a release with log-smoothness ``gamma`` would spend."""

    def release_smooth(
        self,
        value: Array,
        bound: float,
        event: PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> SmoothRelease:
        """Test and release; raises ``PTRFailed`` when a test fails and no fallback applies."""


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


@attrs.frozen
class Parts:
    """The resolved parts a method wires together."""

    statistic: Statistic
    sampler: Sampler | None = None
    mechanism: Mechanism | None = None
    accountant: Accountant | None = None
    bounds: Bounds | L2Ball | None = None


@runtime_checkable
class Method(Protocol):
    """A recipe that wires the parts into a confidence set.

    Class attributes declare what the method needs: ``uses`` (the part kinds besides the statistic),
    ``defaults`` (default part names, e.g. ``{"sampler": "wor"}``), ``sampler_defaults`` (e.g.
    ``{"m": "n/log(n)", "B": 1000}``) and ``private`` (False for non-private references). An optional
    ``optional`` (a frozenset of kinds in ``uses``) names parts the method can choose itself: when the user
    gives none and ``defaults`` has none, the part is left ``None`` instead of raising.
    """

    uses: ClassVar[frozenset[str]]
    defaults: ClassVar[Mapping[str, str]]
    sampler_defaults: ClassVar[Mapping[str, object]]
    private: ClassVar[bool]

    @property
    def name(self) -> str:
        """Registered name."""

    def run(
        self,
        data: Array,
        parts: Parts,
        budget: Budget | None,
        confidence: float,
        rng: np.random.SeedSequence,
    ) -> IntervalResult | RegionResult:
        """Compute the confidence set and its privacy ledger."""


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
    """A statistic that names the mechanism its private estimator uses by default.

    Methods that privatise the statistic as a black box (``privsub``; the private estimator of
    :mod:`privframe.estimators`) call ``default_mechanism(budget)`` when the user gives no ``mechanism=``;
    a given mechanism always overrides it. Without this capability the default is ``"laplace"`` under a
    pure or (eps, delta) budget and ``"gaussian"`` under a GDP budget
    (:func:`privframe.estimators.default_mechanism`).
    """

    def default_mechanism(self, budget: Budget) -> str:
        """The registered name of the default mechanism under ``budget`` (e.g. ``"exponential"``)."""


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
