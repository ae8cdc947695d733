"""Accounting math as pure functions (algorithms.md section 1).

Everything here is closed-form or a one-dimensional root find; no state, no randomness. The budget
classes (:mod:`privframe.budgets`) and the accountant plugins are thin layers over these functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs
import numpy as np
from scipy import optimize, special

from privframe._frozen import frozen_mapping
from privframe.errors import BudgetError, ConfigError

__all__ = [
    "COMPOSITIONS",
    "SubsampledCalibration",
    "advanced_composition",
    "amplify_wor",
    "basic_composition",
    "calibrate_subsampled",
    "compose_subsampled",
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
    values = [_check_nonnegative(m, "mu") for m in mus]
    return math.hypot(*values)  # no overflow or underflow for extreme mu


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


# ---------------------------------------------------------------------------------------------------------
# Optimal composition, pure DP as GDP, and the calibration of subsampled releases (algorithms.md 1 and 4)


def _check_count(k: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise BudgetError(f"{name}: must be a positive integer")
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
    epsilon = _check_nonnegative(epsilon, "epsilon")
    delta = _check_delta(delta)
    k = _check_count(k)
    target_epsilon = _check_nonnegative(target_epsilon, "target_epsilon")
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
    epsilon = _check_nonnegative(epsilon, "epsilon")
    delta = _check_delta(delta)
    k = _check_count(k)
    target_delta = _check_delta(target_delta, "target_delta")
    top = k * epsilon
    if target_delta == 0.0:
        # Exactly: delta_k(eps') = 0 iff delta = 0 and eps' >= k eps (tiny positive terms would underflow).
        if delta > 0:
            raise BudgetError("target_delta: below 1 - (1 - delta)^k, which no epsilon of the composition reaches")
        return top
    if optimal_composition_delta(epsilon, delta, k, top) > target_delta:
        raise BudgetError("target_delta: below 1 - (1 - delta)^k, which no epsilon of the composition reaches")
    if optimal_composition_delta(epsilon, delta, k, 0.0) <= target_delta:
        return 0.0
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
    epsilon = _check_positive(epsilon, "epsilon")
    return float(-2.0 * special.ndtri(special.expit(-epsilon)))


def gdp_pure_epsilon(mu: float) -> float:
    """Largest eps such that eps-DP implies mu-GDP (the inverse of :func:`pure_dp_gdp_mu`).

    ``eps = ln(Phi(mu / 2) / Phi(-mu / 2))``; a pure-DP mechanism run at this eps may be recorded as mu-GDP.
    """
    mu = _check_positive(mu, "mu")
    eps = float(special.log_ndtr(mu / 2) - special.log_ndtr(-mu / 2))
    while eps > 0 and pure_dp_gdp_mu(eps) > mu:
        eps = math.nextafter(eps, 0.0)
    return eps


COMPOSITIONS = ("basic", "advanced", "optimal")
"""The homogeneous compositions :func:`compose_subsampled` and :func:`calibrate_subsampled` compare."""


@attrs.frozen
class SubsampledCalibration:
    """Per-call budgets for one full-data call plus ``count`` subsampled calls, and what they compose to.

    Produced by :func:`calibrate_subsampled` (and :func:`compose_subsampled` for a fixed per-call budget).

    Attributes
    ----------
    epsilon_full, delta_full : float
        The full-data call's budget.
    epsilon_call, delta_call : float
        The budget of one subsample call, on its own m records.
    epsilon_amplified, delta_amplified : float
        That call's guarantee with respect to the full data, after amplification by subsampling without
        replacement: ``(ln(1 + (m/n)(e^eps - 1)), (m/n) delta)``.
    epsilon_composed, delta_composed : float
        The ``count``-fold composition of the amplified calls.
    composition : str
        The composition that was tightest and is used: ``"basic"``, ``"advanced"`` or ``"optimal"``.
    candidates : mapping of str to float
        Per composition, the largest per-call epsilon it allows (calibration) or the composed epsilon it gives
        (fixed budgets); NaN where it does not apply.
    n, m, count : int
        Population size, subsample size, number of subsample calls.
    """

    epsilon_full: float
    delta_full: float
    epsilon_call: float
    delta_call: float
    epsilon_amplified: float
    delta_amplified: float
    epsilon_composed: float
    delta_composed: float
    composition: str
    candidates: Mapping[str, float] = attrs.field(converter=frozen_mapping)
    n: int
    m: int
    count: int

    @property
    def epsilon_total(self) -> float:
        """Total epsilon: the full call plus the composed subsample calls (basic composition of the two)."""
        return self.epsilon_full + self.epsilon_composed

    @property
    def delta_total(self) -> float:
        """Total delta."""
        return self.delta_full + self.delta_composed


def _composed(mode: str, eps_amp: float, delta_amp: float, count: int, target_delta: float) -> tuple[float, float]:
    """(epsilon, delta) of ``count`` amplified calls under one composition, spending at most ``target_delta``."""
    if mode == "basic":
        return count * eps_amp, min(count * delta_amp, 1.0)
    if mode == "advanced":
        slack = target_delta - count * delta_amp
        if slack <= 0:
            return math.inf, target_delta
        return advanced_composition(eps_amp, delta_amp, count, slack)
    return optimal_composition(eps_amp, delta_amp, count, target_delta * _SAFETY), target_delta


# The optimal-composition sum is accurate to a relative ~1e-11 (log-gamma of k ~ 10^4); the calibration aims
# at a delta smaller by a relative 1e-9 so that rounding can never push the true delta past the target.
_SAFETY = 1.0 - 1e-9


def _fits_mode(mode: str, eps_amp: float, delta_amp: float, count: int, eps_budget: float, target: float) -> bool:
    if mode == "optimal" and target > 0:
        return optimal_composition_delta(eps_amp, delta_amp, count, eps_budget) <= target * _SAFETY
    eps_k, delta_k = _composed(mode, eps_amp, delta_amp, count, target)
    return eps_k <= eps_budget and delta_k <= target * (1 + 1e-12)


def _modes(composition: str, target_delta: float, delta_amp: float, count: int) -> tuple[str, ...]:
    if composition not in ("best", *COMPOSITIONS):
        raise ConfigError("composition: must be one of 'best', 'basic', 'advanced', 'optimal'")
    slack_ok = target_delta - count * delta_amp > 0
    if composition == "advanced" and not slack_ok:
        raise BudgetError("delta: advanced composition needs a total delta above the per-call deltas (a slack)")
    if composition != "best":
        return (composition,)
    return ("basic", "advanced", "optimal") if slack_ok else ("basic", "optimal")


def _check_sizes(n: int, m: int, count: int) -> tuple[int, int, int]:
    n, m, count = _check_count(n, "n"), _check_count(m, "m"), _check_count(count, "count")
    if m > n:
        raise BudgetError("m: must satisfy 1 <= m <= n")
    return n, m, count


def compose_subsampled(
    epsilon_full: float,
    delta_full: float,
    epsilon_call: float,
    delta_call: float,
    *,
    n: int,
    m: int,
    count: int,
    target_delta: float,
    composition: str = "best",
) -> SubsampledCalibration:
    """What one full-data call plus ``count`` subsampled calls at fixed per-call budgets compose to.

    Each subsample call is amplified (:func:`amplify_wor`), the ``count`` amplified calls are composed by
    basic, advanced (slack ``target_delta - count * delta_amplified``) or optimal composition at total delta
    ``target_delta`` (``composition="best"``: the smallest epsilon), and the full call is added by basic
    composition.
    """
    n, m, count = _check_sizes(n, m, count)
    eps_amp, delta_amp = amplify_wor(epsilon_call, delta_call, m, n)
    target_delta = _check_delta(target_delta, "target_delta")
    if count * delta_amp > target_delta * (1 + 1e-12):
        raise BudgetError("delta: the per-call deltas alone exceed the budget's delta")
    modes = _modes(composition, target_delta, delta_amp, count)
    candidates = {mode: math.nan for mode in COMPOSITIONS}
    results: dict[str, tuple[float, float]] = {}
    for mode in modes:
        try:
            results[mode] = _composed(mode, eps_amp, delta_amp, count, target_delta)
        except BudgetError:
            continue
        candidates[mode] = results[mode][0]
    if not results:
        raise BudgetError("delta: no composition reaches the budget's delta")
    best = min(results, key=lambda mode: (results[mode][0], COMPOSITIONS.index(mode)))
    eps_k, delta_k = results[best]
    return SubsampledCalibration(
        epsilon_full=float(epsilon_full),
        delta_full=float(delta_full),
        epsilon_call=float(epsilon_call),
        delta_call=float(delta_call),
        epsilon_amplified=eps_amp,
        delta_amplified=delta_amp,
        epsilon_composed=eps_k,
        delta_composed=delta_k,
        composition=best,
        candidates=candidates,
        n=n,
        m=m,
        count=count,
    )


def _largest_feasible(feasible: Callable[[float], bool]) -> float:
    """Largest x in (0, 700] with ``feasible(x)`` for a monotone predicate (true near 0), by bisection."""
    low, high = 0.0, 1.0
    while feasible(high):
        low, high = high, 2.0 * high
        if high > 700.0:
            return 700.0 if feasible(700.0) else low
    while high - low > 1e-13 * high:
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if feasible(middle):
            low = middle
        else:
            high = middle
    return low


def calibrate_subsampled(
    epsilon: float,
    delta: float,
    *,
    n: int,
    m: int,
    count: int,
    share: float = 0.5,
    slack_share: float = 0.5,
    per_call_delta: bool = False,
    composition: str = "best",
) -> SubsampledCalibration:
    """Split a total (eps, delta) between one full-data call and ``count`` subsampled calls (PrivSub).

    ``epsilon_full = share * eps``; the remaining ``(1 - share) eps`` is spent on the subsample calls. delta
    is split into a composition slack ``slack_share * delta`` and, only when the mechanism needs a per-call
    delta (``per_call_delta``, e.g. Gaussian noise), per-call deltas from the rest: ``share`` of it for the
    full call and the remainder spread over the ``count`` amplified calls. The per-call epsilon is the
    largest (found by bisection, to a relative 1e-13) whose amplified ``count``-fold composition fits
    ``(1 - share) eps`` at the delta left for it, under each of basic, advanced (slack as above) and optimal
    composition; the largest wins (``composition="best"``) and is recorded. A pure budget (``delta = 0``)
    leaves only basic composition (optimal composition then coincides with it).

    Returns
    -------
    SubsampledCalibration
        Its total is at most ``(epsilon, delta)``.
    """
    epsilon = _check_positive(epsilon, "epsilon")
    delta = _check_delta(delta)
    n, m, count = _check_sizes(n, m, count)
    for value, name in ((share, "share"), (slack_share, "slack_share")):
        if not (math.isfinite(value) and 0 < value < 1):
            raise ConfigError(f"{name}: must be a number in (0, 1)")
    if per_call_delta and delta <= 0:
        raise BudgetError("delta: this mechanism needs a per-call delta, so the budget needs delta > 0")
    q = m / n
    eps_full = share * epsilon
    eps_budget = epsilon - eps_full
    slack = slack_share * delta
    calls = delta - slack if per_call_delta else 0.0
    delta_full = share * calls
    delta_amp = (calls - delta_full) / count
    delta_call = min(delta_amp / q, math.nextafter(1.0, 0.0))
    target = slack + count * delta_amp
    modes = _modes(composition, target, delta_amp, count)
    candidates = {mode: math.nan for mode in COMPOSITIONS}
    for mode in modes:

        def feasible(eps_call: float, mode: str = mode) -> bool:
            eps_amp = amplify_wor(eps_call, delta_call, m, n)[0]
            return _fits_mode(mode, eps_amp, delta_amp, count, eps_budget, target)

        candidates[mode] = _largest_feasible(feasible)
    best = max(modes, key=lambda mode: (candidates[mode], -COMPOSITIONS.index(mode)))
    eps_call = candidates[best]
    eps_amp, delta_amp = amplify_wor(eps_call, delta_call, m, n)
    eps_k, delta_k = _composed(best, eps_amp, delta_amp, count, target)
    return SubsampledCalibration(
        epsilon_full=eps_full,
        delta_full=delta_full,
        epsilon_call=eps_call,
        delta_call=delta_call,
        epsilon_amplified=eps_amp,
        delta_amplified=delta_amp,
        epsilon_composed=eps_k,
        delta_composed=delta_k,
        composition=best,
        candidates=candidates,
        n=n,
        m=m,
        count=count,
    )
