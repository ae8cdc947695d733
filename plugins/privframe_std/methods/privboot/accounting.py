"""Exact finite-B privacy accounting for PrivBoot (Wang, Cheng and Awan; ``docs/algorithms.md`` 6).

One PrivBoot release applies a mu_0-GDP mechanism (Gaussian noise at ``Delta_n / mu_0``) to an n-out-of-n
bootstrap resample. A record appears ``K ~ Bin(n, 1/n)`` times in the resample; given ``K = k >= 1`` the
release is ``k mu_0``-GDP (group privacy). The tradeoff curve of one release is

    h = C_p( mix_{k >= 1} G_{k mu_0} ),   p = 1 - (1 - 1/n)^n,

with ``mix`` the mixture over ``K | K >= 1`` (the adversary may learn K) and ``C_p(f) = min{f_p, f_p^{-1}}**``,
``f_p = p f + (1 - p) Id``, the symmetrised subsampling operator for the replace-one relation. The B-fold
composition ``h^{(x) B}`` is computed numerically from privacy-loss distributions (PLDs):

1. The privacy profile of h is ``delta_h(eps) = max(delta_A(eps), delta_B(eps))`` (the conjugate of a convex
   hull of a minimum is the maximum of the conjugates), where A is the pair ``(Q, (1-p) Q + p P)`` and B the
   reversed pair, Q = N(0, 1) and P = N(k mu_0, 1) given the label k. Their loss survival functions are
   closed forms in Phi. Where direction d attains the maximum, the loss law of h above eps equals that
   of d (``P_h(L > eps) = delta_h - delta_h'``, ``Q_h(L > eps) = -e^{-eps} delta_h'``).
2. h is symmetric, so its loss law below 0 is the mirror image (``P(L in -dl) = Q(L in dl)``).
3. Each grid cell's P- and Q-mass are known exactly; the cell's P-mass is split between its two end points
   so that both masses are preserved ("connect the dots", Doroshenko et al. 2022). This is pessimistic:
   every delta(eps) of the discretised composition is at least the true one, with an error of second
   order in the grid step.
4. B-fold composition is an FFT convolution power on a window holding all but a Chernoff-bounded tail,
   which is added to delta, as is the mass beyond the per-release grid (treated as infinite loss).

As B grows with ``mu_0 = mu / sqrt((2 - 2/e) B)`` the composed curve approaches G_mu (the asymptotic
statement PrivBoot's default ledger entry relies on); tests check this convergence.

``resample_pld`` (the last section) composes Dette-Graw's releases on m-out-of-n resamples drawn with
replacement, ``K ~ Bin(m, 1/n)`` (``resample_mixture``), exactly for the worst-case pair of a statistic
that moves by Delta_m per copy of the record: ``P = sum_k P(K = k) N(k mu_0, 1)`` against ``Q = N(0, 1)``,
in both orders, with the same discretisation and convolution power as above.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import LazyModule
from privframe.errors import BudgetError, ConfigError
from privframe.privacy import accounting
from privframe_std._binomial import binom_logpmf, binom_pmf

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "PrivBootPLD",
    "ResamplePLD",
    "asymptotic_mu",
    "bootstrap_mixture",
    "calibrate_mu0",
    "compose_mixture_pair",
    "compose_releases",
    "mixture_log_ratio",
    "privboot_pld",
    "release_loss_survival",
    "resample_mixture",
    "resample_pld",
]

FloatArray = npt.NDArray[np.float64]

ASYMPTOTIC_FACTOR = 2.0 - 2.0 / math.e
"""``2 - 2/e``: B releases at mu_0 are asymptotically ``mu_0 sqrt((2 - 2/e) B)``-GDP."""

_TAIL = 1e-17
"""Per-release loss mass left beyond the grid (counted as infinite loss)."""


def asymptotic_mu(mu0: float, B: int) -> float:
    """``mu_0 sqrt((2 - 2/e) B)``: the asymptotic GDP parameter of B PrivBoot releases."""
    return mu0 * math.sqrt(ASYMPTOTIC_FACTOR * B)


Mixture = tuple[FloatArray, FloatArray, float]
"""``(k, w, p)``: multiplicities k >= 1, their weights given K >= 1, and p = P(K >= 1)."""


def bootstrap_mixture(n: int) -> Mixture:
    """Values k >= 1, weights P(K = k | K >= 1) for K ~ Bin(n, 1/n), and p = P(K >= 1)."""
    p = -math.expm1(n * math.log1p(-1.0 / n)) if n > 1 else 1.0
    kmax = min(n, 120)  # P(K > 120) < 1e-190: below anything a delta can resolve
    k = np.arange(1, kmax + 1, dtype=np.float64)
    pmf = binom_pmf(k, n, 1.0 / n) if n > 1 else np.ones(1)
    keep = pmf > 0
    return k[keep], pmf[keep] / p, p


def release_loss_survival(
    eps: FloatArray, mu0: float, mixture: Mixture, direction_at: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """``(P_h(L > eps), Q_h(L > eps))`` of one release, for ``eps >= 0`` (vectorised).

    The survival at eps is that of the direction attaining the larger delta just above eps; pass
    ``direction_at`` (points slightly above eps) to decide it there, since at ``eps = 0`` both deltas are
    the total variation distance.
    """
    eps = np.asarray(eps, dtype=np.float64)
    pa, qa, pb, qb = _directions(eps, mu0, mixture)
    if direction_at is None:
        choose = np.asarray(eps, dtype=np.float64)
        delta_a, delta_b = pa - np.exp(eps) * qa, pb - np.exp(eps) * qb
    else:
        choose = np.asarray(direction_at, dtype=np.float64)
        pa2, qa2, pb2, qb2 = _directions(choose, mu0, mixture)
        delta_a, delta_b = pa2 - np.exp(choose) * qa2, pb2 - np.exp(choose) * qb2
    use_a = delta_a >= delta_b
    return np.where(use_a, pa, pb), np.where(use_a, qa, qb)


def _directions(eps: FloatArray, mu0: float, mixture: Mixture) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Loss survival functions ``P(L > eps), Q(L > eps)`` of directions A and B."""
    k, w, p = mixture
    a = (k * mu0)[:, np.newaxis]
    e = eps[np.newaxis, :]
    q0 = 1.0 - p
    # Direction A: Q = N(0, 1) vs (1 - p) N(0, 1) + p N(a, 1); loss > eps iff x > xa.
    xa = (np.log((np.exp(e) - q0) / p) + a * a / 2) / a
    surv_q_a = special.ndtr(-xa)
    surv_p_a = q0 * surv_q_a + p * special.ndtr(a - xa)
    # Direction B: the reversed pair; loss > eps iff x < xb (impossible when e^{-eps} <= 1 - p).
    gap = np.exp(-e) - q0
    possible = gap > 0
    xb = np.where(possible, (np.log(np.where(possible, gap, 1.0) / p) + a * a / 2) / a, -np.inf)
    surv_p_b = special.ndtr(xb)
    surv_q_b = q0 * surv_p_b + p * special.ndtr(xb - a)
    return w @ surv_p_a, w @ surv_q_a, w @ surv_p_b, w @ surv_q_b


def _split(mass_p: FloatArray, mass_q: FloatArray, low: FloatArray, high: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Connect the dots: P-mass at (low, high) preserving the cell's P-mass and Q-mass (= E_P[e^{-L}])."""
    e_low, e_high = np.exp(-low), np.exp(-high)
    at_high = np.clip((mass_p * e_low - mass_q) / (e_low - e_high), 0.0, mass_p)
    return mass_p - at_high, at_high


def _release_pmf(mu0: float, mixture: Mixture, step: float) -> tuple[FloatArray, float]:
    """Per-release P-law of the loss on the grid ``(j - M) step``, j = 0..2M, and the mass at +infinity."""
    top = step
    while release_loss_survival(np.array([top]), mu0, mixture)[0][0] > _TAIL:
        top *= 2.0
    count = math.ceil(top / step)
    grid = np.arange(count + 1, dtype=np.float64) * step
    surv_p, surv_q = release_loss_survival(grid, mu0, mixture, direction_at=grid + step / 2)
    surv_p = np.minimum.accumulate(surv_p)
    surv_q = np.minimum.accumulate(surv_q)
    cell_p = surv_p[:-1] - surv_p[1:]
    cell_q = surv_q[:-1] - surv_q[1:]
    low, high = grid[:-1], grid[1:]
    pos_low, pos_high = _split(cell_p, cell_q, low, high)
    # Mirror cells (-high, -low]: P-mass = cell_q, Q-mass = cell_p; losses -high < -low.
    neg_low, neg_high = _split(cell_q, cell_p, -high, -low)  # neg_low at -high, neg_high at -low
    pmf = np.zeros(2 * count + 1)
    centre = count
    pmf[centre : centre + count] += pos_low
    pmf[centre + 1 : centre + count + 1] += pos_high
    pmf[centre - count : centre][::-1] += neg_low
    pmf[centre - count + 1 : centre + 1][::-1] += neg_high
    pmf[0] += surv_q[-1]  # Q-tail mirrored: loss below -top, rounded up to -top
    infinite = float(surv_p[-1])
    zero_atom = 1.0 - pmf.sum() - infinite
    if zero_atom < -1e-12:
        raise BudgetError("the privacy-loss discretisation failed (negative mass); use a finer step", path="mu0")
    pmf[centre] += max(zero_atom, 0.0)
    return pmf, infinite


@attrs.frozen
class PrivBootPLD:
    """The composed privacy-loss distribution of B PrivBoot releases (pessimistic discretisation).

    ``pmf[i]`` is the probability of total loss ``losses[i]``; ``infinite`` bounds the mass of larger
    losses (per-release grid tail plus the Chernoff bound on the window's upper tail).
    """

    losses: FloatArray
    pmf: FloatArray
    infinite: float
    mu0: float
    n: int
    B: int

    def delta(self, epsilon: float) -> float:
        """The smallest delta with (epsilon, delta)-DP for the B-fold composition (an upper bound)."""
        if not (math.isfinite(epsilon) and epsilon >= 0):
            raise ConfigError("must be a finite number >= 0", path="epsilon")
        above = self.losses > epsilon
        value = float(np.sum(self.pmf[above] * -np.expm1(epsilon - self.losses[above])))
        return min(1.0, value + self.infinite)

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon with ``delta(epsilon) <= delta``."""
        from scipy import optimize  # on first use: loading the plugins stays light

        if not (0 < delta < 1):
            raise ConfigError("must be a number in (0, 1)", path="delta")
        if self.infinite >= delta:
            raise BudgetError("smaller than the accountant's tail bound; use a larger delta", path="delta")
        if self.delta(0.0) <= delta:
            return 0.0
        high = float(self.losses[-1])
        if self.delta(high) > delta:
            raise BudgetError("too small for the composed loss window", path="delta")
        root = float(optimize.brentq(lambda e: self.delta(e) - delta, 0.0, high, xtol=1e-10, rtol=1e-12))
        while self.delta(root) > delta:
            root = math.nextafter(root, math.inf) + 1e-12
        return root

    def mu_effective(self, delta: float) -> float:
        """The mu whose tight GDP curve passes through ``(epsilon(delta), delta)``."""
        eps = self.epsilon(delta)
        if eps <= 0:
            return 0.0
        return accounting.gdp_mu_for(eps, delta)


@functools.lru_cache(maxsize=64)
def privboot_pld(mu0: float, n: int, B: int, step: float | None = None) -> PrivBootPLD:
    """The composed PLD of B releases at per-release GDP parameter ``mu0`` on data of size n.

    ``step`` is the loss grid step (default ``min(1e-3, mu0 / 50)``; against the Gaussian closed form this
    gives deltas at most 4e-4 above the truth, relative).
    """
    if not (math.isfinite(mu0) and mu0 > 0):
        raise ConfigError("must be a finite number > 0", path="mu0")
    if n < 1 or B < 1:
        raise ConfigError("need n >= 1 and B >= 1", path="B")
    return compose_releases(mu0, bootstrap_mixture(n), B, n=n, step=step)


def compose_releases(mu0: float, mixture: Mixture, B: int, *, n: int = 0, step: float | None = None) -> PrivBootPLD:
    """The B-fold composition of ``C_p(mix_k G_{k mu0})`` for an explicit mixture ``(k, w, p)``."""
    step = min(1e-3, mu0 / 50.0) if step is None else float(step)
    pmf, infinite = _release_pmf(mu0, mixture, step)
    half = (pmf.size - 1) // 2
    offsets = np.arange(-half, half + 1, dtype=np.float64)
    mean = float(pmf @ offsets)
    sd = math.sqrt(max(float(pmf @ offsets**2) - mean**2, 1e-30))
    centre = B * mean
    spread = 30.0 * math.sqrt(B) * sd + 64
    lo_index = math.floor(centre - spread)
    width = math.ceil(2 * spread) + 1
    size = 1 << max(10, math.ceil(math.log2(width + pmf.size)))
    # Cyclic convolution power: index j of one release is loss offset j - half; the B-fold sum of offsets
    # lies (but for a bounded tail) in [lo_index, lo_index + size).
    buffer = np.zeros(size)
    buffer[: pmf.size] = pmf
    spectrum = np.fft.rfft(buffer)
    composed = np.fft.irfft(spectrum**B, n=size)
    composed = np.maximum(composed, 0.0)
    shift = B * half  # sum of indices = sum of offsets + B * half
    index = lo_index + np.mod(np.arange(size) - (lo_index + shift), size)
    order = np.argsort(index)
    losses = index[order].astype(np.float64) * step
    total = composed[order]
    upper = (lo_index + size) * step
    tail = _chernoff_upper(pmf, offsets * step, B, upper)
    infinite_total = min(1.0, -math.expm1(B * math.log1p(-infinite)) + tail) if infinite < 1 else 1.0
    return PrivBootPLD(losses=losses, pmf=total, infinite=infinite_total, mu0=mu0, n=n, B=B)


def _chernoff_upper(pmf: FloatArray, losses: FloatArray, B: int, threshold: float) -> float:
    """``min_t exp(-t threshold + B log E[e^{t L}])``: a bound on P(sum of B losses >= threshold)."""
    best = 1.0
    for t in (0.25, 0.5, 1.0, 2.0, 4.0):
        log_mgf = float(special.logsumexp(t * losses, b=pmf))
        best = min(best, math.exp(min(0.0, -t * threshold + B * log_mgf)))
    return best


def calibrate_mu0(epsilon: float, delta: float, *, n: int, B: int) -> float:
    """The largest per-release mu_0 whose exact B-fold composition is (epsilon, delta)-DP (bisection)."""
    from scipy import optimize  # on first use: loading the plugins stays light

    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError("must be a finite number > 0", path="epsilon")
    target = accounting.gdp_mu_for(epsilon, delta)
    guess = target / math.sqrt(ASYMPTOTIC_FACTOR * B)

    def excess(log_mu0: float) -> float:
        return math.log(privboot_pld(math.exp(log_mu0), n, B).delta(epsilon) / delta)

    low, high = math.log(guess) - 0.1, math.log(guess) + 0.1
    while excess(low) > 0:
        low -= 0.5
    while excess(high) <= 0:
        high += 0.5
    root = float(optimize.brentq(excess, low, high, xtol=1e-5))
    while excess(root) > 0:
        root -= 1e-5
    return math.exp(root)


# ---------------------------------------------------------------------------------------------------------
# Releases on m-out-of-n resamples drawn with replacement (Dette-Graw, ``docs/algorithms.md`` 7)
#
# A record appears K ~ Bin(m, 1/n) times in the resample. For a statistic that moves by Delta_m per copy of
# the record (the mean with the record at a bound and its replacement equal to the other records) the
# release on D is ``P = sum_k P(K = k) N(k mu0, 1)`` and on its neighbour ``Q = N(0, 1)`` (in units of the
# noise). Both orders are neighbouring pairs, so the B-fold composition is ``P^B`` against ``Q^B`` and
# ``Q^B`` against ``P^B``, each computed on its own (not the symmetrised ``C_p`` of the PrivBoot bound, which
# also lets the adversary learn K and is looser).

_NEGLIGIBLE = 1e-21
"""The composition counts a multiplicity rarer than this (per release) as infinite loss."""


def resample_mixture(n: int, m: int) -> Mixture:
    """Values k >= 1, weights P(K = k | K >= 1) for K ~ Bin(m, 1/n), and p = P(K >= 1) (m-out-of-n WR).

    k runs up to the first k_max with ``P(K > k_max) < 1e-300``; the weight left out is ``1 - sum(w)``.
    ``resample_mixture(n, n)`` is the n-out-of-n bootstrap's law (``bootstrap_mixture`` stops at k = 120).
    """
    if n < 1 or m < 1:
        raise ConfigError("need n >= 1 and m >= 1", path="m")
    if n == 1:
        return np.array([float(m)]), np.ones(1), 1.0
    p = -math.expm1(m * math.log1p(-1.0 / n))
    lam = m / n
    cap = min(m, math.ceil(lam + 40.0 * math.sqrt(lam + 1.0) + 700.0))
    k = np.arange(1, cap + 1, dtype=np.float64)
    log_pmf = binom_logpmf(k, m, 1.0 / n)
    log_tail = np.append(np.logaddexp.accumulate(log_pmf[::-1])[::-1][1:], -np.inf)  # log P(K > k)
    count = int(np.argmax(log_tail < math.log(1e-300))) + 1
    k, log_pmf = k[:count], log_pmf[:count]
    keep = np.isfinite(log_pmf)
    return k[keep], np.exp(log_pmf[keep]) / p, p


@attrs.frozen
class ResamplePLD:
    """The B-fold composition of one WR-resample release in both orders of a neighbouring pair.

    ``forward`` is the loss law of ``log dP/dQ`` (P the mixture over K, Q = N(0, 1)), ``reverse`` that of
    ``log dQ/dP``; both are pessimistic discretisations (every delta at least the true one). The pair's
    delta(eps) is the larger of the two.
    """

    forward: PrivBootPLD
    reverse: PrivBootPLD

    def delta(self, epsilon: float) -> float:
        """The smallest delta with (epsilon, delta)-DP in both orders (an upper bound)."""
        return max(self.forward.delta(epsilon), self.reverse.delta(epsilon))

    def epsilon(self, delta: float) -> float:
        """The smallest epsilon with ``delta(epsilon) <= delta`` in both orders."""
        return max(self.forward.epsilon(delta), self.reverse.epsilon(delta))

    def mu_effective(self, delta: float) -> float:
        """The mu whose tight GDP curve passes through ``(epsilon(delta), delta)``."""
        eps = self.epsilon(delta)
        if eps <= 0:
            return 0.0
        return accounting.gdp_mu_for(eps, delta)


@functools.lru_cache(maxsize=64)
def resample_pld(mu0: float, n: int, m: int, B: int, step: float | None = None) -> ResamplePLD:
    """The composed PLDs of B releases at per-release GDP parameter ``mu0`` on m-out-of-n WR resamples.

    ``step`` is the loss grid step (default: a hundredth of the per-release loss's standard deviation
    under Q, at most ``min(1e-3, mu0 / 50)``).
    """
    if not (math.isfinite(mu0) and mu0 > 0):
        raise ConfigError("must be a finite number > 0", path="mu0")
    if B < 1:
        raise ConfigError("need B >= 1", path="B")
    return compose_mixture_pair(mu0, resample_mixture(n, m), B, n=n, step=step)


def mixture_log_ratio(x: FloatArray, mu0: float, mixture: Mixture) -> FloatArray:
    """``log dP/dQ (x)`` for ``P = (1 - p) N(0, 1) + p sum_k w_k N(k mu0, 1)``, ``Q = N(0, 1)``; increasing in x."""
    k, w, p = mixture
    x = np.asarray(x, dtype=np.float64)
    log_weights = np.log(w) + math.log(p)
    a = k * mu0
    terms = log_weights[:, np.newaxis] + a[:, np.newaxis] * x[np.newaxis, :] - (a * a / 2)[:, np.newaxis]
    if p < 1:
        terms = np.vstack([np.full((1, x.size), math.log1p(-p)), terms])
    return np.asarray(special.logsumexp(terms, axis=0), dtype=np.float64)


def _mixture_survival(levels: FloatArray, mu0: float, mixture: Mixture) -> tuple[FloatArray, FloatArray]:
    """``(P(L > l), Q(L > l))`` at each level l of the loss ``L = log dP/dQ`` (vectorised).

    L is a log-sum-exp of affine functions of the output x, so it is convex and increasing; Newton's method
    started to the right of the root ``L(x) = l`` converges monotonically from the right.
    """
    k, w, p = mixture
    levels = np.asarray(levels, dtype=np.float64)
    floor = math.log1p(-p) if p < 1 else -math.inf  # L > floor everywhere
    inside = levels > floor
    a = k * mu0
    log_weights = np.log(w) + math.log(p)
    # L(x) >= log(p w_k) + a_k x - a_k^2 / 2 for every k, so this x has L(x) >= l.
    x = np.min((levels[np.newaxis, :] - log_weights[:, np.newaxis] + (a * a / 2)[:, np.newaxis]) / a[:, np.newaxis], 0)
    active = inside.copy()
    for _ in range(500):
        if not np.any(active):
            break
        xa = x[active]
        terms = log_weights[:, np.newaxis] + a[:, np.newaxis] * xa[np.newaxis, :] - (a * a / 2)[:, np.newaxis]
        if p < 1:
            terms = np.vstack([np.full((1, xa.size), floor), terms])
            slopes = np.concatenate([[0.0], a])
        else:
            slopes = a
        value = special.logsumexp(terms, axis=0)
        slope = slopes @ np.exp(terms - value[np.newaxis, :])
        gap = value - levels[active]
        moved = xa - gap / slope
        x[active] = moved
        done = (gap <= 1e-13 * np.maximum(1.0, np.abs(levels[active]))) | (moved >= xa)
        active[np.flatnonzero(active)[done]] = False
    x = np.where(inside, x, -np.inf)
    surv_q = special.ndtr(-x)
    surv_p = (1.0 - p) * surv_q + p * (w @ special.ndtr(a[:, np.newaxis] - x[np.newaxis, :]))
    return np.asarray(surv_p, dtype=np.float64), np.asarray(surv_q, dtype=np.float64)


def compose_mixture_pair(mu0: float, mixture: Mixture, B: int, *, n: int = 0, step: float | None = None) -> ResamplePLD:
    """The B-fold compositions of ``(P, Q)`` and ``(Q, P)``: P the mixture ``(k, w, p)`` at mu0, Q = N(0, 1).

    The loss ``L = log dP/dQ`` is increasing in the output, so its law under P and under Q is known exactly
    on every grid cell; each cell's masses are split between its end points by "connect the dots" (as in
    ``compose_releases``), mass below the grid is rounded up to its lowest point and mass above it counts as
    infinite loss. The reverse order uses the same cells with the roles of P and Q exchanged.
    """
    k, w, p = mixture
    keep = p * w >= _NEGLIGIBLE  # rarer multiplicities count as infinite loss
    k, w = k[keep], w[keep]
    mixture = (k, w, p)
    lost = max(0.0, 1.0 - float(np.sum(w)))  # weight of the multiplicities left out, P(K >= 1) units
    if step is None:
        sd = math.sqrt(max(_chi_square_forward(mu0, mixture), 1e-300))
        step = min(1e-3, mu0 / 50.0, sd / 100.0)
    top = step
    while _mixture_survival(np.array([top]), mu0, mixture)[0][0] > _TAIL:
        top *= 2.0
    bottom = -step
    floor = math.log1p(-p) if p < 1 else -math.inf
    while bottom > floor and _mixture_survival(np.array([bottom]), mu0, mixture)[1][0] < 1.0 - _TAIL:
        bottom *= 2.0
    j_lo, j_hi = math.floor(max(bottom, floor) / step), math.ceil(top / step)
    grid = np.arange(j_lo, j_hi + 1, dtype=np.float64) * step
    surv_p, surv_q = _mixture_survival(grid, mu0, mixture)
    surv_p = np.minimum.accumulate(surv_p)
    surv_q = np.minimum.accumulate(surv_q)
    cell_p, cell_q = surv_p[:-1] - surv_p[1:], surv_q[:-1] - surv_q[1:]
    low, high = grid[:-1], grid[1:]
    # Forward (P against Q): loss L on grid indices j_lo..j_hi.
    at_low, at_high = _split(cell_p, cell_q, low, high)
    forward = np.zeros(grid.size)
    forward[:-1] += at_low
    forward[1:] += at_high
    forward[0] += 1.0 - surv_p[0]  # below the grid: rounded up to its lowest point
    forward_infinite = min(1.0, float(surv_p[-1]) + p * lost)
    # Reverse (Q against P): loss -L on grid indices -j_hi..-j_lo; a cell (-high, -low] has Q-mass cell_q.
    at_minus_high, at_minus_low = _split(cell_q, cell_p, -high, -low)
    reverse = np.zeros(grid.size)  # index i holds loss (-j_hi + i) step
    reverse[::-1][1:] += at_minus_high
    reverse[::-1][:-1] += at_minus_low
    reverse[0] += float(surv_q[-1])  # Q-mass above the grid: reverse loss below -top, rounded up
    reverse_infinite = min(1.0, 1.0 - float(surv_q[0]))  # Q-mass below the grid: reverse loss above -bottom
    return ResamplePLD(
        forward=_convolution_power(forward, j_lo, forward_infinite, B, step, mu0=mu0, n=n),
        reverse=_convolution_power(reverse, -j_hi, reverse_infinite, B, step, mu0=mu0, n=n),
    )


def _convolution_power(
    pmf: FloatArray, first: int, infinite: float, B: int, step: float, *, mu0: float, n: int
) -> PrivBootPLD:
    """The B-fold composition of a loss law on the grid ``(first + j) step``, j = 0..len(pmf) - 1.

    As in ``compose_releases``: an FFT convolution power on a window holding all but a Chernoff-bounded upper
    tail, which is added to the infinite mass; mass below the window wraps to higher losses (pessimistic).
    """
    offsets = np.arange(first, first + pmf.size, dtype=np.float64)
    mean = float(pmf @ offsets)
    sd = math.sqrt(max(float(pmf @ offsets**2) - mean**2, 1e-30))
    centre = B * mean
    spread = 30.0 * math.sqrt(B) * sd + 64
    lo_index = math.floor(centre - spread)
    width = math.ceil(2 * spread) + 1
    size = 1 << max(10, math.ceil(math.log2(width + pmf.size)))
    buffer = np.zeros(size)
    buffer[: pmf.size] = pmf
    composed = np.maximum(np.fft.irfft(np.fft.rfft(buffer) ** B, n=size), 0.0)
    shift = B * first  # sum of buffer indices = sum of offsets - B * first
    index = lo_index + np.mod(np.arange(size) + shift - lo_index, size)
    order = np.argsort(index)
    losses = index[order].astype(np.float64) * step
    total = composed[order]
    tail = _chernoff_tail(pmf, offsets * step, B, (lo_index + size) * step, sd * step)
    infinite_total = min(1.0, -math.expm1(B * math.log1p(-infinite)) + tail) if infinite < 1 else 1.0
    return PrivBootPLD(losses=losses, pmf=total, infinite=infinite_total, mu0=mu0, n=n, B=B)


def _chernoff_tail(pmf: FloatArray, losses: FloatArray, B: int, threshold: float, sd: float) -> float:
    """``min_t exp(-t threshold + B log E[e^{t L}])`` over t in a grid scaled to the loss's spread ``sd``."""
    scale = 1.0 / (math.sqrt(B) * sd)
    best = 1.0
    for t in (0.25, 0.5, 1.0, 2.0, 4.0, *(scale * 2.0**j for j in range(-2, 7))):
        log_mgf = float(special.logsumexp(t * losses, b=pmf))
        best = min(best, math.exp(min(0.0, -t * threshold + B * log_mgf)))
    return best


def _chi_square_forward(mu0: float, mixture: Mixture) -> float:
    """``chi^2(P || Q) = E[exp(K K' mu0^2)] - 1`` over the mixture's (truncated) law of K."""
    k, w, p = mixture
    values = np.concatenate([[0.0], k]) if p < 1 else k
    probs = np.concatenate([[1.0 - p], p * w]) if p < 1 else w
    with np.errstate(over="ignore"):
        return float(probs @ np.expm1(np.outer(values, values) * mu0 * mu0) @ probs)
