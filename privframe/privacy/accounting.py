"""Accounting math as pure functions (``docs/algorithms.md``, section 1).

Everything here is closed-form or a one-dimensional root find; no state, no randomness. The budget
classes (:mod:`privframe.privacy.budgets`) and the accountant plugins are thin layers over these functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from privframe.errors import BudgetError, ConfigError

__all__ = [
    "COMPOSITIONS",
    "COMPOSITION_SAFETY",
    "advanced_composition",
    "check_count",
    "check_delta",
    "check_nonnegative",
    "check_positive",
    "amplify_wor",
    "basic_composition",
    "compose_homogeneous",
    "gdp_compose",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_for",
    "gdp_pure_epsilon",
    "group_privacy_approx",
    "group_privacy_gdp",
    "optimal_composition",
    "optimal_composition_delta",
    "pure_dp_gdp_mu",
]


def check_positive(value: float, name: str) -> float:
    """A finite number > 0, else ``BudgetError`` with path ``name``."""
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise BudgetError("must be a finite number > 0", path=name)
    return value


def check_nonnegative(value: float, name: str) -> float:
    """A finite number >= 0, else ``BudgetError`` with path ``name``."""
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise BudgetError("must be a finite number >= 0", path=name)
    return value


def check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A delta in [0, 1) (or (0, 1) without ``allow_zero``), else ``BudgetError`` with path ``name``."""
    delta = float(delta)
    low_ok = delta >= 0 if allow_zero else delta > 0
    if not (math.isfinite(delta) and low_ok and delta < 1):
        bound = "0 <= delta < 1" if allow_zero else "0 < delta < 1"
        raise BudgetError(f"must satisfy {bound}", path=name)
    return delta


def gdp_delta(epsilon: float, mu: float) -> float:
    """Tight delta(eps) of a mu-GDP mechanism.

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in log space so that
    large ``eps`` does not overflow.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    mu = check_positive(mu, "mu")
    from scipy import special  # imported on first use: ``import privframe`` stays light

    first = special.log_ndtr(-epsilon / mu + mu / 2)
    second = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if second >= first:
        return 0.0
    # exp(first) * (1 - exp(second - first)), stable for tiny differences
    return float(-math.exp(first) * math.expm1(second - first))


def gdp_epsilon(delta: float, mu: float) -> float:
    """Smallest eps >= 0 with ``delta(eps; mu) <= delta`` (tight mu-GDP -> (eps, delta))."""
    delta = check_delta(delta, allow_zero=False)
    mu = check_positive(mu, "mu")
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    upper = max(1.0, mu)
    while gdp_delta(upper, mu) > delta:
        upper *= 2.0
        if upper > 1e6:
            raise BudgetError("too small to convert this mu to (epsilon, delta)", path="delta")
    from scipy import optimize  # imported on first use: ``import privframe`` stays light

    root = float(optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, upper, xtol=1e-14, rtol=1e-14))
    # brentq may land a hair below the root; step up until the reported (eps, delta) really holds.
    while gdp_delta(root, mu) > delta:
        root = math.nextafter(root, math.inf)
    return root


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest mu whose mu-GDP guarantee implies (eps, delta)-DP (the sound (eps, delta) -> GDP direction)."""
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta, allow_zero=False)
    lower, upper = 1e-8, 1.0
    while gdp_delta(epsilon, upper) < delta:
        upper *= 2.0
        if upper > 1e4:
            raise BudgetError("too large to calibrate a GDP parameter", path="epsilon")
    from scipy import optimize

    root = optimize.brentq(lambda m: gdp_delta(epsilon, m) - delta, lower, upper, xtol=1e-14, rtol=1e-14)
    mu = float(root)
    # brentq may land a hair above the root; step down until the guarantee holds.
    while gdp_delta(epsilon, mu) > delta:
        mu = math.nextafter(mu, 0.0)
    return mu


def gdp_compose(mus: Iterable[float]) -> float:
    """Composition of mu_i-GDP mechanisms: ``sqrt(sum mu_i^2)``."""
    values = [check_nonnegative(m, "mu") for m in mus]
    return math.hypot(*values)  # no overflow or underflow for extreme mu


def basic_composition(budgets: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Basic composition: epsilons and deltas add."""
    eps = math.fsum(check_nonnegative(e, "epsilon") for e, _ in budgets)
    delta = math.fsum(check_delta(d) for _, d in budgets)
    return eps, min(delta, 1.0)


def advanced_composition(epsilon: float, delta: float, k: int, slack: float) -> tuple[float, float]:
    """k-fold advanced composition of (eps', delta')-DP mechanisms with slack d.

    ``eps_k = sqrt(2 k ln(1/d)) eps' + k eps' (e^eps' - 1)``, ``delta_k = k delta' + d``.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    slack = check_delta(slack, "slack", allow_zero=False)
    if k < 1:
        raise BudgetError("must be a positive integer", path="k")
    eps_k = math.sqrt(2 * k * math.log(1 / slack)) * epsilon + k * epsilon * math.expm1(epsilon)
    return eps_k, min(k * delta + slack, 1.0)


def amplify_wor(epsilon: float, delta: float, m: int, n: int) -> tuple[float, float]:
    """Amplification by subsampling without replacement (replace-one, size-m subset of n).

    ``(ln(1 + (m/n)(e^eps - 1)), (m/n) delta)``.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    if not (1 <= m <= n):
        raise BudgetError("must satisfy 1 <= m <= n", path="m")
    q = m / n
    return math.log1p(q * math.expm1(epsilon)), q * delta


def group_privacy_gdp(mu: float, k: int) -> float:
    """A mu-GDP mechanism is (k mu)-GDP for datasets that differ in k records."""
    if k < 1:
        raise BudgetError("must be a positive integer", path="k")
    return k * check_positive(mu, "mu")


def group_privacy_approx(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """Group privacy for (eps, delta)-DP: ``(k eps, k e^{(k-1) eps} delta)``."""
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    if k < 1:
        raise BudgetError("must be a positive integer", path="k")
    return k * epsilon, min(k * math.exp((k - 1) * epsilon) * delta, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Optimal composition and pure DP as GDP


def check_count(k: int, name: str = "k") -> int:
    """A positive integer, else ``BudgetError`` with path ``name``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise BudgetError("must be a positive integer", path=name)
    return int(k)


def optimal_composition_delta(epsilon: float, delta: float, k: int, target_epsilon: float) -> float:
    """Exact delta at ``target_epsilon`` of the k-fold composition of (eps, delta)-DP mechanisms.

    The optimal composition theorem (Kairouz, Oh and Viswanath 2015): the k-fold (adaptive) composition
    of (eps, delta)-DP mechanisms is (eps', delta_k(eps'))-DP for every eps' >= 0, with

    ``delta_k(eps') = 1 - (1 - delta)^k (1 - sum_l C(k, l) (e^{l eps} - e^{eps' + (k - l) eps})_+ / (1 + e^eps)^k)``

    and no smaller delta holds for every such family (the k-fold product of the randomized-response pair
    attains it). At ``eps' = (k - 2i) eps`` it is KOV's ``1 - (1 - delta)^k (1 - delta_i)``. Evaluated in log
    space, so large ``k eps`` does not overflow.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    k = check_count(k)
    target_epsilon = check_nonnegative(target_epsilon, "target_epsilon")
    from scipy import special

    levels = np.arange(k + 1, dtype=np.float64)
    log_binom = special.gammaln(k + 1.0) - special.gammaln(levels + 1.0) - special.gammaln(k - levels + 1.0)
    log_mass = log_binom + levels * epsilon - k * np.logaddexp(0.0, epsilon)
    gap = target_epsilon - (2.0 * levels - k) * epsilon  # the l-th term is positive iff gap < 0
    positive = gap < 0
    hom = float(np.sum(np.exp(log_mass[positive]) * -np.expm1(gap[positive])))
    hom = min(max(hom, 0.0), 1.0)
    if hom >= 1.0:
        return 1.0
    return float(min(-math.expm1(k * math.log1p(-delta) + math.log1p(-hom)), 1.0))


def optimal_composition(epsilon: float, delta: float, k: int, target_delta: float) -> float:
    """Smallest eps' with ``optimal_composition_delta(epsilon, delta, k, eps') <= target_delta``.

    The tight epsilon of k (eps, delta)-DP mechanisms at the total ``target_delta``; never larger than the
    basic (``k eps``) or advanced composition at the same total delta. Raises ``BudgetError`` when
    ``target_delta`` is below ``1 - (1 - delta)^k``, which no epsilon reaches.
    """
    epsilon = check_nonnegative(epsilon, "epsilon")
    delta = check_delta(delta)
    k = check_count(k)
    target_delta = check_delta(target_delta, "target_delta")
    top = k * epsilon
    if target_delta == 0.0:
        # Exactly: delta_k(eps') = 0 iff delta = 0 and eps' >= k eps (tiny positive terms would underflow).
        if delta > 0:
            raise BudgetError(
                "below 1 - (1 - delta)^k, which no epsilon of the composition reaches", path="target_delta"
            )
        return top
    if optimal_composition_delta(epsilon, delta, k, top) > target_delta:
        raise BudgetError("below 1 - (1 - delta)^k, which no epsilon of the composition reaches", path="target_delta")
    if optimal_composition_delta(epsilon, delta, k, 0.0) <= target_delta:
        return 0.0
    from scipy import optimize

    root = float(
        optimize.brentq(
            lambda e: optimal_composition_delta(epsilon, delta, k, e) - target_delta,
            0.0,
            top,
            xtol=1e-14,
            rtol=1e-14,
        )
    )
    # brentq may land a hair below the root; step up until the reported (eps, delta) really holds.
    while root < top and optimal_composition_delta(epsilon, delta, k, root) > target_delta:
        root = math.nextafter(root, math.inf)
    return root


def pure_dp_gdp_mu(epsilon: float) -> float:
    """Smallest mu such that every eps-DP mechanism is mu-GDP: ``mu = -2 Phi^{-1}(1 / (1 + e^eps))``.

    The tradeoff curve of eps-DP, ``max(0, 1 - e^eps a, e^-eps (1 - a))``, is a convex polygon with one
    corner at ``a = 1 / (1 + e^eps)``; ``G_mu`` is convex and symmetric, so it stays below the polygon iff
    it does at that corner, i.e. iff ``Phi(-mu / 2) <= 1 / (1 + e^eps)``. Randomized response attains it.
    """
    epsilon = check_positive(epsilon, "epsilon")
    from scipy import special

    return float(-2.0 * special.ndtri(special.expit(-epsilon)))


def gdp_pure_epsilon(mu: float) -> float:
    """Largest eps such that eps-DP implies mu-GDP (the inverse of :func:`pure_dp_gdp_mu`).

    ``eps = ln(Phi(mu / 2) / Phi(-mu / 2))``; a pure-DP mechanism run at this eps may be recorded as mu-GDP.
    """
    mu = check_positive(mu, "mu")
    from scipy import special

    eps = float(special.log_ndtr(mu / 2) - special.log_ndtr(-mu / 2))
    while eps > 0 and pure_dp_gdp_mu(eps) > mu:
        eps = math.nextafter(eps, 0.0)
    return eps


COMPOSITIONS = ("basic", "advanced", "optimal")
"""The compositions of k identical (eps, delta)-DP releases :func:`compose_homogeneous` offers."""

COMPOSITION_SAFETY = 1.0 - 1e-9
"""Optimal composition aims at a total delta smaller by this relative factor: the KOV sum is accurate to a
relative ~1e-11 (log-gamma of k ~ 10^4), so rounding can never push the true delta past the target."""


def compose_homogeneous(mode: str, epsilon: float, delta: float, k: int, target_delta: float) -> tuple[float, float]:
    """(epsilon, delta) of k (eps, delta)-DP releases under one composition, spending at most ``target_delta``.

    ``"basic"``: ``(k eps, k delta)`` (``target_delta`` unused). ``"advanced"``: the advanced composition
    theorem with slack ``target_delta - k delta`` (infinite epsilon when there is no slack). ``"optimal"``:
    the exact composition (Kairouz, Oh and Viswanath) at total delta ``target_delta``.
    """
    if mode == "basic":
        return k * epsilon, min(k * delta, 1.0)
    if mode == "advanced":
        slack = target_delta - k * delta
        if slack <= 0:
            return math.inf, target_delta
        return advanced_composition(epsilon, delta, k, slack)
    if mode == "optimal":
        return optimal_composition(epsilon, delta, k, target_delta * COMPOSITION_SAFETY), target_delta
    raise ConfigError(f"must be one of {', '.join(COMPOSITIONS)}", path="composition")
