"""PrivSub's calibration: the per-call budgets of one full-data call and T subsampled calls.

The user gives PrivSub a total (eps, delta). Each subsample call runs on m of the n records and is amplified
by subsampling without replacement; the T amplified calls are composed; the full-data call is added. This
module solves for the largest per-call epsilon whose composition fits (``docs/methods/privsub.md``). The
events PrivSub then charges say exactly this (a per-call budget, ``Subsample(n, m)``, ``count = T``), and
the registered ``approx-dp`` accountant composes them into the ledger's total.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import BudgetError, ConfigError
from privframe.privacy.accounting import (
    COMPOSITION_SAFETY,
    COMPOSITIONS,
    amplify_wor,
    check_count,
    check_delta,
    check_positive,
    compose_homogeneous,
    optimal_composition_delta,
)

__all__ = ["SubsampledCalibration", "calibrate_subsampled", "compose_subsampled"]


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


def _fits_mode(mode: str, eps_amp: float, delta_amp: float, count: int, eps_budget: float, target: float) -> bool:
    if mode == "optimal" and target > 0:
        return optimal_composition_delta(eps_amp, delta_amp, count, eps_budget) <= target * COMPOSITION_SAFETY
    eps_k, delta_k = compose_homogeneous(mode, eps_amp, delta_amp, count, target)
    return eps_k <= eps_budget and delta_k <= target * (1 + 1e-12)


def _modes(composition: str, target_delta: float, delta_amp: float, count: int) -> tuple[str, ...]:
    if composition not in ("best", *COMPOSITIONS):
        raise ConfigError("must be one of 'best', 'basic', 'advanced', 'optimal'", path="composition")
    slack_ok = target_delta - count * delta_amp > 0
    if composition == "advanced" and not slack_ok:
        raise BudgetError("advanced composition needs a total delta above the per-call deltas (a slack)", path="delta")
    if composition != "best":
        return (composition,)
    return ("basic", "advanced", "optimal") if slack_ok else ("basic", "optimal")


def _check_sizes(n: int, m: int, count: int) -> tuple[int, int, int]:
    n, m, count = check_count(n, "n"), check_count(m, "m"), check_count(count, "count")
    if m > n:
        raise BudgetError("must satisfy 1 <= m <= n", path="m")
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
    target_delta = check_delta(target_delta, "target_delta")
    if count * delta_amp > target_delta * (1 + 1e-12):
        raise BudgetError("the per-call deltas alone exceed the budget's delta", path="delta")
    modes = _modes(composition, target_delta, delta_amp, count)
    candidates = {mode: math.nan for mode in COMPOSITIONS}
    results: dict[str, tuple[float, float]] = {}
    for mode in modes:
        try:
            results[mode] = compose_homogeneous(mode, eps_amp, delta_amp, count, target_delta)
        except BudgetError:
            continue
        candidates[mode] = results[mode][0]
    if not results:
        raise BudgetError("no composition reaches the budget's delta", path="delta")
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
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta)
    n, m, count = _check_sizes(n, m, count)
    for value, name in ((share, "share"), (slack_share, "slack_share")):
        if not (math.isfinite(value) and 0 < value < 1):
            raise ConfigError("must be a number in (0, 1)", path=name)
    if per_call_delta and delta <= 0:
        raise BudgetError("this mechanism needs a per-call delta, so the budget needs delta > 0", path="delta")
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
    eps_k, delta_k = compose_homogeneous(best, eps_amp, delta_amp, count, target)
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
