"""The private-variance interval for a mean: plan (public), statistics (data), interval (post-processing).

Two values are released, each once, with additive noise of a known law (docs/methods/private-variance.md):

* the **mean** of the clipped data, ``r_1 = mean(y)`` with ``y = clip(x, a, b) - a`` in ``[0, W]``;
* the **second moment about the bounds' midpoint**, ``r_2 = mean((y - W/2)^2)``.

Their replace-one sensitivities are ``W / n`` and ``(W/2)^2 / n`` (each term of a mean moves by at most its
range, over n), times a relative margin ``1 + n 2^-50`` that covers the rounding of the computed sums
(:func:`rounding_margin`). Both are public: the plan fixes everything before the data are read.

The interval is post-processing of the two releases and of their noise laws (:func:`interval`): the set of
candidate means mu accepted by ``|m - mu| <= H(max(v(mu) + k b_2, 0))`` with ``m = clip(r_1 / W, 0, 1)``,
``v(mu) = S2 - (mu - 1/2) S1`` in width units (``S1 = m - 1/2``, ``S2 = max(r_2 / W^2, 0)``), ``H(v)`` the
upper ``alpha/2`` quantile of ``c_t sqrt(v / n) Z + noise_1`` and ``k`` the inflation calibrated in
:mod:`~privframe_std.methods.private_variance.calibration`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import BudgetError, ConfigError
from privframe.privacy import noise
from privframe.privacy.accounting import gdp_mu_for
from privframe_std.methods.private_variance import calibration, plan_cache
from privframe_std.methods.private_variance.laws import GAUSSIAN, LAPLACE, NoiseLaw, sum_upper_quantile

__all__ = [
    "SPELLINGS",
    "Release",
    "VariancePlan",
    "interval",
    "noise_laws",
    "plan",
    "rounding_margin",
    "sensitivities",
    "statistics",
]

Array = npt.NDArray[np.float64]

SPELLINGS = ("laplace", "gaussian", "laplace+gaussian", "gaussian+laplace")
"""How a budget is spent: the mechanism of the mean, then of the second moment (one name: both)."""

GRID_MARGIN = 2.0**-18
"""Relative margin on the noise scales an interval is computed from: the lattice release rounds the value to
a grid of 2^-20 of the scale and its discrete law's tails exceed the continuous one's by a step or two
(the margin of ``privframe_std.mechanisms._checks``)."""

_SHARES = np.array([0.55, 0.65, 0.75, 0.8, 0.85, 0.9, 0.95])
"""Candidate shares of the budget for the mean (eps_1 / eps, or mu_1^2 / mu^2)."""

_CRITERION_SD = np.geomspace(0.005, 0.5, 25)
"""Data standard deviations (in widths) over which the split minimises the worst expected-width ratio."""

_INVERSION_STEPS = 48
"""Bisection (and ternary-search) steps of the interval's end points: 2^-48 of the unit width (the end
returned is always an accepted point, so fewer steps can only narrow the interval by that much)."""


def rounding_margin(n: int) -> float:
    """``1 + n 2^-50``: the relative excess of a computed mean's sensitivity over the exact one.

    ``math.fsum`` returns the correctly rounded sum ``S(1 + e_1)`` and the division by n rounds once more,
    ``|e_i| <= u = 2^-53``; for terms in ``[0, R]`` the computed mean is within ``2.01 u R`` of ``S / n``, so
    two neighbours' computed means differ by at most ``R / n + 4.02 u R = (R / n)(1 + 4.02 u n)``, below
    ``(R / n)(1 + n 2^-50)``.
    """
    return 1.0 + n * 2.0**-50


@attrs.frozen
class Release:
    """One planned release: a value of known sensitivity with noise of one law at one budget.

    Attributes
    ----------
    label : {"mean", "second_moment"}
        Which statistic (:func:`statistics` returns them in this order).
    kind : {"laplace", "gaussian"}
        The mechanism.
    budget : pp.PureDP or pp.GDP
        Its guarantee: ``PureDP(eps_i)`` for Laplace noise, ``GDP(mu_i)`` for Gaussian noise.
    sensitivity : float
        The replace-one sensitivity (L1 = L2 for a scalar), rounding margin included.
    """

    label: str
    kind: str
    budget: pp.PureDP | pp.GDP
    sensitivity: float

    @property
    def parameter(self) -> float:
        """eps_i (Laplace) or mu_i (Gaussian)."""
        return self.budget.epsilon if isinstance(self.budget, pp.PureDP) else self.budget.mu

    def nominal_law(self) -> NoiseLaw:
        """The continuous law at exactly ``sensitivity / parameter`` (simulations, and the plan's model)."""
        return NoiseLaw(self.kind, self.sensitivity / self.parameter)

    def lattice_plan(self) -> noise.LatticePlan:
        """The exact lattice release of :mod:`privframe.noise` that honours this budget."""
        if self.kind == LAPLACE:
            return noise.plan_laplace(self.sensitivity, self.parameter)
        return noise.plan_gaussian(self.sensitivity, self.parameter)

    def lattice_law(self) -> NoiseLaw:
        """The law of :meth:`lattice_plan`'s noise: its ``scale`` (a hair above the nominal one)."""
        return NoiseLaw(self.kind, self.lattice_plan().scale)


@attrs.frozen
class VariancePlan:
    """Everything the interval needs that does not depend on the data.

    Attributes
    ----------
    n : int
        Number of records (public).
    lower, upper : float
        The public bounds; ``width = fl(upper - lower)`` is the range of the shifted values.
    confidence : float
        The nominal coverage ``1 - alpha``.
    spelling : str
        One of :data:`SPELLINGS`.
    share : float
        The mean's share of the budget: ``eps_1 / eps`` (Laplace, or Laplace mean) or ``mu_1^2 / mu^2``.
    mean, second_moment : Release
        The two releases, in the order :func:`statistics` returns their values.
    inflation : float
        k: the multiple of the second moment's noise scale added to v (calibrated, >= 0).
    t_factor : float
        ``c_t = t_{n-1} / z`` at the confidence, on the sampling part of the half-width.
    criterion : float
        The worst ratio, over data standard deviations from 0.005 to 0.5 widths, of the model's expected
        half-width to that of a known-variance interval at the whole budget (what the split minimised).
    """

    n: int
    lower: float
    upper: float
    width: float
    confidence: float
    spelling: str
    share: float
    mean: Release
    second_moment: Release
    inflation: float
    t_factor: float
    criterion: float

    @property
    def releases(self) -> tuple[Release, Release]:
        """The two releases, mean first."""
        return (self.mean, self.second_moment)


def _check(n: int, bounds: tuple[float, float], confidence: float) -> tuple[float, float, float]:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ConfigError("must be an integer >= 2", path="n")
    low, high = (float(v) for v in bounds)
    if not (math.isfinite(low) and math.isfinite(high) and low < high and math.isfinite(high - low)):
        raise ConfigError("need finite low < high with a finite width", path="bounds")
    if not (isinstance(confidence, float) and 0.5 < confidence < 1.0):
        raise ConfigError("must be a float in (0.5, 1)", path="confidence")
    return low, high, high - low


def sensitivities(n: int, width: float) -> tuple[float, float]:
    """The replace-one sensitivities of the two statistics of :func:`statistics`, in release order.

    * ``mean(y)``, y in ``[0, W]``: replacing one record moves the sum by at most W, the mean by ``W / n``.
    * ``mean((y - W/2)^2)``: each term lies in ``[0, (W/2)^2]``, so one record moves the mean by at most
      ``(W/2)^2 / n`` (attained by moving a record from the midpoint to a bound).

    Both are multiplied by :func:`rounding_margin` (the computed means, not the exact ones, are released).

    Parameters
    ----------
    n : int
        Number of records.
    width : float
        The computed ``fl(b - a)``.

    Returns
    -------
    (float, float)
        The mean's and the second moment's sensitivities.
    """
    margin = rounding_margin(n)
    return width / n * margin, (width / 2.0) ** 2 / n * margin


def _releases(n: int, width: float, kinds: tuple[str, str], parameters: tuple[float, float]) -> tuple[Release, Release]:
    out = []
    labels = ("mean", "second_moment")
    for label, kind, parameter, sensitivity in zip(labels, kinds, parameters, sensitivities(n, width), strict=True):
        budget: pp.PureDP | pp.GDP = pp.PureDP(parameter) if kind == LAPLACE else pp.GDP(parameter)
        out.append(Release(label, kind, budget, sensitivity))
    return out[0], out[1]


def _model(n: int, confidence: float, mean: Release, second: Release, width: float) -> calibration.CoverageModel:
    """The coverage model in width units (nominal continuous laws)."""
    law1, law2 = mean.nominal_law(), second.nominal_law()
    return calibration.CoverageModel(
        n=n,
        mean_law=law1.scaled(1.0 / width),
        spread_law=law2.scaled(1.0 / width**2),
        confidence=confidence,
        t_factor=calibration.t_factor(n, confidence),
    )


def _split_sum(total: float, share: float) -> tuple[float, float]:
    """``(a, b)`` with ``a ~ share * total`` and ``a + b <= total`` in floating point (basic composition)."""
    first = share * total
    second = total - first
    while first + second > total:
        second = math.nextafter(second, 0.0)
    return first, second


def _split_square(total: float, share: float) -> tuple[float, float]:
    """``(a, b)`` with ``a^2 ~ share * total^2`` and ``sqrt(a^2 + b^2) <= total`` (GDP composition)."""
    first = math.sqrt(share) * total
    second = math.sqrt(max(total * total - first * first, 0.0))
    while math.hypot(first, second) > total:
        second = math.nextafter(second, 0.0)
    return first, second


def _parameters(spelling: str, budget: pp.Budget, share: float) -> tuple[tuple[str, str], tuple[float, float]]:
    """The mechanisms and their parameters (eps_i or mu_i) of a spelling at a share; they compose to at most
    the budget: eps_1 + eps_2 <= eps (Laplace), mu_1^2 + mu_2^2 <= mu^2 (Gaussian, mu = gdp_mu_for(eps, delta)
    under ApproxDP), or eps_1 + eps_2 <= eps with the Gaussian release at gdp_mu_for(eps_i, delta) (mixed)."""
    if isinstance(budget, pp.GDP):
        return (GAUSSIAN, GAUSSIAN), _split_square(budget.mu, share)
    if spelling == GAUSSIAN:
        assert isinstance(budget, pp.ApproxDP)
        return (GAUSSIAN, GAUSSIAN), _split_square(gdp_mu_for(budget.epsilon, budget.delta), share)
    first, second = _split_sum(budget.epsilon, share)
    if spelling == LAPLACE:
        return (LAPLACE, LAPLACE), (first, second)
    assert isinstance(budget, pp.ApproxDP)
    if spelling == "laplace+gaussian":
        return (LAPLACE, GAUSSIAN), (first, gdp_mu_for(second, budget.delta))
    return (GAUSSIAN, LAPLACE), (gdp_mu_for(first, budget.delta), second)


def _candidates(budget: pp.Budget) -> tuple[str, ...]:
    if isinstance(budget, pp.GDP):
        if budget.delta:
            raise BudgetError("(mu, delta)-GDP is not supported; give pp.GDP(mu)", path="budget")
        return (GAUSSIAN,)
    if isinstance(budget, pp.ApproxDP) and budget.delta > 0:
        return SPELLINGS
    return (LAPLACE,)


@functools.lru_cache(maxsize=64)
def plan(n: int, bounds: tuple[float, float], budget: pp.Budget, confidence: float = 0.95) -> VariancePlan:
    """The plan of the interval: releases, sensitivities, budget split, mechanisms and calibration.

    Public inputs only. The split is chosen for each spelling of the budget by minimising the model's worst
    expected-width ratio (:attr:`VariancePlan.criterion`) over the shares :data:`_SHARES`; for
    ``ApproxDP(eps, delta)`` a spelling other than pure Laplace at eps is taken only if its two noise
    variances are both no larger than those of the best Laplace plan (so that it cannot be wider), and then
    only if its criterion is smaller. ``GDP(mu)`` is spent on Gaussian noise with ``mu_1^2 + mu_2^2 = mu^2``.

    Parameters
    ----------
    n : int
        Number of records (public, >= 2).
    bounds : (float, float)
        Public bounds ``(a, b)``; data are clipped to them.
    budget : pp.PureDP, pp.ApproxDP or pp.GDP
        The total guarantee of the two releases together.
    confidence : float, default 0.95
        Nominal coverage.

    Returns
    -------
    VariancePlan

    Examples
    --------
    >>> import privframe as pf
    >>> p = plan(500, (0.0, 1.0), pp.PureDP(1.0))
    >>> p.spelling, round(p.share, 2), [r.label for r in p.releases]
    ('laplace', 0.85, ['mean', 'second_moment'])
    """
    low, high, width = _check(n, bounds, confidence)
    n = int(n)
    candidates = _candidates(budget)
    chosen = _best_split(n, low, high, width, budget, confidence, candidates[0])
    reference = [release.nominal_law().variance for release in chosen.releases]
    for spelling in candidates[1:]:
        if not _can_dominate(n, width, budget, spelling, reference):
            continue
        candidate = _best_split(n, low, high, width, budget, confidence, spelling)
        variances = [release.nominal_law().variance for release in candidate.releases]
        dominated = all(mine <= theirs for mine, theirs in zip(variances, reference, strict=True))
        if dominated and candidate.criterion < chosen.criterion:
            chosen = candidate
    return chosen


def _can_dominate(n: int, width: float, budget: pp.Budget, spelling: str, reference: list[float]) -> bool:
    """Whether some share gives both releases of ``spelling`` a noise variance no larger than ``reference``."""
    for share in np.linspace(0.05, 0.95, 91):
        kinds, parameters = _parameters(spelling, budget, float(share))
        releases = _releases(n, width, kinds, parameters)
        if all(r.nominal_law().variance <= v for r, v in zip(releases, reference, strict=True)):
            return True
    return False


def _best_split(
    n: int, low: float, high: float, width: float, budget: pp.Budget, confidence: float, spelling: str
) -> VariancePlan:
    """The plan of one spelling at the best share, for these bounds.

    The search runs once per (n, budget, confidence, spelling) on the unit width (:func:`_search_split`):
    in width units the model does not depend on the bounds (both noise scales scale exactly with W and W^2),
    so the share, k and criterion carry over; only the releases' sensitivities are rebuilt for W. A
    pure-Laplace spelling depends on the budget's epsilon only.
    """
    key: pp.Budget = pp.PureDP(budget.epsilon) if spelling == LAPLACE and not isinstance(budget, pp.GDP) else budget
    unit = _search_split(n, key, confidence, spelling)
    kinds, parameters = _parameters(spelling, budget, unit.share)
    mean, second = _releases(n, width, kinds, parameters)
    return attrs.evolve(unit, lower=low, upper=high, width=width, mean=mean, second_moment=second)


@functools.lru_cache(maxsize=64)
def _search_split(n: int, budget: pp.Budget, confidence: float, spelling: str) -> VariancePlan:
    """The unit-width plan of one spelling at the share that minimises the criterion: the criterion on the
    grid :data:`_SHARES` (and halfway to the best share's neighbours) with a coarse calibration, then the
    precise calibration at the best share. Kept in memory and on disk (:mod:`plan_cache`): a stored search
    gives its share, inflation and criterion, and the releases are rebuilt from ``budget`` and that share."""
    shares = (float(_SHARES[0]), float(_SHARES[-1]))
    stored = plan_cache.load(n, budget, confidence, spelling, shares)
    if stored is not None:  # the releases split from ``budget`` as after a search, whatever the entry says
        return _plan_at(n, 0.0, 1.0, 1.0, budget, confidence, spelling, stored[0], stored=stored[1:])
    found = _searched_split(n, budget, confidence, spelling)
    plan_cache.store(n, budget, confidence, spelling, (found.share, found.inflation, found.criterion))
    return found


def _searched_split(n: int, budget: pp.Budget, confidence: float, spelling: str) -> VariancePlan:
    """:func:`_search_split`'s search itself."""
    scores: dict[float, float] = {}

    def score(share: float) -> float:
        if share not in scores:
            scores[share] = _plan_at(n, 0.0, 1.0, 1.0, budget, confidence, spelling, share, precise=False).criterion
        return scores[share]

    for share in _SHARES:
        score(float(share))
    best = min(scores, key=scores.__getitem__)
    step = 0.5 * float(_SHARES[1] - _SHARES[0])
    for share in (best - step, best + step):
        if float(_SHARES[0]) <= share <= float(_SHARES[-1]):
            score(share)
    best = min(scores, key=scores.__getitem__)
    return _plan_at(n, 0.0, 1.0, 1.0, budget, confidence, spelling, best, precise=True)


def _plan_at(
    n: int,
    low: float,
    high: float,
    width: float,
    budget: pp.Budget,
    confidence: float,
    spelling: str,
    share: float,
    precise: bool = True,
    stored: tuple[float, float] | None = None,
) -> VariancePlan:
    """The plan at one share: k calibrated (``precise`` or coarse) and the criterion computed, or both taken
    from ``stored`` = (k, criterion), a stored search (:mod:`plan_cache`)."""
    kinds, parameters = _parameters(spelling, budget, share)
    mean, second = _releases(n, width, kinds, parameters)
    model = _model(n, confidence, mean, second, width)
    if stored is not None:
        k, criterion = stored
    else:
        k = calibration.calibrate_inflation(model, tolerance=1e-3 if precise else 1e-2, precise=precise)
        sigma2 = _CRITERION_SD**2
        laws = _full_budget_laws(n, budget)
        ratio = calibration.expected_half_width(sigma2, k, model) / calibration.oracle_half_width(
            sigma2, n, laws, confidence
        )
        criterion = float(np.max(ratio))
    return VariancePlan(
        n=n,
        lower=low,
        upper=high,
        width=width,
        confidence=confidence,
        spelling=spelling,
        share=share,
        mean=mean,
        second_moment=second,
        inflation=k,
        t_factor=model.t_factor,
        criterion=criterion,
    )


def _full_budget_laws(n: int, budget: pp.Budget) -> list[NoiseLaw]:
    """The mean's noise with the whole budget (width units), per admissible mechanism: the criterion's reference."""
    laws = []
    if not isinstance(budget, pp.GDP):
        laws.append(NoiseLaw(LAPLACE, 1.0 / (n * budget.epsilon)))
    if isinstance(budget, pp.GDP):
        laws.append(NoiseLaw(GAUSSIAN, 1.0 / (n * budget.mu)))
    elif isinstance(budget, pp.ApproxDP) and budget.delta > 0:
        laws.append(NoiseLaw(GAUSSIAN, 1.0 / (n * gdp_mu_for(budget.epsilon, budget.delta))))
    return laws


def statistics(x: npt.ArrayLike, plan: VariancePlan) -> tuple[float, float]:
    """The two statistics to release, in the plan's order: ``mean(y)`` and ``mean((y - W/2)^2)``.

    ``y = fl(clip(x, a, b) - a)`` lies in ``[0, W]`` with ``W = fl(b - a)`` (rounding is monotone), and
    ``d = fl(y - W/2)`` in ``[-W/2, W/2]`` exactly (W/2 is exact), so each term of the first mean lies in
    ``[0, W]`` and each ``fl(d^2)`` in ``[0, fl(W^2 / 4)]``; the sums are ``math.fsum`` (correctly rounded),
    whence the sensitivities of :func:`plan` (:func:`rounding_margin`). NaN records count as the lower bound
    (the front door refuses them; this keeps the function total). Finite for every input; never raises on data.

    Parameters
    ----------
    x : array_like
        The n records (any shape with n elements).
    plan : VariancePlan
        Supplies n and the bounds.

    Returns
    -------
    (float, float)
        ``mean(y)`` and ``mean((y - W/2)^2)``, in the data's units (shifted by the lower bound).

    Raises
    ------
    ConfigError
        If x does not hold exactly ``plan.n`` records (a public property of the data).
    """
    values = np.asarray(x, dtype=np.float64).reshape(-1)
    if values.size != plan.n:
        raise ConfigError(f"the plan is for n = {plan.n} records", path="x")
    values = np.where(np.isnan(values), plan.lower, values)
    y = np.clip(np.clip(values, plan.lower, plan.upper) - plan.lower, 0.0, plan.width)
    d = y - 0.5 * plan.width
    first = math.fsum(y) / plan.n
    second = math.fsum(d * d) / plan.n
    return first, second


def noise_laws(plan: VariancePlan, exact: bool = True) -> tuple[NoiseLaw, NoiseLaw]:
    """The noise laws :func:`interval` is given.

    Parameters
    ----------
    plan : VariancePlan
    exact : bool, default True
        True: the laws of the lattice releases (``LatticePlan.scale``, a hair above the nominal scale); False:
        the nominal continuous laws at ``sensitivity / parameter``.

    Returns
    -------
    (NoiseLaw, NoiseLaw)
        The mean's and the second moment's.
    """
    if exact:
        return plan.mean.lattice_law(), plan.second_moment.lattice_law()
    return plan.mean.nominal_law(), plan.second_moment.nominal_law()


class _Test:
    """The acceptance function of the interval, vectorised over independent releases (width units)."""

    def __init__(self, m: Array, s1: Array, shift: Array, law: NoiseLaw, n: int, tail: float, factor: float) -> None:
        self.m, self.s1, self.shift, self.law, self.n, self.tail, self.factor = m, s1, shift, law, n, tail, factor
        self._previous: Array | None = None

    def variance(self, mu: Array) -> Array:
        """``max(S2 + k b_2 - (mu - 1/2) S1, 0)``."""
        return np.asarray(np.maximum(self.shift - (mu - 0.5) * self.s1, 0.0), dtype=np.float64)

    def half_width(self, mu: Array) -> Array:
        """``H(v(mu))``, each search's Newton started at its previous quantile (the searches move in small steps)."""
        s = self.factor * np.sqrt(self.variance(mu) / self.n)
        previous = self._previous
        guess = previous if previous is not None and previous.shape == s.shape else None
        value = sum_upper_quantile(self.tail, s, self.law, guess)
        self._previous = value
        return value

    def slack(self, mu: Array) -> Array:
        """``H(v(mu)) - |m - mu|``: mu is accepted iff it is >= 0."""
        return np.asarray(self.half_width(mu) - np.abs(self.m - mu), dtype=np.float64)


def _last_accepted(test: _Test, start: Array, stop: Array) -> Array:
    """On the segment from ``start`` (accepted) to ``stop``, the accepted point farthest from start, where the
    slack is positive at start and changes sign at most once (it is then found by bisection)."""
    accepted_stop = test.slack(stop) >= 0
    a, b = start.copy(), stop.copy()
    for _ in range(_INVERSION_STEPS):
        c = 0.5 * (a + b)
        ok = test.slack(c) >= 0
        a = np.where(ok, c, a)
        b = np.where(ok, b, c)
    return np.asarray(np.where(accepted_stop, stop, a), dtype=np.float64)


def _island_end(test: _Test, start: Array, stop: Array) -> tuple[npt.NDArray[np.bool_], Array]:
    """On a segment where the slack is concave: whether some point is accepted, and the accepted point
    farthest from ``start`` (a ternary search for the slack's maximum, then bisection beyond it)."""
    a, b = start.copy(), stop.copy()
    for _ in range(_INVERSION_STEPS):
        left, right = a + (b - a) / 3.0, b - (b - a) / 3.0
        rising = test.slack(left) < test.slack(right)
        a = np.where(rising, left, a)
        b = np.where(rising, b, right)
    peak = 0.5 * (a + b)
    found = test.slack(peak) >= 0
    end = _last_accepted(test, np.where(found, peak, start), stop)
    return found, end


def _side(test: _Test, direction: Array) -> Array:
    """The outermost accepted mean on one side of m, per release (``direction`` +1: up to 1; -1: down to 0).

    Along the side, v(mu) is linear; where it is positive H(v(mu)) is concave in mu and where it is clipped
    at 0, H is constant. If v decreases away from m the slack decreases throughout (one crossing). If v
    increases away from m, the slack is linear until v reaches 0 (at mu_0) and concave after it: an accepted
    island beyond mu_0 is looked for when the linear part has already crossed.
    """
    m = test.m
    stop = np.where(direction > 0, 1.0, 0.0)
    first = _last_accepted(test, m, stop)
    rising: npt.NDArray[np.bool_] = direction * -test.s1 > 0  # v grows away from m
    with np.errstate(divide="ignore", invalid="ignore"):
        kink = 0.5 + test.shift / test.s1  # where v = 0
    beyond = rising & np.isfinite(kink) & ((kink - m) * direction > 0) & ((stop - kink) * direction > 0)
    if not np.any(beyond):
        return first
    start = np.where(beyond, kink, m)
    found, end = _island_end(test, start, stop)
    use = beyond & found & ((end - first) * direction > 0)
    return np.asarray(np.where(use, end, first), dtype=np.float64)


def interval(
    released: Sequence[npt.ArrayLike], laws: Sequence[NoiseLaw], plan: VariancePlan
) -> tuple[Array, Array, Array]:
    """The confidence interval from the two released values (post-processing; vectorised).

    Parameters
    ----------
    released : (r_1, r_2)
        The released mean and second moment (scalars, or arrays of independent releases of equal shape).
    laws : (NoiseLaw, NoiseLaw)
        Their noise laws: :func:`noise_laws` (the lattice releases' scales) or, in simulations, the laws the
        noise was drawn from. Each scale is raised by :data:`GRID_MARGIN`.
    plan : VariancePlan

    Returns
    -------
    low, high, centre : ndarray
        The interval ``[low, high]`` (inside the bounds, never of zero width) and the clamped released mean.
    """
    r1, r2 = np.broadcast_arrays(np.asarray(released[0], dtype=np.float64), np.asarray(released[1], dtype=np.float64))
    shape = r1.shape
    w = plan.width
    with np.errstate(all="ignore"):
        m = np.clip(np.nan_to_num(r1 / w, nan=0.5), 0.0, 1.0).reshape(-1)
        s2 = np.clip(np.nan_to_num(r2 / (w * w), nan=0.0), 0.0, 1e300).reshape(-1)
    mean_law = laws[0].scaled((1.0 + GRID_MARGIN) / w)
    spread_scale = laws[1].scale * (1.0 + GRID_MARGIN) / (w * w)
    shift = s2 + plan.inflation * spread_scale
    # Both sides in one vectorised search: the releases twice, upwards then downwards.
    size = m.size
    both = _Test(
        np.tile(m, 2), np.tile(m - 0.5, 2), np.tile(shift, 2), mean_law, plan.n, 0.5 * (1.0 - plan.confidence),
        plan.t_factor,
    )  # fmt: skip
    ends = _side(both, np.repeat([1.0, -1.0], size))
    high, low = ends[:size], ends[size:]
    test = _Test(m, m - 0.5, shift, mean_law, plan.n, 0.5 * (1.0 - plan.confidence), plan.t_factor)
    floor = float(sum_upper_quantile(test.tail, 0.0, mean_law))  # H(0) > 0: the narrowest accepted set
    high = np.maximum(high, np.minimum(m + floor, 1.0))
    low = np.minimum(low, np.maximum(m - floor, 0.0))
    out_low = np.clip(plan.lower + low * w, plan.lower, plan.upper)
    out_high = np.clip(plan.lower + high * w, plan.lower, plan.upper)
    # Never of zero width, even where the bounds' magnitude swallows a narrow interval's digits.
    flat = out_high <= out_low
    out_high = np.where(flat, np.minimum(np.nextafter(out_low, np.inf), plan.upper), out_high)
    out_low = np.where(flat & (out_high <= out_low), np.nextafter(out_high, -np.inf), out_low)
    centre = np.clip(plan.lower + m * w, plan.lower, plan.upper)
    return out_low.reshape(shape), out_high.reshape(shape), centre.reshape(shape)
