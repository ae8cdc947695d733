"""The laws an interval is computed from: a normal sampling error plus one release's Laplace or Gaussian noise.

Everything here is public arithmetic on noise scales (no data). The one non-trivial formula is the survival
function of ``s Z + L`` with ``Z ~ N(0, 1)`` and ``L ~ Laplace(b)`` independent: for ``x >= 0``

    P(s Z + L > x) = Phi(-x / s) + 1/2 exp(r^2 / 2 - x / b) Phi(x / s - r) - 1/2 exp(r^2 / 2 + x / b) Phi(-x / s - r),

with ``r = s / b`` (condition on Z: ``P(L > t) = e^{-t/b} / 2`` for t >= 0 and ``1 - e^{t/b} / 2`` below, and
``E[e^{Z s / b} 1{Z <= x / s}] = e^{r^2 / 2} Phi(x / s - r)``). Each exponential is evaluated with its
``log Phi`` inside the exponent (``scipy.special.log_ndtr``), so nothing overflows for any ``r``.
"""

from __future__ import annotations

import math
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

from privframe._typing import LazyModule
from privframe.errors import BudgetError

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = [
    "GAUSSIAN",
    "KINDS",
    "LAPLACE",
    "NoiseLaw",
    "sum_pdf",
    "sum_sf",
    "sum_survival",
    "sum_upper_quantile",
]

Array = npt.NDArray[np.float64]

LAPLACE: Final = "laplace"
GAUSSIAN: Final = "gaussian"
KINDS: Final = (LAPLACE, GAUSSIAN)

_NORMAL_LIMIT = 1e4
"""Above ``s / b = 10^4`` the Laplace part is read as a normal of the same variance: the exact formula's two
exponential terms then cancel to a relative ``b^2 / s^2 < 10^-8`` correction of ``Phi(-x / s)``, and their
exponents lose digits to rounding; the approximation's error is of the same tiny order."""

_NEWTON_STEPS = 40
"""Safeguarded Newton steps for a quantile: Newton converges in a handful, and each failed step halves a
bracket whose ends differ by a factor of about 3, so 40 steps reach 2^-40 of it at worst."""


def _kind(value: str) -> str:
    if value not in KINDS:
        raise BudgetError(f"must be one of {', '.join(KINDS)}", path="kind")
    return value


def _scale(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float) and math.isfinite(value) and value > 0):
        raise BudgetError("must be a finite number > 0", path=attribute.name)


@attrs.frozen
class NoiseLaw:
    """The law of one release's noise: ``Laplace(scale)`` or ``N(0, scale^2)``.

    Parameters
    ----------
    kind : {"laplace", "gaussian"}
        The noise family.
    scale : float
        The Laplace scale b (density ``exp(-|y| / b) / 2b``) or the Gaussian standard deviation, in the
        units of the released value. For the lattice mechanisms of :mod:`privframe.noise` this is
        :attr:`privframe.noise.LatticePlan.scale`.
    """

    kind: str = attrs.field(converter=_kind)
    scale: float = attrs.field(converter=float, validator=_scale)

    @property
    def variance(self) -> float:
        """``2 b^2`` (Laplace) or ``scale^2`` (Gaussian)."""
        return 2.0 * self.scale**2 if self.kind == LAPLACE else self.scale**2

    def scaled(self, factor: float) -> NoiseLaw:
        """The law of ``factor * noise`` (``factor > 0``)."""
        return NoiseLaw(self.kind, self.scale * factor)

    def cdf(self, x: npt.ArrayLike) -> Array:
        """``P(noise <= x)``."""
        z = np.asarray(x, dtype=np.float64) / self.scale
        if self.kind == GAUSSIAN:
            return np.asarray(special.ndtr(z), dtype=np.float64)
        tail = 0.5 * np.exp(-np.abs(z))
        return np.where(z < 0, tail, 1.0 - tail)

    def ppf(self, u: npt.ArrayLike) -> Array:
        """The inverse of :meth:`cdf` on ``(0, 1)``."""
        p = np.asarray(u, dtype=np.float64)
        if self.kind == GAUSSIAN:
            return np.asarray(self.scale * special.ndtri(p), dtype=np.float64)
        low = np.log(2.0 * np.minimum(p, 0.5))
        high = -np.log(2.0 * (1.0 - np.maximum(p, 0.5)))
        return np.asarray(self.scale * np.where(p < 0.5, low, high), dtype=np.float64)

    def upper_quantile(self, p: float) -> float:
        """The ``q >= 0`` with ``P(noise > q) = p``, for ``0 < p <= 1/2``."""
        if self.kind == GAUSSIAN:
            return float(-self.scale * special.ndtri(p))
        return float(-self.scale * math.log(2.0 * p))


def _branches(
    xs: Array, ss: Array, b: float
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Flat indices of the three regimes: no normal part, the exact formula, a normal of the same variance."""
    flat = ss.reshape(-1)
    none = np.flatnonzero(flat <= 0)
    normal = np.flatnonzero(flat > _NORMAL_LIMIT * b)
    exact = np.flatnonzero((flat > 0) & (flat <= _NORMAL_LIMIT * b))
    return none, exact, normal


def _all_exact(s: Array, b: float) -> bool:
    """Whether every s is in the exact formula's regime (``0 < s <= 10^4 b``)."""
    return bool(np.all((s > 0) & (s <= _NORMAL_LIMIT * b)))


def _exponentials(x: Array, s: Array, b: float) -> tuple[Array, Array, Array]:
    """``(u, E_-, E_+)`` of the exact regime: ``u = x / s`` and ``E_-+ = exp(r^2/2 -+ x/b + log Phi(+-u - r))``
    with ``r = s / b`` (broadcast). The survival function is ``Phi(-u) + (E_- - E_+) / 2``, the density
    ``(E_- + E_+) / 2b``."""
    r, u = s / b, x / s
    half_r2 = 0.5 * r * r
    with np.errstate(over="ignore"):
        lower = np.exp(half_r2 - x / b + special.log_ndtr(u - r))
        upper = np.exp(half_r2 + x / b + special.log_ndtr(-u - r))
    return u, lower, upper


def sum_sf(x: npt.ArrayLike, s: npt.ArrayLike, law: NoiseLaw) -> Array:
    """``P(s Z + noise > x)`` for ``x >= 0``, ``s >= 0`` (broadcast), Z standard normal independent of the noise."""
    xs, ss = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(s, dtype=np.float64))
    if law.kind == GAUSSIAN:
        return np.asarray(special.ndtr(-xs / np.hypot(ss, law.scale)), dtype=np.float64)
    b = law.scale
    given_x, given_s = np.asarray(x, dtype=np.float64), np.asarray(s, dtype=np.float64)
    if _all_exact(given_s, b):  # the same operations on the unbroadcast s (a row's s is shared by its x)
        u, lower, upper = _exponentials(given_x, given_s, b)
        return np.asarray(np.clip(special.ndtr(-u) + 0.5 * lower - 0.5 * upper, 0.0, 1.0).reshape(xs.shape))
    fx, fs = xs.reshape(-1), ss.reshape(-1)
    out = np.empty(fx.shape, dtype=np.float64)
    none, exact, normal = _branches(xs, ss, b)
    out[none] = 0.5 * np.exp(-fx[none] / b)
    out[normal] = special.ndtr(-fx[normal] / np.sqrt(fs[normal] ** 2 + 2.0 * b * b))
    u, lower, upper = _exponentials(fx[exact], fs[exact], b)
    out[exact] = special.ndtr(-u) + 0.5 * lower - 0.5 * upper
    return np.asarray(np.clip(out, 0.0, 1.0).reshape(xs.shape), dtype=np.float64)


def sum_survival(x: npt.ArrayLike, s: npt.ArrayLike, law: NoiseLaw) -> Array:
    """``P(s Z + noise > x)`` for every real x (the law is symmetric: ``1 - P(. > -x)`` below 0)."""
    xs = np.asarray(x, dtype=np.float64)
    upper = sum_sf(np.abs(xs), s, law)
    return np.asarray(np.where(xs >= 0, upper, 1.0 - upper), dtype=np.float64)


def sum_pdf(x: npt.ArrayLike, s: npt.ArrayLike, law: NoiseLaw) -> Array:
    """The density of ``s Z + noise``.

    Laplace noise: ``(1 / 2b) [exp(r^2/2 - x/b) Phi(x/s - r) + exp(r^2/2 + x/b) Phi(-x/s - r)]`` with
    ``r = s / b`` (differentiate the survival function above), each term through ``log Phi``.
    """
    xs, ss = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(s, dtype=np.float64))
    if law.kind == GAUSSIAN:
        sd = np.hypot(ss, law.scale)
        return np.asarray(np.exp(-0.5 * (xs / sd) ** 2) / (math.sqrt(2.0 * math.pi) * sd), dtype=np.float64)
    b = law.scale
    given_x, given_s = np.asarray(x, dtype=np.float64), np.asarray(s, dtype=np.float64)
    if _all_exact(given_s, b):  # as in sum_sf
        _, lower, upper = _exponentials(given_x, given_s, b)
        return np.asarray(((lower + upper) / (2.0 * b)).reshape(xs.shape), dtype=np.float64)
    fx, fs = xs.reshape(-1), ss.reshape(-1)
    out = np.empty(fx.shape, dtype=np.float64)
    none, exact, normal = _branches(xs, ss, b)
    out[none] = np.exp(-np.abs(fx[none]) / b) / (2.0 * b)
    sd = np.sqrt(fs[normal] ** 2 + 2.0 * b * b)
    out[normal] = np.exp(-0.5 * (fx[normal] / sd) ** 2) / (math.sqrt(2.0 * math.pi) * sd)
    _, lower, upper = _exponentials(fx[exact], fs[exact], b)
    out[exact] = (lower + upper) / (2.0 * b)
    return np.asarray(out.reshape(xs.shape), dtype=np.float64)


class _LaplaceTerms:
    """:func:`sum_sf` and :func:`sum_pdf` of Laplace noise at many x for one fixed s, sharing their work.

    A quantile's Newton steps evaluate both at every step with s fixed: the regimes, ``r`` and ``r^2 / 2``
    are computed once, and the two exponentials are shared between the survival function and the density.
    Every value is computed by the same operations as in those two functions, so the results are the same
    bit for bit (``tests/test_private_variance_core.py`` checks it).
    """

    def __init__(self, s: Array, b: float) -> None:
        self.shape = s.shape
        self.b = b
        self.none, self.exact, self.normal = _branches(s, s, b)
        flat = s.reshape(-1)
        self.all_exact = self.exact.size == flat.size  # the common case: no fancy indexing per step
        self.se = flat[self.exact]
        self.r = self.se / b
        self.half_r2 = 0.5 * self.r * self.r
        self.normal_sd = np.sqrt(flat[self.normal] ** 2 + 2.0 * b * b)

    def at(self, x: Array) -> tuple[Array, Array]:
        """``(sum_sf(x, s), sum_pdf(x, s))`` for ``x`` of the shape of s."""
        b = self.b
        fx = np.broadcast_to(x, self.shape).reshape(-1)
        if self.all_exact:
            sf_exact, pdf_exact = self._exact(fx)
            return np.clip(sf_exact, 0.0, 1.0).reshape(self.shape), pdf_exact.reshape(self.shape)
        sf = np.empty(fx.shape, dtype=np.float64)
        pdf = np.empty(fx.shape, dtype=np.float64)
        xn = fx[self.none]
        sf[self.none] = 0.5 * np.exp(-xn / b)
        pdf[self.none] = np.exp(-np.abs(xn) / b) / (2.0 * b)
        xm, sd = fx[self.normal], self.normal_sd
        sf[self.normal] = special.ndtr(-xm / sd)
        pdf[self.normal] = np.exp(-0.5 * (xm / sd) ** 2) / (math.sqrt(2.0 * math.pi) * sd)
        sf[self.exact], pdf[self.exact] = self._exact(fx[self.exact])
        return np.clip(sf, 0.0, 1.0).reshape(self.shape), pdf.reshape(self.shape)

    def _exact(self, xe: Array) -> tuple[Array, Array]:
        """The exact formulas at the points of the exact regime (``xe`` in the order of ``self.exact``)."""
        b, r, half_r2 = self.b, self.r, self.half_r2
        u = xe / self.se
        with np.errstate(over="ignore"):
            second = np.exp(half_r2 - xe / b + special.log_ndtr(u - r))
            third = np.exp(half_r2 + xe / b + special.log_ndtr(-u - r))
        return special.ndtr(-u) + 0.5 * second - 0.5 * third, (second + third) / (2.0 * b)


def sum_upper_quantile(p: float, s: npt.ArrayLike, law: NoiseLaw, guess: npt.ArrayLike | None = None) -> Array:
    """The ``x >= 0`` with ``P(s Z + noise > x) = p`` (``0 < p < 1/2``), for each ``s >= 0``.

    Gaussian noise: ``z_{1-p} sqrt(s^2 + scale^2)``. Laplace noise: safeguarded Newton steps inside the bracket
    ``[max(s z_{1-p}, q_L(p)), s z_{1-p/2} + q_L(p/2)]`` (the sum's tail is heavier than each part's, both
    being symmetric and unimodal; the upper end is a union bound), where ``q_L`` is the Laplace's own
    quantile; a step that leaves the bracket is replaced by bisection. ``guess`` (a nearby quantile, e.g. at
    the previous s of a search) starts Newton there when it lies inside the bracket: the same root, in fewer
    steps.
    """
    ss = np.asarray(s, dtype=np.float64)
    z = float(-special.ndtri(p))
    if law.kind == GAUSSIAN:
        return np.asarray(z * np.hypot(ss, law.scale), dtype=np.float64)
    low = np.maximum(ss * z, law.upper_quantile(p))
    high = ss * float(-special.ndtri(p / 2.0)) + law.upper_quantile(p / 2.0)
    x = 0.5 * (low + high)
    if guess is not None:
        start = np.broadcast_to(np.asarray(guess, dtype=np.float64), x.shape)
        x = np.where((start > low) & (start < high), start, x)
    terms = _LaplaceTerms(ss, law.scale)
    for _ in range(_NEWTON_STEPS):
        survival, density = terms.at(x)
        excess = survival - p
        low = np.where(excess > 0, x, low)
        high = np.where(excess > 0, high, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x + excess / density
        inside = (step > low) & (step < high) & np.isfinite(step)
        moved = np.where(inside, step, 0.5 * (low + high))
        done = bool(np.all(np.abs(moved - x) <= 4e-16 * np.abs(x)))
        x = moved
        if done:  # every quantile has stopped moving (to a few ulps)
            break
    return np.asarray(x, dtype=np.float64)
