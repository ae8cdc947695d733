"""The n-out-of-n bootstrap (``docs/algorithms.md``, section 2) and exact multinomial resampling weights.

Two forms of the same resampling law:

- :class:`Bootstrap` (sampler ``bootstrap``) draws B rows of n i.i.d. uniform indices (PrivBoot, the
  non-private percentile bootstrap). ``Bootstrap.counts`` turns those rows into multinomial counts.
- :func:`multinomial_counts` draws the counts directly: ``rows`` i.i.d. vectors with law
  ``Multinomial(total; 1/k, ..., 1/k)`` over ``k`` categories, at a cost proportional to ``rows * k``
  rather than ``rows * total``. The little bootstraps of BLBQuant (``total = n`` draws from a block of
  ``k = b << n`` points) use it so that size-n resamples are never materialised.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import ClassVar

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError, DataError
from privframe.resampling.blocks import settle_allocator
from privframe_std.samplers._blocks import uniform_rows
from privframe_std.samplers._kernels import add_uniform, fast_stream

__all__ = ["Bootstrap", "multinomial_counts", "poisson_stage"]


@attrs.frozen
class Bootstrap:
    """B resamples of n indices drawn uniformly with replacement (the n-out-of-n bootstrap).

    A record can appear any number of times in a resample, so ``kappa = n``: privacy analyses of the
    bootstrap (PrivBoot) account for the multiplicity through its binomial law instead of a cap.

    Parameters
    ----------
    B : int, optional
        Number of resamples. Left unset, the method chooses it (PrivBoot: ``max(2000 mu^2, 2 / alpha)``;
        the non-private ``bootstrap`` method: 1000); drawing with ``B`` unset is a ``ConfigError``.
    """

    name: ClassVar[str] = "bootstrap"
    B: int | None = attrs.field(
        default=None,
        converter=pp.validators.as_int,
        validator=pp.validators.optional(pp.validators.integer_at_least(1)),
    )

    def design(self, n: int) -> pp.Design:
        """n-out-of-n with replacement; kappa = n."""
        if self.B is None:
            raise ConfigError("not set; give the number of bootstrap resamples (B=...)", path="B")
        if n < 2:
            raise DataError("the bootstrap needs at least 2 records", path="x")
        return pp.Design(n=n, m=n, B=self.B, kappa=n, replace=True)

    def draw_block(self, design: pp.Design, rng: np.random.Generator, rows: int) -> pp.IndexMatrix:
        """``rows`` rows of n i.i.d. uniform indices into ``range(n)`` (rows are not sorted)."""
        return uniform_rows(rng, rows, design.n, design.n)

    @staticmethod
    def counts(resamples: pp.Resamples) -> Iterator[npt.NDArray[np.int64]]:
        """The same resamples as multinomial counts: ``(rows, n)`` chunks, row r counting each index.

        Chunks follow ``resamples.chunks()`` (same rows, same order), so counts and index rows drawn from
        the same seed describe the same resamples.
        """
        n = resamples.n
        for index in resamples.chunks(16 * n):
            rows = index.shape[0]
            flat = (np.arange(rows, dtype=np.int64)[:, np.newaxis] * n + index).ravel()
            yield np.bincount(flat, minlength=rows * n).reshape(rows, n)


# -------------------------------------------------------------------------------------------------------
# Exact multinomial counts without materialising the draws


_PREFIX_BITS = 16
_PREFIXES = 1 << _PREFIX_BITS
_AMBIGUOUS_SHARE = 64
"""The refinement lists hold one cell in this many (about 0.1% need one); more are found by a scan."""
_SLACK_SD = 1.0
"""The Poisson stage aims ``_SLACK_SD`` standard deviations below the total (see ``multinomial_counts``)."""


@functools.lru_cache(maxsize=32)
def _poisson_table(lam: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Inversion table of Poisson(lam) indexed by the top 16 bits of a uniform, and the CDF.

    ``table[j]`` is the Poisson quantile of every ``u`` in ``[j, j + 1) / 2^16`` when that quantile is the
    same for the whole interval, and NaN when a CDF value falls strictly inside it (those draws are
    resolved from further random bits).
    """
    from scipy import special  # on first use: loading the plugins stays light (and scipy.stats never loads)

    kmax = int(lam + 40.0 * math.sqrt(lam) + 40.0)
    # What scipy.stats.poisson.cdf computes on its support, without importing scipy.stats (0.6 s).
    cdf = np.clip(np.asarray(special.pdtr(np.arange(kmax + 1, dtype=np.float64), lam), dtype=np.float64), 0.0, 1.0)
    cdf[-1] = 1.0
    edges = np.arange(_PREFIXES + 1, dtype=np.float64) / _PREFIXES
    at_or_below_start = np.searchsorted(cdf, edges[:-1], side="right")
    below_end = np.searchsorted(cdf, edges[1:], side="left")
    table = at_or_below_start.astype(np.float64)
    table[below_end > at_or_below_start] = np.nan
    return table, cdf


def poisson_stage(k: int, total: int) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """The Poisson stage of ``Multinomial(total; 1/k, ..., 1/k)`` draws: its rate per cell, inversion table
    and CDF (see :func:`multinomial_counts`), or None when the rate is below 1 and every count is filled."""
    lam = (total - _SLACK_SD * math.sqrt(total)) / k
    if lam < 1.0:
        return None
    table, cdf = _poisson_table(lam)
    return lam, table, cdf


def _poisson_block(
    rng: np.random.Generator, stream: npt.NDArray[np.uint64], rows: int, k: int, lam: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(rows, k)`` i.i.d. Poisson(lam) counts by exact inversion of uniforms (table plus rare refinement),
    and their row sums. The uniforms' first 16 bits come from ``stream``, the rare refinements' further bits
    from ``rng``."""
    from privframe_std.samplers import _jit

    table, cdf = _poisson_table(lam)
    size = rows * k
    counts = np.empty((rows, k), dtype=np.float64)
    sums = np.empty(rows, dtype=np.float64)
    room = size // _AMBIGUOUS_SHARE + 16
    ambiguous = np.empty(room, dtype=np.int64)
    prefixes = np.empty(room, dtype=np.uint64)
    found = _jit.table_counts(stream, table, counts, sums, ambiguous, prefixes)
    if found:
        if found <= room:
            at, prefix = ambiguous[:found], prefixes[:found]
        else:  # more than the lists hold: the cells are marked -(prefix + 1)
            at = np.flatnonzero(counts.reshape(-1) < 0.0)
            prefix = (-1.0 - counts.reshape(-1)[at]).astype(np.uint64)
        # Given its top 16 bits j, the uniform is (j + v) / 2^16 with v ~ U[0, 1) independent.
        u = (prefix + rng.random(found)) / _PREFIXES
        resolved = np.searchsorted(cdf, u, side="right").astype(np.float64)
        counts.reshape(-1)[at] = resolved
        np.add.at(sums, at // k, resolved)
    return counts, sums


def multinomial_counts(rng: np.random.Generator, rows: int, k: int, total: int) -> npt.NDArray[np.float64]:
    """``(rows, k)`` float64 counts, each row an independent ``Multinomial(total; 1/k, ..., 1/k)`` vector.

    Equivalent in law to counting ``total`` uniform draws from ``range(k)`` per row, at a cost of order
    ``rows * k`` when ``total`` is large. Method (exact, not an approximation): draw i.i.d. Poisson(lam)
    counts with ``lam * k = total - sqrt(total)`` (one standard deviation below the total). Given their sum
    ``T = t`` the counts are ``Multinomial(t; uniform)``, so for ``t <= total`` adding ``total - t`` further
    uniform draws gives ``Multinomial(total; uniform)`` whatever t is. A row with ``T > total`` (about 16%)
    is replaced by the next of fresh candidate rows with ``T <= total``: the accepted row is still
    ``Multinomial(t; uniform)`` given its sum, so the law is unchanged. Aiming one standard deviation below
    the total, not three, cuts the uniform fill (the costly part: about ``1.3 sqrt(total)`` draws a row
    instead of ``3 sqrt(total)``) more than the redraws cost. Poisson variates are drawn by inversion of
    16-bit uniforms through a table; the ~0.1% of prefixes whose interval contains a CDF value are refined
    with a further double-precision uniform. The fill's cells are exactly uniform integers from 16-bit
    pieces of random words (Lemire's multiply-shift with rejection). The table's 16-bit pieces and the
    fill's words come from an SFC64 stream seeded with three words of ``rng`` and computed inside the
    compiled loops (numpy's SFC64 gives the same words); the refinements' uniforms come from ``rng``.
    Rows are produced in chunks of about 2^20 cells, so the scratch memory stays small.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    rows, k, total : int
        Number of count vectors, categories, and draws per vector.

    Returns
    -------
    ndarray, shape (rows, k)
        The counts, as float64 (they weight values directly).
    """
    if rows < 0 or k < 1 or total < 0:
        raise ConfigError("need rows >= 0, k >= 1 and total >= 0", path="rows")
    settle_allocator()  # chunks of about a MiB each: keep them off fresh pages
    stream = fast_stream(rng)
    step = max(1, _CHUNK_CELLS // k)
    if rows <= step:  # one chunk: no copy into a fresh array (the copy cost a third of the call)
        return _multinomial_chunk(rng, stream, rows, k, total)
    out = np.empty((rows, k), dtype=np.float64)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        out[start:stop] = _multinomial_chunk(rng, stream, stop - start, k, total)
    return out


_CHUNK_CELLS = 2**20


def _multinomial_chunk(
    rng: np.random.Generator, stream: npt.NDArray[np.uint64], rows: int, k: int, total: int
) -> npt.NDArray[np.float64]:
    lam = (total - _SLACK_SD * math.sqrt(total)) / k
    if lam < 1.0:
        counts = np.zeros((rows, k), dtype=np.float64)
        filled = np.zeros(rows, dtype=np.int64)
    else:
        counts, sums = _poisson_block(rng, stream, rows, k, lam)
        filled = sums.astype(np.int64)
        over = np.flatnonzero(filled > total)
        while over.size:
            # Replace over-full rows (rejection: the accepted law given T is unchanged). About 16% of
            # candidates are over-full too, so a quarter more are drawn at once: in order, each over-full row
            # takes the next candidate that is not, and any still left over draw again.
            candidates, candidate_sums = _poisson_block(rng, stream, over.size + over.size // 4 + 4, k, lam)
            accepted = np.flatnonzero(candidate_sums <= total)[: over.size]
            replaced = over[: accepted.size]
            counts[replaced] = candidates[accepted]
            filled[replaced] = candidate_sums[accepted].astype(np.int64)
            over = over[accepted.size :]
    missing = total - filled
    if missing.any():
        add_uniform(stream, counts, missing)
    return counts
