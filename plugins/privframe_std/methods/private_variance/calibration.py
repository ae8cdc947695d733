"""The calibration of the interval: public arithmetic on (n, the noise laws, the confidence); no data.

Units: the data are shifted and scaled to ``[0, 1]`` (the public width W is the unit; the public centre
``c0 = 1/2``), so a variance is at most 1/4. ``core`` releases

    S1 = mean(y) - 1/2 + eta_1,          S2 = mean((y - 1/2)^2) + eta_2,

and accepts a candidate mean mu (``delta = mu - 1/2``) when ``|m - mu| <= H(max(v(mu) + k b_2, 0))``, with m
the clamped ``S1 + 1/2``, ``b_2`` the scale of eta_2, ``H(v)`` the upper ``alpha/2`` quantile of
``c_t sqrt(v / n) Z + eta_1`` and

    v(mu) = S2 - delta S1.

**The law of v at the true mean.** Write ``D = mean(y) - mu`` (the sampling error) and
``M = mean((y - mu)^2)``. Then ``mean((y - 1/2)^2) = M + 2 delta D + delta^2`` and ``S1 = delta + D + eta_1``,
so exactly

    v(mu) = M + delta D - delta eta_1 + eta_2,        T := m - mu = D + eta_1 (before clamping).

M has mean sigma^2 and covariance ``mu_3 / n`` with D (mu_3 the third central moment); as a linear regression
``M = sigma^2 + (mu_3 / sigma^2) D + (a residual left to the t factor c_t)``. So ``v = sigma^2 + L + eta_2``
with the coupling ``L = c D - delta eta_1`` and ``c = mu_3 / sigma^2 + delta``. On ``[0, 1]`` every law with
mean mu has ``-mu sigma^2 <= mu_3 <= (1 - mu) sigma^2`` (``y - mu`` lies in ``[-mu, 1 - mu]``), hence
``|c| <= 1/2`` for every law, and ``|delta| <= sqrt(1/4 - sigma^2)`` (Bhatia-Davis). The weight 1/2 on S1 in
v(mu) is the one that makes the worst |c| smallest (weight 1 leaves ``mu_3 / sigma^2`` in ``[-mu, 1 - mu]``,
weight 0 leaves ``2 delta + mu_3 / sigma^2``).

**The coverage model.** L is split into its regression on T and an uncorrelated rest,
``L = rho T + U`` with ``rho = (c a - delta b) / (a + b)``, ``a = sigma^2 / n``, ``b = Var eta_1``, and U is
taken as an independent ``N(0, tau^2)``, ``tau^2 = c^2 a + delta^2 b - rho^2 (a + b)`` (exact for Gaussian
noise and a normal D; for Laplace noise U is uncorrelated with T, not independent). With
``T ~ N(0, a) + eta_1`` (the central limit theorem: the one asymptotic step) the coverage is the 1-D integral

    P(|T| <= H(0)) + int_{|t| > H(0)} f_T(t) P(U + eta_2 >= H^-1(|t|) - sigma^2 - rho t - k b_2) dt,

computed by Gauss-Legendre quadrature in ``u = sqrt(H^-1(|t|))`` on panels that resolve both the law of T
and the noise scale of eta_2. ``k`` is the smallest inflation whose coverage is at least ``1 - alpha`` at
every sigma^2 in (0, 1/4] and every coupling (c, delta) at the corners and edge midpoints of
``[-1/2, 1/2] x [-delta_max, delta_max]``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from scipy import interpolate

from privframe._typing import LazyModule
from privframe_std.methods.private_variance.laws import (
    LAPLACE,
    NoiseLaw,
    sum_pdf,
    sum_sf,
    sum_survival,
    sum_upper_quantile,
)

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "CoverageModel",
    "HalfWidth",
    "calibrate_inflation",
    "coupling_range",
    "coverage",
    "expected_half_width",
    "rare_atom",
    "half_width",
    "oracle_half_width",
    "t_factor",
    "worst_coverage",
]

Array = npt.NDArray[np.float64]

MAX_VARIANCE = 0.25
"""The largest variance of a law on [0, 1] (the Bhatia-Davis bound at mu = 1/2)."""

_TABLE_POINTS = 513
"""Nodes of the half-width table (Laplace noise): a cubic spline of log H in asinh(s / b) (tests compare it
with the direct quantile to 1e-8 relative)."""

_SIGMA2_GRID = np.geomspace(1e-10, MAX_VARIANCE, 36)
"""Where the coverage is checked (then refined around the worst point)."""

_DELTA_FRACTIONS = np.array([0.0, 0.5, 0.75, 0.9, 0.97, 1.0])
"""Where the mean is put (delta as a fraction of its largest value ``sqrt(1/4 - sigma^2)``); at each, both
extreme couplings c are checked. Negative delta needs no check: reflecting the law about 1/2 maps
(c, delta) to (-c, -delta), whose coverage is the same, and maps the range of c at delta onto minus the
range at -delta. The worst case found is nearly always delta = delta_max, the two-point law on the end
points (where c = -delta)."""

NORMAL_COUNT = 10.0
"""A two-point law is checked at its extreme coupling only if its rarer atom is expected at least this often
in n records (tests measure the rarer ones: rare proportions with n p of 2 and less)."""

_COARSE_GRID = np.geomspace(1e-8, MAX_VARIANCE, 20)
_COARSE_FRACTIONS = np.array([0.5, 0.9, 1.0])
"""The variances and means the split search checks (the final calibration checks the full sets)."""

CALIBRATION_SLACK = 2e-3
"""The model coverage the calibration accepts below the confidence. Where sigma is large the coupling costs
a second-order 1e-3 to 1.5e-3 (a skewed two-point law near a bound: the Wald interval's own second-order
error) that no additive inflation of v repairs cheaply (k b_2 is then tiny against sigma^2)."""

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(5)
_BULK_PANELS = 6
_EDGE_PANELS = 10
_WINDOW = 12.0
_FIXED_POINT_STEPS = 12
_TAIL = 1e-13
"""The tail of T left out of the integral (counted as not covered: 2e-13 of mass at most)."""

_WIDTH_NODES = 256


def t_factor(n: int, confidence: float) -> float:
    """``c_t = t_{n-1, (1+confidence)/2} / z_{(1+confidence)/2}``: the Student factor on the sampling part."""
    upper = 0.5 * (1.0 + confidence)
    return float(special.stdtrit(n - 1, upper) / special.ndtri(upper))


@attrs.frozen
class CoverageModel:
    """The public inputs of the coverage model, in units of the data's width.

    Attributes
    ----------
    n : int
        Number of records (public).
    mean_law : NoiseLaw
        The released mean's noise (width units).
    spread_law : NoiseLaw
        The released second moment's noise (width^2 units).
    confidence : float
        ``1 - alpha``.
    t_factor : float
        ``c_t``, multiplying the sampling standard deviation inside ``H``.
    kappa : float
        The weight of ``|m - mu|`` added to v(mu) (it dominates the coupling when ``kappa >= 1/2``).
    """

    n: int
    mean_law: NoiseLaw
    spread_law: NoiseLaw
    confidence: float
    t_factor: float
    kappa: float = 0.0


class HalfWidth:
    """``H(v)``: the upper ``alpha/2`` quantile of ``c_t sqrt(v / n) Z + noise``, its inverse and derivative.

    The natural variable is ``w = asinh(s / scale)`` with ``s = c_t sqrt(v / n)``. Gaussian noise has the
    closed form ``H = z scale cosh(w)``; Laplace noise is tabulated on a grid of w up to ``v_top`` and read
    from a cubic spline of ``log H`` (for the calibration only: ``core.interval`` solves the quantile
    directly).
    """

    def __init__(self, n: int, law: NoiseLaw, confidence: float, factor: float, v_top: float) -> None:
        self.n = n
        self.law = law
        self.tail = 0.5 * (1.0 - confidence)
        self.factor = factor
        self.v_top = v_top
        self.z = float(-special.ndtri(self.tail))
        self.w_top = math.asinh(self._s(v_top) / law.scale)
        self._spline: interpolate.CubicSpline | None = None
        self._inverse: interpolate.PchipInterpolator | None = None
        if law.kind == LAPLACE:
            from scipy import interpolate  # on first use, and only here: Gaussian noise has a closed form

            w = np.linspace(0.0, self.w_top, _TABLE_POINTS)
            log_h = np.log(sum_upper_quantile(self.tail, law.scale * np.sinh(w), law))
            self._spline = interpolate.CubicSpline(w, log_h)
            self._inverse = interpolate.PchipInterpolator(log_h, w)
        self.at_zero = float(self.of_w(np.zeros(1))[0])
        self.at_top = float(self.of_w(np.full(1, self.w_top))[0])

    def _s(self, v: float) -> float:
        return self.factor * math.sqrt(max(v, 0.0) / self.n)

    def w_of_variance(self, v: npt.ArrayLike) -> Array:
        """``w = asinh(c_t sqrt(v / n) / scale)``."""
        vs = np.clip(np.asarray(v, dtype=np.float64), 0.0, self.v_top)
        return np.asarray(np.arcsinh(self.factor * np.sqrt(vs / self.n) / self.law.scale), dtype=np.float64)

    def variance_of_w(self, w: npt.ArrayLike) -> Array:
        """The inverse of :meth:`w_of_variance`."""
        s = self.law.scale * np.sinh(np.asarray(w, dtype=np.float64))
        return np.asarray(self.n * (s / self.factor) ** 2, dtype=np.float64)

    def of_w(self, w: Array) -> Array:
        """H as a function of w."""
        if self._spline is None:
            return np.asarray(self.z * self.law.scale * np.cosh(w), dtype=np.float64)
        return np.asarray(np.exp(self._spline(w)), dtype=np.float64)

    def with_derivative(self, w: Array) -> tuple[Array, Array]:
        """``(H, dH/dw)`` at w, sharing H (the derivative of ``exp(log H)`` is ``H (log H)'``)."""
        if self._spline is None:
            return self.of_w(w), np.asarray(self.z * self.law.scale * np.sinh(w), dtype=np.float64)
        value = self.of_w(w)
        return value, np.asarray(value * self._spline(w, 1), dtype=np.float64)

    def __call__(self, v: npt.ArrayLike) -> Array:
        """H at each variance ``v`` (clipped to ``[0, v_top]``)."""
        return self.of_w(self.w_of_variance(v))

    def inverse(self, h: npt.ArrayLike) -> Array:
        """The variance v with ``H(v) = h`` (0 below ``H(0)``, ``v_top`` above ``H(v_top)``)."""
        hs = np.clip(np.asarray(h, dtype=np.float64), self.at_zero, self.at_top)
        if self._inverse is None:
            w = np.arccosh(np.maximum(hs / (self.z * self.law.scale), 1.0))
        else:
            w = np.clip(self._inverse(np.log(hs)), 0.0, self.w_top)
        return self.variance_of_w(w)


def _reach(s: npt.ArrayLike, law: NoiseLaw) -> Array:
    """A point beyond which ``s Z + noise`` has less than ``_TAIL`` of mass (the union of both parts' tails)."""
    z = float(-special.ndtri(0.5 * _TAIL))
    return np.asarray(np.asarray(s, dtype=np.float64) * z + law.upper_quantile(0.5 * _TAIL), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def half_width(model: CoverageModel) -> HalfWidth:
    """The (cached) half-width function of a model, tabulated up to the largest variance the coverage
    integral reaches (where H meets the tail point of T at sigma^2 = 1/4), and at least 1 + 200 b_2."""
    reach = float(_reach(math.sqrt(MAX_VARIANCE / model.n), model.mean_law))
    z = float(-special.ndtri(0.5 * (1.0 - model.confidence)))
    needed = model.n * (reach / (model.t_factor * z)) ** 2
    v_top = max(4.0 * MAX_VARIANCE + 200.0 * model.spread_law.scale, 2.0 * needed)
    return HalfWidth(model.n, model.mean_law, model.confidence, model.t_factor, v_top)


def _coupling(sigma2: Array, c: Array, delta: Array, n: int, b: float) -> tuple[Array, Array]:
    """(rho, tau) of ``L = c D - delta eta_1`` against ``T = D + eta_1``: ``L = rho T + U``, U uncorrelated."""
    a = sigma2 / n
    rho = (c * a - delta * b) / (a + b)
    tau2 = np.maximum(c * c * a + delta * delta * b - rho * rho * (a + b), 0.0)
    return rho, np.sqrt(tau2)


def _ranges(starts: Array, stops: Array, panels: int) -> tuple[Array, Array]:
    """Gauss-Legendre nodes and weights on ``panels`` equal panels of each ``[start, stop]`` (rows)."""
    fractions = np.linspace(0.0, 1.0, panels + 1)
    edges = starts[:, None] + (stops - starts)[:, None] * fractions[None, :]
    half = 0.5 * np.diff(edges, axis=1)
    mid = 0.5 * (edges[:, 1:] + edges[:, :-1])
    nodes = (mid[:, :, None] + half[:, :, None] * _NODES[None, None, :]).reshape(starts.size, -1)
    weights = (half[:, :, None] * _WEIGHTS[None, None, :]).reshape(starts.size, -1)
    return nodes, weights


def coverage(
    sigma2: npt.ArrayLike, c: npt.ArrayLike, delta: npt.ArrayLike, inflation: float, model: CoverageModel
) -> Array:
    """The model's coverage at each (variance, coupling c, delta) (broadcast; see the module docstring).

    Each side ``T = +-t`` is integrated over ``u = sqrt(H^-1(t))`` on three ranges, each cut into equal
    Gauss-Legendre panels: below, across and above the window ``v* +- 12 (b_2 + tau)`` in which the survival of
    ``U + eta_2`` falls from 1 to 0, where ``v* = sigma^2 + k b_2 + (+-rho + kappa) H(v*)`` (a fixed point).
    """
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (sigma2, c, delta)))
    s2, cs, ds = (np.ravel(x) for x in arrays)
    h = half_width(model)
    mean_law, spread_law = model.mean_law, model.spread_law
    rho, tau = _coupling(s2, cs, ds, model.n, mean_law.variance)
    s = np.sqrt(s2 / model.n)
    shift = s2 + inflation * spread_law.scale
    inside = 1.0 - 2.0 * sum_sf(h.at_zero, s, mean_law)
    u_top = np.sqrt(h.inverse(np.maximum(_reach(s, mean_law), h.at_zero)))
    width = _WINDOW * (spread_law.scale + tau)
    ratio = model.t_factor / (math.sqrt(model.n) * mean_law.scale)  # dw/du = ratio / sqrt(1 + (ratio u)^2)
    total = inside
    for sign in (1.0, -1.0):
        slope = sign * rho + model.kappa
        centre = np.maximum(shift, 0.0)
        for _ in range(_FIXED_POINT_STEPS):
            centre = np.clip(shift + slope * h(centre), 0.0, h.v_top)
        u_low = np.minimum(np.sqrt(np.maximum(centre - width, 0.0)), u_top)
        u_high = np.minimum(np.sqrt(centre + width), u_top)
        parts = [_ranges(0.0 * u_low, u_low, _BULK_PANELS), _ranges(u_low, u_high, _EDGE_PANELS)]
        parts.append(_ranges(u_high, u_top, _BULK_PANELS))
        u = np.concatenate([p[0] for p in parts], axis=1)
        weights = np.concatenate([p[1] for p in parts], axis=1)
        v = u * u
        w = h.w_of_variance(v)
        t, dt_dw = h.with_derivative(w)
        dt_du = dt_dw * ratio / np.sqrt(1.0 + (ratio * u) ** 2)
        mass = weights * sum_pdf(t, s[:, None], mean_law) * dt_du
        needed = v - shift[:, None] - slope[:, None] * t
        total = total + np.sum(mass * sum_survival(needed, tau[:, None], spread_law), axis=1)
    return np.asarray(total, dtype=np.float64)


def coupling_range(sigma2: npt.ArrayLike, delta: npt.ArrayLike) -> tuple[Array, Array]:
    """The extreme couplings ``c = mu_3 / sigma^2 + delta`` over the laws on [0, 1] with mean
    ``mu = 1/2 + delta`` and variance sigma^2: ``[sigma^2 / mu - 1/2, 1/2 - sigma^2 / (1 - mu)]``.

    Given two moments on an interval, the third is extreme at the two-point laws with an end point as one
    atom: ``{0, mu + sigma^2 / mu}`` (smallest) and ``{mu - sigma^2 / (1 - mu), 1}`` (largest), whose third
    central moments are ``sigma^2 (x_1 + x_2 - 2 mu)``. The range is ``[-1/2, 1/2]`` for small sigma^2 and
    shrinks to the point ``-delta`` at the Bhatia-Davis bound.
    """
    s2 = np.asarray(sigma2, dtype=np.float64)
    mu = np.clip(0.5 + np.asarray(delta, dtype=np.float64), 1e-300, 1.0)
    low = np.minimum(s2 / mu - 0.5, 0.5)
    high = np.maximum(0.5 - s2 / np.maximum(1.0 - mu, 1e-300), -0.5)
    return np.asarray(np.minimum(low, high), dtype=np.float64), np.asarray(np.maximum(low, high), dtype=np.float64)


def rare_atom(sigma2: npt.ArrayLike, delta: npt.ArrayLike) -> tuple[Array, Array]:
    """The probability of the rarer atom of the two extreme laws of :func:`coupling_range`: ``{0, x_2}`` (the
    smallest c) and ``{x_1, 1}`` (the largest c), with ``P(0) = sigma^2 / (mu^2 + sigma^2)`` and
    ``P(1) = sigma^2 / ((1 - mu)^2 + sigma^2)`` and their complements."""
    s2 = np.asarray(sigma2, dtype=np.float64)
    mu = 0.5 + np.asarray(delta, dtype=np.float64)
    at_zero = s2 / (mu * mu + s2)
    at_one = s2 / ((1.0 - mu) ** 2 + s2)
    return np.minimum(at_zero, 1.0 - at_zero), np.minimum(at_one, 1.0 - at_one)


def _worst_at(
    sigma2: Array,
    inflation: float,
    model: CoverageModel,
    deltas: tuple[float, float],
    fractions: Array = _DELTA_FRACTIONS,
) -> Array:
    """The smallest coverage over the checked laws, per variance; ``+inf`` where no law on [0, 1] has that
    variance and such a mean.

    At each checked mean: the admissible c nearest 0 (the least coupled law) always, and each extreme c whose two-point
    law has at least :data:`NORMAL_COUNT` expected records on its rarer atom (below that the normal model of
    D is not credible: D is bounded by the distance to that atom, which the normal tail ignores)."""
    s2 = np.atleast_1d(np.asarray(sigma2, dtype=np.float64))
    low_delta, high_delta = deltas
    top = np.minimum(np.sqrt(np.maximum(MAX_VARIANCE - s2, 0.0)), high_delta)
    possible = top >= low_delta
    top = np.maximum(top, low_delta)
    delta = low_delta + (top - low_delta)[:, None] * fractions[None, :]
    low, high = coupling_range(s2[:, None], delta)
    rare_low, rare_high = rare_atom(s2[:, None], delta)
    grid = np.broadcast_to(s2[:, None], delta.shape)
    couplings = np.concatenate((low, high, np.clip(0.0, low, high)), axis=1)
    credible = np.concatenate(
        (model.n * rare_low >= NORMAL_COUNT, model.n * rare_high >= NORMAL_COUNT, np.ones_like(low, dtype=bool)), axis=1
    )
    checked = credible.reshape(-1)  # about half the laws at small variances: each law's coverage is its own
    values = np.full(checked.size, np.inf)
    values[checked] = coverage(
        np.concatenate((grid, grid, grid), axis=1).reshape(-1)[checked],
        couplings.reshape(-1)[checked],
        np.concatenate((delta, delta, delta), axis=1).reshape(-1)[checked],
        inflation,
        model,
    )
    worst = values.reshape(s2.size, -1).min(axis=1)
    return np.asarray(np.where(possible, worst, np.inf), dtype=np.float64)


FULL_RANGE = (0.0, 0.5)
"""Every mean: ``|mu - 1/2|`` from 0 to 1/2."""


def worst_coverage(
    inflation: float, model: CoverageModel, deltas: tuple[float, float] = FULL_RANGE, refine: bool = True
) -> tuple[float, float]:
    """The smallest model coverage over sigma^2 in (0, 1/4], the means with ``|mu - 1/2|`` in ``deltas`` and
    the couplings, and the sigma^2 where: a grid, then (``refine``) a bounded search in log sigma^2 between the
    grid neighbours of the worst grid point."""
    return _worst(inflation, model, deltas, refine, _SIGMA2_GRID, _DELTA_FRACTIONS)


def _worst(
    inflation: float,
    model: CoverageModel,
    deltas: tuple[float, float],
    refine: bool,
    grid: Array,
    fractions: Array,
) -> tuple[float, float]:
    from scipy import optimize  # on first use: loading the plugins stays light

    values = _worst_at(grid, inflation, model, deltas, fractions)
    i = int(np.argmin(values))
    if not refine:
        return float(values[i]), float(grid[i])
    lo, hi = math.log(grid[max(i - 1, 0)]), math.log(grid[min(i + 1, grid.size - 1)])
    result = optimize.minimize_scalar(
        lambda x: float(_worst_at(np.array([math.exp(x)]), inflation, model, deltas, fractions)[0]),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 0.05},
    )
    if result.fun < values[i]:
        return float(result.fun), math.exp(float(result.x))
    return float(values[i]), float(grid[i])


def calibrate_inflation(
    model: CoverageModel, deltas: tuple[float, float] = FULL_RANGE, tolerance: float = 1e-3, precise: bool = True
) -> float:
    """The smallest ``k >= 0`` (to ``tolerance``, rounded up) whose worst model coverage over the means with
    ``|mu - 1/2|`` in ``deltas`` is at least the confidence less :data:`CALIBRATION_SLACK`: a root on the
    grid, then (``precise``) checked with the refined search and raised by ``tolerance`` steps until it
    passes. ``precise=False`` (the split search) finds the root on a coarser grid of variances and means
    (:data:`_COARSE_GRID`, :data:`_COARSE_FRACTIONS`) and stops there.

    The raised k is the first step ``k_m = k_0 + m tolerance`` (the same additions one step at a time)
    whose refined check passes with ``k_{m-1}``'s failing: found by secant predictions and bracketing over m
    (:func:`_first_passing`), a handful of refined checks where stepping one by one took up to m + 1."""
    from scipy import optimize  # on first use: loading the plugins stays light

    target = model.confidence - CALIBRATION_SLACK
    grid, fractions = (_SIGMA2_GRID, _DELTA_FRACTIONS) if precise else (_COARSE_GRID, _COARSE_FRACTIONS)
    gaps: dict[tuple[float, bool], float] = {}  # brentq evaluates the bracket's ends again

    def gap(k: float, refine: bool = False) -> float:
        if (k, refine) not in gaps:
            gaps[(k, refine)] = _worst(k, model, deltas, refine, grid, fractions)[0] - target
        return gaps[(k, refine)]

    k = 0.0
    if gap(0.0) < 0.0:
        low, high = 0.0, 1.0
        while gap(high) < 0.0:
            low, high = high, 2.0 * high
            if high > 2.0**10:
                raise ValueError("no inflation reaches the confidence")
        k = float(optimize.brentq(gap, low, high, xtol=tolerance)) + tolerance
    if not precise:
        return k
    steps = [k]

    def stepped(m: int) -> float:
        while len(steps) <= m:
            steps.append(steps[-1] + tolerance)
        return steps[m]

    return stepped(_first_passing(lambda m: gap(stepped(m), refine=True)))


_LARGEST_JUMP = 1024
"""The furthest a first secant prediction reaches beyond the last failing step (a nearly flat gap predicts
far); later jumps may double it."""


def _first_passing(gap: Callable[[int], float]) -> int:
    """The ``m >= 0`` with ``gap(m) >= 0`` and ``gap(m - 1) < 0`` (or m = 0 if ``gap(0) >= 0``), for a gap that
    grows with m, nearly linearly.

    Until a passing m is found: one step, then the secant prediction from the last two failing steps, at
    least twice the previous jump after the first (and twice it where the gap did not grow), so the search
    gallops where the prediction is poor. Then false position inside the bracket, halved instead when the
    same end moved twice running. For an increasing gap this is the first passing m, as one step at a time
    would find; for any gap the m returned passes and the one below fails.
    """
    low, low_gap = 0, gap(0)
    if low_gap >= 0.0:
        return 0
    previous: tuple[int, float] | None = None
    high: int | None = None
    high_gap = 0.0
    side, repeated = "", False
    while high is None or high - low > 1:
        if high is None:
            jump = 1
            if previous is not None:
                last = low - previous[0]
                jump = 2 * last
                if low_gap > previous[1]:
                    secant = min(math.ceil(-low_gap * last / (low_gap - previous[1])), _LARGEST_JUMP)
                    jump = secant if last == 1 else max(secant, jump)
            m = low + jump
        elif repeated:  # false position creeping in from one end
            m = (low + high) // 2
        else:
            fraction = -low_gap / (high_gap - low_gap)
            m = min(max(low + math.ceil(fraction * (high - low)), low + 1), high - 1)
        value = gap(m)
        moved = "high" if value >= 0.0 else "low"
        repeated, side = moved == side and high is not None, moved
        if value >= 0.0:
            high, high_gap = m, value
        else:
            previous = (low, low_gap)
            low, low_gap = m, value
    return low + 1


def expected_half_width(sigma2: npt.ArrayLike, inflation: float, model: CoverageModel) -> Array:
    """``E H(max(sigma^2 + eta_2 + k b_2, 0))`` over eta_2 (midpoint rule on 256 quantiles): the half-width at
    the mean, without coupling."""
    s2 = np.atleast_1d(np.asarray(sigma2, dtype=np.float64))
    h = half_width(model)
    u = (np.arange(_WIDTH_NODES) + 0.5) / _WIDTH_NODES
    eta = model.spread_law.ppf(u)
    base = s2[:, None] + inflation * model.spread_law.scale + eta[None, :]
    width = h(np.maximum(base, 0.0))
    for _ in range(8 if model.kappa else 0):  # the boundary d solves d = H(v + kappa d)
        width = h(np.maximum(base + model.kappa * width, 0.0))
    return np.asarray(np.mean(width, axis=1), dtype=np.float64)


def oracle_half_width(sigma2: npt.ArrayLike, n: int, laws: Sequence[NoiseLaw], confidence: float) -> Array:
    """The half-width at a known variance with the whole budget on the mean: the upper ``alpha/2`` quantile of
    ``sigma Z / sqrt(n) + noise``, the smallest over the candidate laws (the spellings of the budget)."""
    s = np.sqrt(np.atleast_1d(np.asarray(sigma2, dtype=np.float64)) / n)
    tail = 0.5 * (1.0 - confidence)
    return np.asarray(np.min([sum_upper_quantile(tail, s, law) for law in laws], axis=0), dtype=np.float64)
