"""The plugin protocols: Statistic, Sampler, Mechanism, Accountant, Method.

Plugins implement these structurally (no base class needed). Optional capabilities are separate
protocols so a minimal plugin stays minimal; the core checks for them with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import attrs
import numpy as np

from privframe.budgets import Budget
from privframe.ledger import PrivacyEvent
from privframe.types import Array, Bounds, IndexMatrix, L2Ball

if TYPE_CHECKING:
    from privframe.results import IntervalResult, RegionResult

__all__ = [
    "Accountant",
    "DirectStatistic",
    "Mechanism",
    "Method",
    "Parts",
    "PreparingStatistic",
    "RatedStatistic",
    "Resamples",
    "Sampler",
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
    block_seeds : tuple of SeedSequence
        One seed per block of rows.
    block_rows : int
        Rows per block (the last block may be shorter).
    draw_block : callable
        ``draw_block(generator, rows) -> (rows, m)`` index matrix; raises ``SamplerRejected``.
    memory_budget : int
        Bytes the consumer may spend on one chunk.
    """

    n: int
    m: int
    B: int
    kappa: int
    replace: bool
    block_seeds: tuple[np.random.SeedSequence, ...]
    block_rows: int
    draw_block: Any = attrs.field(repr=False)
    memory_budget: int = 2**28

    def chunk_rows(self, bytes_per_row: int) -> int:
        """Rows per chunk under the memory budget: a multiple of ``block_rows``, at least one block."""
        rows = self.memory_budget // max(1, bytes_per_row)
        return max(self.block_rows, (rows // self.block_rows) * self.block_rows)

    def chunks(self, bytes_per_row: int | None = None) -> Iterator[IndexMatrix]:
        """Yield consecutive ``(rows, m)`` index matrices covering all B rows."""
        per_row = 16 * self.m if bytes_per_row is None else bytes_per_row
        blocks_per_chunk = self.chunk_rows(per_row) // self.block_rows
        for start in range(0, len(self.block_seeds), blocks_per_chunk):
            parts = [self.block(i) for i in range(start, min(start + blocks_per_chunk, len(self.block_seeds)))]
            yield parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

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
    ``{"m": "n/log(n)", "B": 1000}``) and ``private`` (False for non-private references).
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
