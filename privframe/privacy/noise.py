"""Exact noise: integer samplers driven by a numpy Generator, and releases on a public power-of-two grid.

Adding floating-point noise to a floating-point value (``value + scale * rng.standard_normal()``) is not
private: the set of doubles a release can take depends on the value, so its low bits reveal the data
(Mironov 2012). Every standard mechanism therefore releases on a public grid ``g = 2^e``: the value is
rounded to the nearest multiple of g, integer noise drawn *exactly* (no floating point in the sampler) is
added, and the result is multiplied back by g. The released double is a deterministic function of an
integer, so neighbouring datasets have exactly the same set of reachable outputs. The rounding is charged
in the sensitivity: two values that differ by Delta round to integers that differ by at most
``Delta / g + 1`` per coordinate.

The samplers are those of Canonne, Kamath and Steinke (2020): Bernoulli(exp(-gamma)) for rational gamma,
the discrete Laplace and the discrete Gaussian, vectorised over many draws and written in int64 arithmetic
with every intermediate value bounded (``docs/algorithms.md``, section 1). They draw only
``rng.integers``, so a seeded run is reproducible.

Examples
--------
>>> import numpy as np
>>> import privframe.plugin as pp
>>> plan = pp.noise.plan_gaussian(sensitivity=0.01, mu=1.0)
>>> plan.mu <= 1.0, 0.01 < plan.sd < 0.01 * 1.0001
(True, True)
>>> released = pp.noise.release(np.array([0.25]), plan, np.random.default_rng(0))
>>> float(released[0] / plan.grid).is_integer()
True
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from privframe.errors import BudgetError

__all__ = [
    "GRID_BITS",
    "FloatNoise",
    "LatticePlan",
    "NoisePlan",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "grid_for",
    "max_scale_ratio",
    "noise_plan_from_dict",
    "plan_gaussian",
    "plan_laplace",
    "release",
    "release_rows",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

GRID_BITS = 20
"""The grid is ``2^-GRID_BITS`` of the noise scale (rounded down to a power of two): the noise spans about
2^20 grid steps, so rounding adds at most a relative 2^-20 / mu to the sensitivity."""

DISCRETE_GAUSSIAN_VARIANCE_MARGIN = Fraction(1, 4)
"""The discrete Gaussian N_Z(0, s^2) with integer shift k is charged as the continuous Gaussian with
variance ``s^2 - 1/4``: its privacy profile exceeds the continuous one at variance s^2 by a relative
O(1/s^2); exact summation over every integer shift for s in [2, 200] shows that a variance margin of 1/6
already covers it (tests/test_noise.py), and 1/4 keeps a margin. Here s >= 2^20."""

_DOUBLE_MAX = float(np.finfo(np.float64).max)


def _as_int64(values: Any) -> IntArray:
    return np.asarray(values, dtype=np.int64)


def _bernoulli_exp_fraction(rng: np.random.Generator, numerator: IntArray, denominator: IntArray) -> BoolArray:
    """Bernoulli(exp(-numerator / denominator)) for ``0 <= numerator <= denominator`` (CKS Algorithm 1).

    With gamma in [0, 1]: K = 1; while Bernoulli(gamma / K): K += 1; return "K is odd". Each Bernoulli(a/b)
    is an integer comparison ``uniform{0..b-1} < a``.
    """
    count = numerator.shape[0]
    odd = np.zeros(count, dtype=bool)
    pending = np.arange(count)
    k = 1
    while pending.size > _SCALAR_SIZE:
        draws = rng.integers(0, denominator[pending] * k, dtype=np.int64)
        stop = draws >= numerator[pending]
        odd[pending[stop]] = k % 2 == 1
        pending = pending[~stop]
        k += 1
    if pending.size:  # the last few chains continue one draw at a time, without a numpy round each
        bits = _Bits(rng)
        for i in pending:
            odd[i] = bits.continue_exp_fraction(int(numerator[i]), int(denominator[i]), k)
    return odd


def bernoulli_exp(rng: np.random.Generator, numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> BoolArray:
    """Exact Bernoulli(exp(-numerator / denominator)) draws for non-negative integers (vectorised).

    gamma = floor part plus fraction: the draw succeeds iff ``floor(gamma)`` independent Bernoulli(exp(-1))
    draws and one Bernoulli(exp(-fraction)) all succeed (CKS Algorithm 1). Both integers must be below
    2^62; ``denominator * 40`` must be too (the loop over K rarely passes 10).
    """
    num, den = np.broadcast_arrays(_as_int64(numerator), _as_int64(denominator))
    shape = num.shape
    num, den = num.reshape(-1), den.reshape(-1)
    if np.any(num < 0) or np.any(den <= 0):
        raise BudgetError("need numerator >= 0 and denominator > 0", path="gamma")
    whole, fraction = np.divmod(num, den)
    success = np.ones(num.shape[0], dtype=bool)
    left = whole.copy()
    pending = np.flatnonzero(left > 0)
    ones = np.ones(num.shape[0], dtype=np.int64)
    while pending.size:
        ok = _bernoulli_exp_fraction(rng, ones[pending], ones[pending])
        success[pending[~ok]] = False
        left[pending] -= 1
        pending = pending[ok & (left[pending] > 0)]
    fractional = np.flatnonzero(success & (fraction > 0))
    success[fractional] = _bernoulli_exp_fraction(rng, fraction[fractional], den[fractional])
    return success.reshape(shape)


_SCALAR_SIZE = 8
"""Up to this many draws the samplers run one draw at a time on Python integers (from the generator's raw
64-bit words), which is about 20 times faster than the vectorised path for a single release."""


class _Bits:
    """Exact uniform integers from a numpy generator's raw 64-bit words (rejection of the top bits)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._raw = rng.bit_generator.random_raw

    def below(self, n: int) -> int:
        """Uniform on {0, ..., n - 1}, n <= 2^64."""
        if n == 1:
            return 0
        shift = 64 - (n - 1).bit_length()
        while True:
            value = int(self._raw()) >> shift
            if value < n:
                return value

    def bernoulli_exp(self, numerator: int, denominator: int) -> bool:
        """Bernoulli(exp(-numerator / denominator)) (CKS Algorithm 1), on Python integers."""
        whole, fraction = divmod(numerator, denominator)
        for _ in range(whole):
            if not self._exp_fraction(1, 1):
                return False
        return fraction == 0 or self._exp_fraction(fraction, denominator)

    def _exp_fraction(self, numerator: int, denominator: int) -> bool:
        return self.continue_exp_fraction(numerator, denominator, 1)

    def continue_exp_fraction(self, numerator: int, denominator: int, k: int) -> bool:
        """Bernoulli(exp(-numerator / denominator)) for a fraction in [0, 1], from the loop's counter ``k``."""
        while self.below(denominator * k) < numerator:
            k += 1
        return k % 2 == 1

    def continue_geometric_exp1(self, count: int, k: int) -> int:
        """A geometric count of Bernoulli(exp(-1)) successes, from ``count`` and the running trial's ``k``."""
        while True:
            if self.below(k) == 0:
                k += 1
            elif k % 2 == 1:
                count, k = count + 1, 2
            else:
                return count

    def laplace(self, t: int) -> int:
        """One discrete Laplace draw of scale t (CKS Algorithm 2)."""
        while True:
            u = self.below(t)
            if not self.bernoulli_exp(u, t):
                continue
            v = 0
            while self.bernoulli_exp(1, 1):
                v += 1
            magnitude = u + t * v
            negative = self.below(2) == 1
            if negative and magnitude == 0:
                continue
            return -magnitude if negative else magnitude

    def gaussian(self, t: int, q: int) -> int:
        """One discrete Gaussian draw of variance parameter t q (CKS Algorithm 3)."""
        while True:
            y = self.laplace(t)
            gap = abs(y) - q
            if self.bernoulli_exp(gap * gap, 2 * t * q):
                return y


def _parameters(value: int | npt.ArrayLike, size: int, name: str, limit: int) -> IntArray:
    """An integer parameter (or one per draw) as an int64 array of ``size``, each in [1, limit)."""
    if isinstance(value, (bool, np.bool_)):
        raise BudgetError(f"must be an integer in [1, 2^{limit.bit_length() - 1})", path=name)
    if isinstance(value, int) and not 1 <= value < limit:
        raise BudgetError(f"must be an integer in [1, 2^{limit.bit_length() - 1})", path=name)
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or (array.ndim and array.shape != (size,)):
        raise BudgetError(f"must be an integer or {size} integers", path=name)
    if array.size and (int(array.min()) < 1 or int(array.max()) >= limit):
        raise BudgetError(f"must be an integer in [1, 2^{limit.bit_length() - 1})", path=name)
    return np.broadcast_to(array.astype(np.int64), (size,))


def _first_accepted(slots: IntArray, accepted: BoolArray) -> tuple[IntArray, IntArray]:
    """For candidates drawn for ``slots`` (several per slot, in order), each slot's first accepted candidate:
    the slots served and the candidate positions (taking the first of i.i.d. tries keeps the law exact)."""
    served, first = np.unique(slots[accepted], return_index=True)
    return served, np.flatnonzero(accepted)[first]


def _geometric_exp1(rng: np.random.Generator, size: int) -> IntArray:
    """How many Bernoulli(exp(-1)) draws succeed before the first failure, ``size`` times at once.

    Each Bernoulli(exp(-1)) is CKS Algorithm 1 with gamma = 1: K starts at 2 (the draw Bernoulli(1/1)
    always succeeds), grows while uniform{0..K-1} == 0, and the draw succeeds iff the final K is odd. All
    draws advance together one uniform at a time, so the loop runs as many rounds as the longest chain.
    """
    count = np.zeros(size, dtype=np.int64)
    k = np.full(size, 2, dtype=np.int64)
    pending = np.arange(size)
    while pending.size > _SCALAR_SIZE:
        going = rng.integers(0, k[pending], dtype=np.int64) == 0
        k[pending[going]] += 1
        ended = pending[~going]
        success = ended[k[ended] % 2 == 1]
        count[success] += 1
        k[success] = 2
        pending = np.concatenate((pending[going], success))
    if pending.size:
        bits = _Bits(rng)
        for i in pending:
            count[i] = bits.continue_geometric_exp1(int(count[i]), int(k[i]))
    return count


_OVERSAMPLE = 2
"""Candidates drawn per pending draw in each round of a rejection sampler: every acceptance rate here is
above 1/2, so most draws finish in the first round instead of needing a round per rejection."""


def discrete_laplace(rng: np.random.Generator, scale: int | npt.ArrayLike, size: int) -> IntArray:
    """``size`` exact draws of P(y) proportional to exp(-|y| / scale) on the integers (CKS Algorithm 2).

    U ~ uniform{0..t-1} accepted with probability exp(-U / t), plus t times a geometric count of
    Bernoulli(exp(-1)) successes, and a random sign (rejecting "-0"). ``scale`` is one integer in
    [1, 2^40), or one per draw.
    """
    t = _parameters(scale, size, "scale", 2**40)
    if size <= _SCALAR_SIZE:
        bits = _Bits(rng)
        return np.array([bits.laplace(int(ti)) for ti in t], dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        slots = np.tile(pending, _OVERSAMPLE)
        u = rng.integers(0, t[slots], dtype=np.int64)
        served, chosen = _first_accepted(slots, _bernoulli_exp_fraction(rng, u, t[slots]))
        magnitude = u[chosen] + t[served] * _geometric_exp1(rng, served.size)
        negative = rng.integers(0, 2, size=served.size, dtype=np.int64) == 1
        valid = ~(negative & (magnitude == 0))
        out[served[valid]] = np.where(negative, -magnitude, magnitude)[valid]
        done = np.zeros(size, dtype=bool)
        done[served[valid]] = True
        pending = pending[~done[pending]]
        if 0 < pending.size <= _SCALAR_SIZE:
            bits = _Bits(rng)
            out[pending] = [bits.laplace(int(t[i])) for i in pending]
            break
    return out


def discrete_gaussian(rng: np.random.Generator, t: int | npt.ArrayLike, q: int | npt.ArrayLike, size: int) -> IntArray:
    """``size`` exact draws of the discrete Gaussian P(y) proportional to exp(-y^2 / (2 t q)) (CKS Algorithm 3).

    The variance parameter is sigma^2 = t q with integers t, q, so that sigma^2 / t = q is an integer: a
    discrete Laplace proposal Y of scale t is accepted with probability exp(-(|Y| - q)^2 / (2 t q)), an
    integer ratio. Choosing t near sigma keeps the acceptance rate above 1/2. ``t`` and ``q`` are integers in
    [1, 2^24), or one of each per draw.
    """
    ts = _parameters(t, size, "t", 2**24)
    qs = _parameters(q, size, "q", 2**24)
    if size <= _SCALAR_SIZE:
        bits = _Bits(rng)
        return np.array([bits.gaussian(int(ti), int(qi)) for ti, qi in zip(ts, qs, strict=True)], dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        slots = np.tile(pending, _OVERSAMPLE)
        y = discrete_laplace(rng, ts[slots], slots.size)
        gap = np.abs(y) - qs[slots]
        denominator = 2 * ts[slots] * qs[slots]
        # |Y| > 2^30 has probability below exp(-2^30 / 2^24); its acceptance exp(-gamma) with gamma > 2^35
        # is computed exactly from Python integers so that int64 never overflows.
        huge = np.abs(gap) >= 2**30
        accept = np.zeros(slots.size, dtype=bool)
        small = ~huge
        accept[small] = bernoulli_exp(rng, gap[small] * gap[small], denominator[small])
        bits = _Bits(rng)
        for i in np.flatnonzero(huge):
            accept[i] = bits.bernoulli_exp(int(gap[i]) ** 2, int(denominator[i]))
        served, chosen = _first_accepted(slots, accept)
        out[served] = y[chosen]
        done = np.zeros(size, dtype=bool)
        done[served] = True
        pending = pending[~done[pending]]
        if 0 < pending.size <= _SCALAR_SIZE:
            bits = _Bits(rng)
            out[pending] = [bits.gaussian(int(ts[i]), int(qs[i])) for i in pending]
            break
    return out


def grid_for(scale: float) -> float:
    """The public grid ``2^(floor(log2 scale) - GRID_BITS)`` for a noise scale (a power of two, never 0)."""
    if not (math.isfinite(scale) and scale > 0):
        raise BudgetError("the noise scale must be finite and > 0", path="noise_scale")
    _, exponent = math.frexp(scale)  # scale = f 2^exponent, f in [0.5, 1)
    return math.ldexp(1.0, max(exponent - 1 - GRID_BITS, -1074))


@attrs.frozen
class LatticePlan:
    """How a value is released on the grid: exact integer noise, and the guarantee it gives.

    Attributes
    ----------
    kind : {"gaussian", "laplace"}
        The integer noise law: the discrete Gaussian with variance parameter ``t * q``, or the discrete
        Laplace with scale ``t`` (then ``q = 1``).
    grid : float
        The public power of two the release is a multiple of.
    t, q : int
        The integer noise parameters.
    sensitivity : float
        The sensitivity in grid units after rounding (L2 for the Gaussian, L1 for the Laplace).
    mu : float
        The GDP parameter the Gaussian release satisfies (``nan`` for the Laplace).
    epsilon : float
        The pure-DP parameter the Laplace release satisfies (``nan`` for the Gaussian).
    """

    kind: str
    grid: float
    t: int
    q: int
    sensitivity: float
    mu: float = math.nan
    epsilon: float = math.nan

    @property
    def sd(self) -> float:
        """Standard deviation of the noise in value units (the discrete Gaussian's variance is t q to within
        a relative e^-(2 pi^2 t q); the discrete Laplace's is 2 e^-1/t / (1 - e^-1/t)^2)."""
        if self.kind == "gaussian":
            return self.grid * math.sqrt(self.t * self.q)
        ratio = math.exp(-1.0 / self.t)
        return self.grid * math.sqrt(2.0 * ratio) / (1.0 - ratio)

    @property
    def scale(self) -> float:
        """The noise scale in value units: the Gaussian's sigma, or the Laplace's scale ``t g``."""
        return self.grid * (math.sqrt(self.t * self.q) if self.kind == "gaussian" else self.t)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table of the plan (:func:`noise_plan_from_dict` inverts it)."""
        table: dict[str, Any] = {"lattice": self.kind, "grid": self.grid, "t": self.t, "q": self.q}
        table["sensitivity"] = self.sensitivity
        if not math.isnan(self.mu):
            table["mu"] = self.mu
        if not math.isnan(self.epsilon):
            table["epsilon"] = self.epsilon
        return table


@attrs.frozen
class FloatNoise:
    """Floating-point noise of a mechanism run with ``exact=False``: for simulations only.

    Its low bits can reveal the data (Mironov 2012); an event that carries it must never be published.

    Attributes
    ----------
    kind : str
        The law (``"gaussian"``, ``"laplace"``, ``"exponential"``...).
    """

    kind: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready table."""
        return {"float": self.kind}


NoisePlan = LatticePlan | FloatNoise
"""How an event's noise is drawn: exactly on a public lattice, or in floating point (simulations only)."""


def noise_plan_from_dict(table: Any) -> NoisePlan:
    """The plan a ``to_dict`` table describes (``KeyError``, ``TypeError`` or ``ValueError`` when malformed)."""
    if "float" in table:
        return FloatNoise(str(table["float"]))
    return LatticePlan(
        str(table["lattice"]),
        float(table["grid"]),
        int(table["t"]),
        int(table["q"]),
        float(table["sensitivity"]),
        float(table.get("mu", math.nan)),
        float(table.get("epsilon", math.nan)),
    )


def _units(sensitivity: float, grid: float, rounding: float) -> float:
    """Sensitivity in grid units after rounding, rounded up: ``sensitivity / grid + rounding``."""
    units = sensitivity / grid + rounding
    return math.nextafter(units, math.inf)


def max_scale_ratio(parameter: float, dimension: int = 1) -> float:
    """The most a lattice release's noise scale exceeds the continuous one, ``Delta / mu`` or ``Delta_1 / eps``.

    ``parameter`` is mu (Gaussian) or eps (Laplace). Rounding to the grid adds at most ``sqrt(d)`` (Gaussian)
    or ``d`` (Laplace) grid steps to a sensitivity of at least ``parameter * 2^20`` steps, and the integer
    noise parameters round up by a relative 2^-20 at most: the ratio is below ``1 + 2^-19 (1 + d / parameter)``.
    """
    return 1.0 + 2.0**-19 * (1.0 + dimension / parameter)


_MARGIN = 1.0 + 2.0**-50
"""Covers the rounding of a correctly rounded square root and division when a plan checks its guarantee."""


@functools.lru_cache(maxsize=4096)
def plan_gaussian(sensitivity: float, mu: float, dimension: int = 1) -> LatticePlan:
    """The grid and discrete Gaussian that release a value of L2 ``sensitivity`` at mu-GDP or better.

    With sigma = sensitivity / mu the grid is ``2^(floor(log2 sigma) - 20)``; rounding each coordinate to it
    adds at most 1 per coordinate, so the integer sensitivity is ``K = sensitivity / g + sqrt(d)``. The
    discrete Gaussian is charged as the continuous one of variance ``t q - 1/4``
    (:data:`DISCRETE_GAUSSIAN_VARIANCE_MARGIN`), so t and q are chosen with
    ``t q >= (K / mu)^2 + 1/4``; the plan's ``mu = K / sqrt(t q - 1/4) <= mu`` is checked with a rounding
    margin.
    """
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise BudgetError("must be a finite number > 0", path="sensitivity")
    if not (math.isfinite(mu) and mu > 0):
        raise BudgetError("must be a finite number > 0", path="mu")
    grid = grid_for(sensitivity / mu)
    units = _units(sensitivity, grid, math.sqrt(dimension))
    margin = float(DISCRETE_GAUSSIAN_VARIANCE_MARGIN)
    target = (units / mu) ** 2 * _MARGIN + margin
    t = math.isqrt(math.ceil(target)) + 1
    q = math.ceil(target / t)
    while (achieved := units / math.sqrt(t * q - margin) * _MARGIN) > mu:
        q += 1  # rounding in the target; never more than a step
    return LatticePlan("gaussian", grid, t, q, units, mu=achieved)


@functools.lru_cache(maxsize=4096)
def plan_laplace(sensitivity: float, epsilon: float, dimension: int = 1) -> LatticePlan:
    """The grid and discrete Laplace that release a value of L1 ``sensitivity`` at epsilon-DP or better.

    With b = sensitivity / epsilon the grid is ``2^(floor(log2 b) - 20)``; rounding adds at most 1 per
    coordinate, so the integer L1 sensitivity is ``K = sensitivity / g + d``, and the integer scale is
    ``t = ceil(K / epsilon)``: the release is ``K / t``-DP, at most epsilon (checked with a rounding margin).
    """
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise BudgetError("must be a finite number > 0", path="sensitivity")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise BudgetError("must be a finite number > 0", path="epsilon")
    grid = grid_for(sensitivity / epsilon)
    units = _units(sensitivity, grid, float(dimension))
    t = math.ceil(units / epsilon * _MARGIN)
    while (achieved := units / t * _MARGIN) > epsilon:
        t += 1  # rounding in the quotient; never more than a step
    return LatticePlan("laplace", grid, t, 1, units, epsilon=achieved)


def release(value: npt.ArrayLike, plan: LatticePlan, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """``grid * (round(value / grid) + integer noise)``, elementwise.

    ``value / grid`` is exact (a power-of-two scaling) and clamped to +-2^1020 (1-Lipschitz, so the
    sensitivity is unchanged); the sum with the integer noise is rounded once, so the released double is a
    deterministic function of an integer.
    """
    values = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        values = np.nan_to_num(values, nan=0.0, posinf=_DOUBLE_MAX, neginf=-_DOUBLE_MAX)
    with np.errstate(over="ignore"):  # a huge value over a tiny grid is clamped, not reported
        scaled = np.clip(values / plan.grid, -(2.0**1020), 2.0**1020)
    centre = np.rint(scaled)
    size = int(centre.size)
    if plan.kind == "gaussian":
        noise = discrete_gaussian(rng, plan.t, plan.q, size)
    else:
        noise = discrete_laplace(rng, plan.t, size)
    released: npt.NDArray[np.float64] = (centre.reshape(-1) + noise.astype(np.float64)).reshape(centre.shape)
    with np.errstate(over="ignore"):  # 2^1020 steps of a large grid can exceed the doubles: +-inf, by design
        out: npt.NDArray[np.float64] = released * plan.grid
    return out


def release_rows(values: npt.ArrayLike, plans: list[LatticePlan], rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """:func:`release` of each row of ``values`` ``(N, ...)`` with its own plan, in one vectorised draw.

    Row i is released exactly as ``release(values[i], plans[i], rng)`` would release it (same law; the
    draws are shared out differently). Every plan must be of the same kind.
    """
    rows = np.asarray(values, dtype=np.float64)
    if rows.ndim == 0 or rows.shape[0] != len(plans):
        raise BudgetError("need one plan per row", path="plans")
    if not plans:
        return rows.copy()
    kinds = {plan.kind for plan in plans}
    if len(kinds) != 1:
        raise BudgetError("every plan must be of the same kind", path="plans")
    width = int(np.prod(rows.shape[1:], dtype=np.int64))
    flat = np.nan_to_num(rows.reshape(len(plans), width), nan=0.0, posinf=_DOUBLE_MAX, neginf=-_DOUBLE_MAX)
    grid = np.array([plan.grid for plan in plans])[:, np.newaxis]
    with np.errstate(over="ignore"):
        centre = np.rint(np.clip(flat / grid, -(2.0**1020), 2.0**1020))
    t = np.repeat(np.array([plan.t for plan in plans], dtype=np.int64), width)
    if kinds == {"gaussian"}:
        q = np.repeat(np.array([plan.q for plan in plans], dtype=np.int64), width)
        drawn = discrete_gaussian(rng, t, q, t.size)
    else:
        drawn = discrete_laplace(rng, t, t.size)
    with np.errstate(over="ignore"):
        released: npt.NDArray[np.float64] = (centre + drawn.reshape(centre.shape).astype(np.float64)) * grid
    return released.reshape(rows.shape)
