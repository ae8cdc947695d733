"""Vectorised index generation for one block of resamples."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

import privframe as pf

__all__ = ["distinct_rows", "max_multiplicity_exceeded", "uniform_rows"]


def uniform_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` i.i.d. uniform indices (with replacement)."""
    return rng.integers(0, n, size=(rows, m), dtype=np.intp)


GROUP_ENTRIES = 2**19
"""Rows are de-duplicated in groups of about ``GROUP_ENTRIES / n`` rows, so the marker array (one slot per
(row, value) pair of the group) stays cache-sized, and memory is bounded for any n."""


def distinct_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` rows, each a uniform size-m subset of ``range(n)`` (entries in no particular order).

    For m well below n: draw with replacement, then redraw the slots holding a repeated value until every
    row is distinct. Repeats are found without sorting, by scattering each slot's position into a marker
    array indexed by (row, value) and reading it back: the slot that reads its own position keeps the value.
    A redrawn value is accepted when no kept slot of its row holds it. The procedure commutes with any
    relabelling of ``range(n)`` and always ends with an m-subset, so each row is uniform over m-subsets.
    For m near n that would take many rounds, so rows are instead the m smallest of n random keys.
    """
    if 4 * m > n:
        out = np.empty((rows, m), dtype=np.intp)
        group = max(1, GROUP_ENTRIES // n)
        for start in range(0, rows, group):
            keys = rng.random((min(group, rows - start), n))
            out[start : start + group] = np.argpartition(keys, m - 1, axis=1)[:, :m]
        return out
    index = uniform_rows(rng, rows, n, m)
    group = max(1, min(rows, GROUP_ENTRIES // n))
    marker, positions, offsets = _scratch(group, n, m)
    for start in range(0, rows, group):
        block = index[start : start + group]
        count = block.shape[0] * m
        _redraw_repeats(rng, block, n, marker, positions[:count], offsets[:count])
    return index


_SCRATCH = threading.local()


def _scratch(
    group: int, n: int, m: int
) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]], pf.IndexMatrix]:
    """This thread's marker array and the constant position and row-offset arrays for (group, n, m).

    Reused from block to block: allocating a fresh marker of several MiB per block costs page faults that
    took a third of the run time. Its stale contents are harmless (see :func:`_redraw_repeats`).
    """
    key = (group, n, m)
    if getattr(_SCRATCH, "key", None) != key:
        size = group * m
        dtype = np.int32 if size < 2**31 else np.intp
        _SCRATCH.marker = np.empty(group * n, dtype=dtype)
        _SCRATCH.positions = np.arange(size, dtype=dtype)
        _SCRATCH.offsets = np.repeat(np.arange(group, dtype=np.intp) * n, m)
        _SCRATCH.key = key
    marker: npt.NDArray[np.integer[Any]] = _SCRATCH.marker
    positions: npt.NDArray[np.integer[Any]] = _SCRATCH.positions
    offsets: pf.IndexMatrix = _SCRATCH.offsets
    return marker, positions, offsets


def _redraw_repeats(
    rng: np.random.Generator,
    block: pf.IndexMatrix,
    n: int,
    marker: npt.NDArray[np.integer[Any]],
    positions: npt.NDArray[np.integer[Any]],
    offsets: pf.IndexMatrix,
) -> None:
    """Make every row of ``block`` distinct in place (see :func:`distinct_rows`).

    ``marker`` is scratch space and need not be initialised (it may hold values from an earlier call): a
    value is read back only after it was written in this call, or checked against the slot it points to,
    whose key matches only if this call wrote that very entry.
    """
    size = positions.shape[0]
    keys = block.reshape(-1) + offsets  # (row, value) -> row * n + value
    np.put(marker, keys, positions)
    kept = np.take(marker, keys) == positions
    pending = np.flatnonzero(~kept)
    if pending.size == 0:
        return
    while pending.size:
        candidates = rng.integers(0, n, size=pending.size, dtype=np.intp) + offsets[pending]
        holder = np.take(marker, candidates)
        valid = (holder >= 0) & (holder < size)
        holder = np.where(valid, holder, 0)
        taken = valid & (keys[holder] == candidates) & kept[holder]
        slots = pending[~taken]
        values = candidates[~taken]
        marker[values] = slots
        won = marker[values] == slots  # among equal new values, one slot wins
        keys[slots[won]] = values[won]
        kept[slots[won]] = True
        pending = pending[~kept[pending]]
    block.reshape(-1)[:] = keys - offsets


def max_multiplicity_exceeded(index: pf.IndexMatrix, kappa: int) -> npt.NDArray[np.bool_]:
    """Per row: does any index appear more than ``kappa`` times? (rows need not be sorted)."""
    m = index.shape[1]
    if kappa >= m:
        return np.zeros(index.shape[0], dtype=bool)
    ordered = np.sort(index, axis=1)
    # In a sorted row a value repeats more than kappa times iff some entry equals the one kappa places on.
    result: npt.NDArray[np.bool_] = np.any(ordered[:, kappa:] == ordered[:, :-kappa], axis=1)
    return result
