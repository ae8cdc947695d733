"""Test-only reimplementation of the exponential-mechanism interval of Drechsler, Globus-Harris, McMillan,
Sarathy and Smith (2022), "Nonparametric differentially private confidence intervals for the median",
generalised from the median to any quantile q. Used only to compare widths; never released.

The construction (their ``dpCIsExp`` with ``cdp=False``):

1. Split eps into two runs of ``eps / 2``, one per end.
2. Calibrate integer target ranks k_l < k_u from Binomial(n, q). For the lower end,
   ``failure(k) = P(B <= k) + sum_{m > k} P(B = m) min(1, C exp(-(eps_run / 2) (m - k)))`` and k_l is the
   largest k with ``failure(k) <= alpha / 2``; the upper end mirrors it. ``C = (R - 2 g) / (2 g)``
   bounds the ratio of bad to good output length (R = high - low, g the granularity). **Correction:**
   the authors' code puts ``exp(-|m - k| eps)`` with the *total* eps in this tail, although each run gets
   ``eps / 2`` and its utility enters as ``exp(eps_run u / 2)``: the tail decays at ``eps_run / 2 = eps / 4``,
   four times slower. This module uses the correct ``eps_run / 2``.
3. Each end is one run of their exponential mechanism at quantile ``k / n``: the data, with the two bounds
   added, are sorted; the points at or below index ``floor(n_z quantile)`` (``n_z = n + 2``) move down by
   g and the others up by g (clipped to the bounds), so the piece at the target has length at least 2 g;
   piece i (between ``z[i-1]`` and ``z[i]``) is drawn with probability proportional to
   ``length_i exp(-(eps_run / 2) |i - n_z quantile|)`` (Gumbel-max) and the output is uniform in it.
4. The interval is ``[y_l - g, y_u + g]``.

Where no rank passes the calibration (small n or eps), the authors' code falls back to rank 1 (or n - 1),
which is not valid; this reimplementation returns the bound itself instead, as the core does.
Floating-point sampling: for simulations only.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["calibrated_ranks", "drechsler_interval", "em_quantile", "run_epsilon"]

FloatArray = npt.NDArray[np.float64]


def run_epsilon(budget: object) -> float:
    """The per-run eps of the construction's two runs at the same or a stricter guarantee than ``budget``: half
    of eps for ``PureDP(eps)`` and ``ApproxDP(eps, delta)``; for ``GDP(mu)`` the largest pure eps whose two runs,
    each ``eps``-DP hence ``gdp_mu``-GDP of its exact conversion, compose to at most mu-GDP."""
    from privframe import GDP
    from privframe.privacy import accounting

    if isinstance(budget, GDP):
        mu_i = budget.mu / math.sqrt(2.0)
        while accounting.gdp_compose([mu_i, mu_i]) > budget.mu:
            mu_i = math.nextafter(mu_i, 0.0)
        return accounting.gdp_pure_epsilon(mu_i)
    return float(budget.epsilon) / 2.0  # type: ignore[attr-defined]


def _lower_failure(k: int, n: int, q: float, eps_run: float, ratio: float) -> float:
    m = np.arange(k + 1, n + 1)
    tail = np.minimum(1.0, ratio * np.exp(-(eps_run / 2.0) * (m - k)))
    return float(stats.binom.cdf(k, n, q)) + float(np.sum(stats.binom.pmf(m, n, q) * tail))


def _largest_passing(n: int, q: float, eps_run: float, ratio: float, alpha_end: float) -> int:
    """The largest k in 1..n with ``failure(k) <= alpha_end`` (failure increases with k), or 0."""
    low, high = 0, n
    while low < high:
        middle = (low + high + 1) // 2
        if _lower_failure(middle, n, q, eps_run, ratio) <= alpha_end:
            low = middle
        else:
            high = middle - 1
    return low


def calibrated_ranks(
    n: int, q: float, confidence: float, eps_run: float, low: float, high: float, granularity: float
) -> tuple[int, int]:
    """Target ranks ``(k_l, k_u)`` (0 and n + 1 mean the bound itself).

    The upper end is the lower end of the reflected problem (q -> 1 - q), so ``k_u = n + 1 - k'``.
    """
    alpha = 1.0 - confidence
    ratio = (high - low - 2.0 * granularity) / (2.0 * granularity)
    lower = _largest_passing(n, q, eps_run, ratio, alpha / 2.0)
    upper = _largest_passing(n, 1.0 - q, eps_run, ratio, alpha / 2.0)
    return lower, n + 1 - upper


def em_quantile(
    x: FloatArray,
    low: float,
    high: float,
    eps_run: float,
    granularity: float,
    quantile: float,
    rng: np.random.Generator,
) -> float:
    """One run of their exponential mechanism (``dpMedianExponential``) at ``quantile``."""
    z = np.sort(np.concatenate([np.clip(x, low, high), [low, high]]))
    size = z.size
    split = min(size, math.floor(size * quantile) + 1)
    z[:split] = np.maximum(low, z[:split] - granularity)
    z[split:] = np.minimum(z[split:] + granularity, high)
    lengths = np.diff(z)
    index = np.arange(1, size)
    with np.errstate(divide="ignore"):
        scores = -(eps_run / 2.0) * np.abs(index - size * quantile) + np.log(lengths)
    piece = int(np.argmax(scores + rng.gumbel(size=scores.size)))
    return float(rng.uniform(z[piece], z[piece + 1]))


def drechsler_interval(
    x: FloatArray,
    low: float,
    high: float,
    eps_run: float,
    granularity: float,
    ranks: tuple[int, int],
    rng: np.random.Generator,
) -> tuple[float, float]:
    """The interval ``[y_l - g, y_u + g]`` (clipped to the bounds) at the calibrated ``ranks``."""
    n = x.size
    k_low, k_high = ranks
    lower = low if k_low == 0 else em_quantile(x, low, high, eps_run, granularity, k_low / n, rng) - granularity
    upper = high if k_high == n + 1 else em_quantile(x, low, high, eps_run, granularity, k_high / n, rng) + granularity
    return max(low, lower), min(high, upper)
