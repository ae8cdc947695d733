"""Accounting math as pure functions (algorithms.md section 1).

Everything here is closed-form or a one-dimensional root find; no state, no randomness. The budget
classes (:mod:`privframe.budgets`) and the accountant plugins are thin layers over these functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import optimize, special

from privframe.errors import BudgetError

__all__ = [
    "advanced_composition",
    "amplify_wor",
    "basic_composition",
    "gdp_compose",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_for",
    "group_privacy_approx",
    "group_privacy_gdp",
]


def _check_positive(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise BudgetError(f"{name}: must be a finite number > 0")
    return value


def _check_nonnegative(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise BudgetError(f"{name}: must be a finite number >= 0")
    return value


def _check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    delta = float(delta)
    low_ok = delta >= 0 if allow_zero else delta > 0
    if not (math.isfinite(delta) and low_ok and delta < 1):
        bound = "0 <= delta < 1" if allow_zero else "0 < delta < 1"
        raise BudgetError(f"{name}: must satisfy {bound}")
    return delta


def gdp_delta(epsilon: float, mu: float) -> float:
    """Tight delta(eps) of a mu-GDP mechanism.

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in log space so that
    large ``eps`` does not overflow.
    """
    epsilon = _check_nonnegative(epsilon, "epsilon")
    mu = _check_positive(mu, "mu")
    first = special.log_ndtr(-epsilon / mu + mu / 2)
    second = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if second >= first:
        return 0.0
    # exp(first) * (1 - exp(second - first)), stable for tiny differences
    return float(-math.exp(first) * math.expm1(second - first))


def gdp_epsilon(delta: float, mu: float) -> float:
    """Smallest eps >= 0 with ``delta(eps; mu) <= delta`` (tight mu-GDP -> (eps, delta))."""
    delta = _check_delta(delta, allow_zero=False)
    mu = _check_positive(mu, "mu")
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    upper = max(1.0, mu)
    while gdp_delta(upper, mu) > delta:
        upper *= 2.0
        if upper > 1e6:
            raise BudgetError("delta: too small to convert this mu to (epsilon, delta)")
    root = float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, upper, xtol=1e-14, rtol=1e-14))
    # brentq may land a hair below the root; step up until the reported (eps, delta) really holds.
    while gdp_delta(root, mu) > delta:
        root = math.nextafter(root, math.inf)
    return root


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest mu whose mu-GDP guarantee implies (eps, delta)-DP (the sound (eps, delta) -> GDP direction)."""
    epsilon = _check_positive(epsilon, "epsilon")
    delta = _check_delta(delta, allow_zero=False)
    lower, upper = 1e-8, 1.0
    while gdp_delta(epsilon, upper) < delta:
        upper *= 2.0
        if upper > 1e4:
            raise BudgetError("epsilon: too large to calibrate a GDP parameter")
    root = optimize.brentq(lambda m: gdp_delta(epsilon, m) - delta, lower, upper, xtol=1e-14, rtol=1e-14)
    mu = float(root)
    # brentq may land a hair above the root; step down until the guarantee holds.
    while gdp_delta(epsilon, mu) > delta:
        mu = math.nextafter(mu, 0.0)
    return mu


def gdp_compose(mus: Iterable[float]) -> float:
    """Composition of mu_i-GDP mechanisms: ``sqrt(sum mu_i^2)``."""
    values = np.asarray([_check_nonnegative(m, "mu") for m in mus], dtype=np.float64)
    return float(np.sqrt(np.sum(values**2)))


def basic_composition(budgets: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Basic composition: epsilons and deltas add."""
    eps = math.fsum(_check_nonnegative(e, "epsilon") for e, _ in budgets)
    delta = math.fsum(_check_delta(d) for _, d in budgets)
    return eps, min(delta, 1.0)


def advanced_composition(epsilon: float, delta: float, k: int, slack: float) -> tuple[float, float]:
    """k-fold advanced composition of (eps', delta')-DP mechanisms with slack d.

    ``eps_k = sqrt(2 k ln(1/d)) eps' + k eps' (e^eps' - 1)``, ``delta_k = k delta' + d``.
    """
    epsilon = _check_nonnegative(epsilon, "epsilon")
    delta = _check_delta(delta)
    slack = _check_delta(slack, "slack", allow_zero=False)
    if k < 1:
        raise BudgetError("k: must be a positive integer")
    eps_k = math.sqrt(2 * k * math.log(1 / slack)) * epsilon + k * epsilon * math.expm1(epsilon)
    return eps_k, min(k * delta + slack, 1.0)


def amplify_wor(epsilon: float, delta: float, m: int, n: int) -> tuple[float, float]:
    """Amplification by subsampling without replacement (replace-one, size-m subset of n).

    ``(ln(1 + (m/n)(e^eps - 1)), (m/n) delta)``.
    """
    epsilon = _check_nonnegative(epsilon, "epsilon")
    delta = _check_delta(delta)
    if not (1 <= m <= n):
        raise BudgetError("m: must satisfy 1 <= m <= n")
    q = m / n
    return math.log1p(q * math.expm1(epsilon)), q * delta


def group_privacy_gdp(mu: float, k: int) -> float:
    """A mu-GDP mechanism is (k mu)-GDP for datasets that differ in k records."""
    if k < 1:
        raise BudgetError("k: must be a positive integer")
    return k * _check_positive(mu, "mu")


def group_privacy_approx(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Group privacy for (eps, delta)-DP: ``(k eps, k e^{(k-1) eps} delta)``."""
    epsilon = _check_nonnegative(epsilon, "epsilon")
    delta = _check_delta(delta)
    if k < 1:
        raise BudgetError("k: must be a positive integer")
    return k * epsilon, min(k * math.exp((k - 1) * epsilon) * delta, 1.0)
