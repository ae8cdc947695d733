"""One-dimensional data sorted once, with each record's rank: what a sampler needs to hand out sorted rows."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from privframe._typing import Array

__all__ = ["RankedData", "rankable"]


def rankable(x: Array) -> bool:
    """Whether rows of ``x`` handed out sorted are, bit for bit, the gathered rows sorted: one-dimensional
    doubles, fewer records than 32-bit ranks hold, and no ``-0.0`` (a sort keeps ``-0.0`` and ``0.0`` in the
    order it meets them, which a row's own order can change)."""
    return x.ndim == 1 and x.dtype == np.float64 and x.shape[0] < 2**32 and not bool(np.any((x == 0.0) & np.signbit(x)))


class RankedData:
    """The records sorted ascending (``values``) and where each record stands among them (``rank_of``):
    ``values[rank_of[i]] == x[i]``.

    A resample's values in ascending order are ``values`` at the sorted ranks of its records, so a sampler
    that marks ranks as it draws (``pp.SortingSampler``) writes sorted rows with no gather and no sort. The
    sort runs once, on first use (from any thread); a sampler that declines never pays for it. Tied
    records may take their ranks in any order: their values are the same doubles.

    Parameters
    ----------
    x : ndarray
        One-dimensional prepared doubles for which :func:`rankable` holds.
    """

    def __init__(self, x: npt.NDArray[np.float64]) -> None:
        self._x = x
        self._lock = threading.Lock()
        self._sorted: tuple[npt.NDArray[np.float64], npt.NDArray[np.uint32]] | None = None

    @property
    def n(self) -> int:
        """The number of records."""
        return int(self._x.shape[0])

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """The records, ascending."""
        return self._ranked()[0]

    @property
    def rank_of(self) -> npt.NDArray[np.uint32]:
        """Record i's position in :attr:`values`."""
        return self._ranked()[1]

    def _ranked(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint32]]:
        with self._lock:
            if self._sorted is None:
                order = np.argsort(self._x)  # equal doubles are interchangeable: any sorting order gives the same rows
                rank_of = np.empty(self.n, dtype=np.uint32)
                rank_of[order] = np.arange(self.n, dtype=np.uint32)
                self._sorted = (np.ascontiguousarray(self._x[order]), rank_of)
            return self._sorted
