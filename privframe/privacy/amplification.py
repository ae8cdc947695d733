"""Amplification by subsampling under GDP, exactly, for pure eps-DP releases on subsamples.

A pure eps-DP mechanism is dominated by randomized response at eps (``f_eps``). Run on a subsample of m of the
n records drawn without replacement, under the replace-one relation, it is ``C_q(f_eps)``-DP with ``q = m / n``
(Dong, Roth and Su 2022, the subsampling theorem): ``C_q(f) = min{f_q, f_q^{-1}}**`` with
``f_q = q f + (1 - q) Id``. For randomized response this curve has a three-atom privacy-loss distribution:

    L = +lambda   with probability  q a + (1 - q)(1 - a),
    L = 0         with probability  (1 - q)(2 a - 1),
    L = -lambda   with probability  1 - a,

where ``a = e^eps / (1 + e^eps)`` and ``lambda = ln(q e^eps + 1 - q)``. (The pair ``(q P + (1 - q) Q, Q)`` of
randomized response's P and Q has the larger privacy profile at every level >= 0, its only positive loss is
``lambda``, and the symmetric curve's loss law below 0 is the mirror image: ``P(L = -l) = e^{-l} P(L = l)``.)
T such releases compose to the T-fold convolution, a law on the lattice ``lambda Z`` (a trinomial), computed
exactly up to floating-point rounding. Its privacy profile is ``delta(t) = sum_l P(L = l) (1 - e^{t - l})_+``.

A symmetric curve is mu-GDP exactly when its profile lies below G_mu's,
``delta_mu(t) = Phi(-t / mu + mu / 2) - e^t Phi(-t / mu - mu / 2)``, at every ``t >= 0`` (Dong, Roth and Su,
Proposition 2.12). Both profiles decrease in t, so checking ``delta(t_i) <= delta_mu(t_{i+1})`` on a grid
``0 = t_0 < t_1 < ...`` covering the support proves it between grid points too; beyond the largest loss the
composed profile is 0. :func:`subsampled_pure_gdp_mu` is the smallest mu (to a relative 1e-9, rounded up)
that passes, so the accounting is exact up to that and the grid's spacing, never optimistic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from privframe._typing import Array, LazyModule
from privframe.errors import BudgetError
from privframe.privacy.accounting import gdp_pure_epsilon, pure_dp_gdp_mu

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "composed_subsampled_pld",
    "gdp_dominates",
    "largest_subsampled_epsilon",
    "subsampled_pure_gdp_mu",
    "subsampled_pure_pld",
]

_GRID = 4096
"""Grid points on [0, largest loss] at which the profiles are compared (the check is exact between them)."""

_REL_TOL = 1e-9
"""Relative precision of the bisections (the result is rounded to the safe side)."""

_MARGIN = 1e-9
"""The composed profile must lie below G_mu's by this relative margin, far above the float error of either."""


def _check(epsilon: float, rate: float, count: int) -> None:
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise BudgetError("must be a finite number >= 0", path="epsilon")
    if not (math.isfinite(rate) and 0 < rate <= 1):
        raise BudgetError("the sampling rate m / n must lie in (0, 1]", path="rate")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise BudgetError("must be a positive integer", path="count")


def subsampled_pure_pld(epsilon: float, rate: float) -> tuple[float, Array]:
    """``(lambda, p)``: one subsampled eps-DP release's loss law, ``P(L = k lambda) = p[k + 1]`` for k = -1, 0, 1.

    Parameters
    ----------
    epsilon : float
        The pure epsilon of the release on its subsample.
    rate : float
        ``q = m / n``, the subsampling rate (without replacement).

    Returns
    -------
    (float, ndarray)
        The lattice step lambda and the probabilities of ``-lambda, 0, +lambda``.
    """
    _check(epsilon, rate, 1)
    a = special.expit(epsilon)  # e^eps / (1 + e^eps), without overflow
    step = math.log1p(rate * math.expm1(epsilon))
    low = 1.0 - a
    high = rate * a + (1.0 - rate) * low
    middle = max(0.0, 1.0 - low - high)
    return step, np.array([low, middle, high])


@functools.lru_cache(maxsize=1024)
def composed_subsampled_pld(epsilon: float, rate: float, count: int) -> tuple[float, Array]:
    """``(lambda, p)``: the ``count``-fold composition, ``P(L = k lambda) = p[k + count]``, k = -count..count."""
    _check(epsilon, rate, count)
    step, one = subsampled_pure_pld(epsilon, rate)
    pmf = np.ones(1)
    power, base = count, one
    while power:  # exponentiation by squaring of the convolution
        if power & 1:
            pmf = np.convolve(pmf, base)
        power >>= 1
        if power:
            base = np.convolve(base, base)
    pmf = np.maximum(pmf, 0.0)
    pmf.flags.writeable = False
    return step, pmf


def _profile(step: float, pmf: Array, levels: Array) -> Array:
    """``delta(t) = sum_l P(L = l) (1 - e^{t - l})_+`` at each level t >= 0 of the lattice law."""
    count = (pmf.size - 1) // 2
    losses = step * np.arange(-count, count + 1, dtype=np.float64)
    positive = losses > 0
    losses, weights = losses[positive], pmf[positive]
    gaps = levels[:, np.newaxis] - losses[np.newaxis, :]
    terms = np.where(gaps < 0, -np.expm1(np.minimum(gaps, 0.0)), 0.0) * weights[np.newaxis, :]
    return np.asarray(terms.sum(axis=1), dtype=np.float64)


def _gdp_profile(levels: Array, mu: float) -> Array:
    """G_mu's profile ``Phi(a) - e^t Phi(a - mu)``, ``a = -t / mu + mu / 2``, as ``Phi(a) (1 - e^{t + ln Phi(a - mu)
    - ln Phi(a)})`` so that neither term underflows nor cancels in the far tail (vectorised)."""
    a = -levels / mu + mu / 2.0
    log_first = special.log_ndtr(a)
    ratio = levels + special.log_ndtr(a - mu) - log_first
    return np.asarray(np.exp(log_first) * -np.expm1(np.minimum(ratio, 0.0)), dtype=np.float64)


def gdp_dominates(mu: float, epsilon: float, rate: float, count: int) -> bool:
    """Whether ``count`` releases, each eps-DP on its own subsample at rate q, are mu-GDP together.

    Compares the composed profile with G_mu's on a grid of :data:`_GRID` levels over ``[0, count lambda]``
    with the monotone sandwich of the module docstring (a conservative check: False may mean "not shown").
    """
    _check(epsilon, rate, count)
    if not (math.isfinite(mu) and mu > 0):
        raise BudgetError("must be a finite number > 0", path="mu")
    step, pmf = composed_subsampled_pld(epsilon, rate, count)
    top = count * step
    if top <= 0:
        return True  # epsilon = 0: nothing depends on the data
    levels = np.linspace(0.0, top, _GRID + 1)
    mine = _profile(step, pmf, levels[:-1])
    theirs = _gdp_profile(levels[1:], mu)
    return bool(np.all(mine * (1.0 + _MARGIN) <= theirs))


@functools.lru_cache(maxsize=1024)
def subsampled_pure_gdp_mu(epsilon: float, rate: float, count: int) -> float:
    """The smallest mu (to a relative 1e-9, rounded up) for which ``count`` subsampled eps-DP releases are
    mu-GDP: never above the unamplified ``sqrt(count) pure_dp_gdp_mu(eps)``."""
    _check(epsilon, rate, count)
    if epsilon == 0:
        return 0.0
    unamplified = math.sqrt(count) * pure_dp_gdp_mu(epsilon)
    if rate == 1.0:
        return unamplified  # randomized response attains its GDP conversion: nothing to gain
    high = unamplified
    if not gdp_dominates(high, epsilon, rate, count):  # the grid check is conservative; stay with the bound
        return high
    low = high / 2.0
    while gdp_dominates(low, epsilon, rate, count):
        high, low = low, low / 2.0
        if low < 1e-12:
            return high
    return _last_fitting(lambda mu: gdp_dominates(mu, epsilon, rate, count), high, low)


@functools.lru_cache(maxsize=1024)
def largest_subsampled_epsilon(mu: float, rate: float, count: int) -> float:
    """The largest pure eps (to a relative 1e-9, rounded down) whose ``count`` subsampled releases at rate q
    are mu-GDP together: a bisection on eps of :func:`gdp_dominates` at mu (monotone: a larger eps is less
    private), started from the unamplified split ``gdp_pure_epsilon(mu / sqrt(count))``, which always fits."""
    if not (math.isfinite(mu) and mu > 0):
        raise BudgetError("must be a finite number > 0", path="mu")
    _check(1.0, rate, count)
    low = gdp_pure_epsilon(mu / math.sqrt(count))
    if rate == 1.0 or not gdp_dominates(mu, low, rate, count):  # nothing to gain (or not shown): unamplified
        return low
    high = 2.0 * low + 1.0
    while gdp_dominates(mu, high, rate, count):
        low, high = high, 2.0 * high
        if high > 700:
            return low
    return _last_fitting(lambda epsilon: gdp_dominates(mu, epsilon, rate, count), low, high)


def _last_fitting(fits: Callable[[float], bool], good: float, bad: float) -> float:
    """Bisection between a value that ``fits`` and one that does not (``fits`` monotone between them), to a
    relative ``_REL_TOL`` of the larger: the last value found to fit."""
    while abs(good - bad) > _REL_TOL * max(good, bad):
        middle = 0.5 * (good + bad)
        if fits(middle):
            good = middle
        else:
            bad = middle
    return good
