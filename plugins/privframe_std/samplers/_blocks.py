"""Vectorised index generation for one block of resamples."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import privframe as pf

__all__ = ["distinct_rows", "max_multiplicity_exceeded", "uniform_rows"]


def uniform_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` i.i.d. uniform indices (with replacement)."""
    return rng.integers(0, n, size=(rows, m), dtype=np.intp)


def distinct_rows(rng: np.random.Generator, rows: int, n: int, m: int) -> pf.IndexMatrix:
    """``(rows, m)`` sorted rows, each a uniform size-m subset of ``range(n)``.

    For m well below n: draw with replacement, then redraw duplicated slots until every row is distinct.
    The procedure commutes with any relabelling of ``range(n)`` and always ends with an m-subset, so each
    row is uniform over m-subsets. For m near n that would take many rounds, so rows are instead the m
    smallest of n random keys.
    """
    if 4 * m > n:
        keys = rng.random((rows, n))
        chosen = np.argpartition(keys, m - 1, axis=1)[:, :m]
        return np.sort(chosen, axis=1).astype(np.intp, copy=False)
    index = uniform_rows(rng, rows, n, m)
    index.sort(axis=1)
    while True:
        duplicate = np.zeros(index.shape, dtype=bool)
        np.equal(index[:, 1:], index[:, :-1], out=duplicate[:, 1:])
        count = int(np.count_nonzero(duplicate))
        if count == 0:
            return index
        index[duplicate] = rng.integers(0, n, size=count, dtype=np.intp)
        index.sort(axis=1, kind="stable")  # nearly sorted: timsort is fast here


def max_multiplicity_exceeded(index: pf.IndexMatrix, kappa: int) -> npt.NDArray[np.bool_]:
    """Per row: does any index appear more than ``kappa`` times? (rows need not be sorted)."""
    m = index.shape[1]
    if kappa >= m:
        return np.zeros(index.shape[0], dtype=bool)
    ordered = np.sort(index, axis=1)
    # In a sorted row a value repeats more than kappa times iff some entry equals the one kappa places on.
    result: npt.NDArray[np.bool_] = np.any(ordered[:, kappa:] == ordered[:, :-kappa], axis=1)
    return result
