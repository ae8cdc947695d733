"""The binomial law's pmf, log-pmf, cdf and sf: the doubles ``scipy.stats.binom`` gives, without importing
scipy.stats.

Importing scipy.stats takes about 0.6 s (its distributions build their docstrings at import), and the
standard plugins need only these functions of ``Binomial(n, p)``: rank-quantile's calibration, and the
resampling laws of Dette-Graw and PrivBoot. For valid parameters ``scipy.stats.binom`` evaluates them with
scipy.special - the private binomial ufuncs ``scipy.special._ufuncs._binom_pmf``, ``_binom_cdf`` and
``_binom_sf``, and ``gammaln``, ``xlogy`` and ``xlog1py`` for the log-pmf - then clips to ``[0, 1]`` inside
the support and fills in 0, 1 or -inf outside it; that is what this module does. Where a scipy lacks the
private ufuncs, ``scipy.stats.binom`` itself is called. ``tests/test_binomial.py`` checks every double
against ``scipy.stats.binom``, bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["binom_cdf", "binom_logpmf", "binom_pmf", "binom_sf"]

Array = npt.NDArray[np.float64]


def _ufunc(name: str) -> Callable[..., Any] | None:
    """scipy.special's private binomial ufunc ``name``, or None where this scipy has none."""
    try:
        from scipy.special import _ufuncs
    except ImportError:  # pragma: no cover - every supported scipy has the module
        return None
    found = getattr(_ufuncs, name, None)
    return found if callable(found) else None


def binom_pmf(k: npt.ArrayLike, n: int, p: float) -> Array:
    """``P(B = k)`` for ``B ~ Binomial(n, p)`` at each k (0 off the integers in ``[0, n]``)."""
    ks = np.asarray(k, dtype=np.float64)
    pmf = _ufunc("_binom_pmf")
    if pmf is None:
        from scipy import stats

        return np.asarray(stats.binom.pmf(ks, n, p), dtype=np.float64)
    inside = (ks >= 0) & (ks <= n) & (ks == np.floor(ks))
    out = np.zeros(ks.shape, dtype=np.float64)
    out[inside] = np.clip(pmf(ks[inside], float(n), p), 0.0, 1.0)
    return out


def binom_logpmf(k: npt.ArrayLike, n: int, p: float) -> Array:
    """``log P(B = k)`` for ``B ~ Binomial(n, p)`` at each k (-inf off the integers in ``[0, n]``):
    ``log C(n, k) + k log p + (n - k) log(1 - p)`` through ``gammaln``, ``xlogy`` and ``xlog1py``."""
    from scipy import special

    ks = np.asarray(k, dtype=np.float64)
    inside = (ks >= 0) & (ks <= n) & (ks == np.floor(ks))
    out = np.full(ks.shape, -np.inf, dtype=np.float64)
    kept = np.floor(ks[inside])
    size = float(n)
    choose = special.gammaln(size + 1) - (special.gammaln(kept + 1) + special.gammaln(size - kept + 1))
    out[inside] = choose + special.xlogy(kept, p) + special.xlog1py(size - kept, -p)
    return out


def binom_cdf(k: float, n: int, p: float) -> float:
    """``P(B <= k)`` for ``B ~ Binomial(n, p)``."""
    return _tail("cdf", k, n, p, below_support=0.0, above_support=1.0)


def binom_sf(k: float, n: int, p: float) -> float:
    """``P(B > k)`` for ``B ~ Binomial(n, p)``."""
    return _tail("sf", k, n, p, below_support=1.0, above_support=0.0)


def _tail(which: str, k: float, n: int, p: float, below_support: float, above_support: float) -> float:
    """The cdf or sf at k: fixed values off the support (``k < 0``, ``k >= n``), the ufunc at floor(k) on it."""
    ufunc = _ufunc(f"_binom_{which}")
    if ufunc is None:
        from scipy import stats

        return float(getattr(stats.binom, which)(k, n, p))
    if k >= n:
        return above_support
    if k < 0:
        return below_support
    return float(np.clip(ufunc(float(math.floor(k)), float(n), p), 0.0, 1.0))
