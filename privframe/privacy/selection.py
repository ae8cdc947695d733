"""Exact draws from ``P(i) ~ counts[i] exp(-rate * distances[i])`` with integer distances.

The exact sampler of every exponential-mechanism selection over a public grid: the ``rank-quantile``
method's ends and :func:`privframe.suggest_bounds`. It lives in the core (beside the exact lattice noise of
:mod:`privframe.privacy.noise`) so that both use one proven sampler.

This generalises :func:`privframe_std.mechanisms.exponential.exact_piece` (whose distances are the
piece indices ``|j - q k|``) to a sparse list of classes with arbitrary integer distances, so that the
cost is the number of distinct distances (at most a few times the grid size) and not the largest distance
(up to n). The method is the same: a 53-bit uniform integer is compared with the cumulative weights
computed in floats, with a proven bound on their error; when it falls within that bound of a class
boundary, the comparison is redone in decimal interval arithmetic at growing precision with more bits of
the same uniform. The result is an exact draw from the stated law.

**Float error bound** (why :data:`FLOAT_ERROR` of the exponential mechanism still holds). The distances
are shifted by their minimum first (an exact integer subtraction), so the class of smallest distance has
exponent ``ln c >= 0`` and the top log-weight ``T = max(ln c_i - rate d_i)`` satisfies
``0 <= T <= ln(2^64) < 44.4``. A class whose weight does not underflow has ``ln c_i - rate d_i - T >= -745``,
so ``rate d_i <= 790``: every quantity in the exponent is below 835 in magnitude and each of its four
floating-point operations (``log``, the product ``rate * d_i`` of a float and an exactly represented
integer, two subtractions) errs by at most ``835 * 2^-53 < 2^-43``. The exponent is correct to ``2^-41``
absolute, so each weight (``exp`` correct to 1 ulp) is correct to a relative ``2^-40.9``. Classes that
underflow carry a true weight below ``e^-745`` each relative to a top weight >= 1. The cumulative sum of
P positive terms adds at most ``P`` ulp of relative error and the division one more, so each fraction is
within ``2 (2^-40.9 + (P + 1) 2^-53) + P e^-745`` of the truth, below ``2^-36 + (P + 8) 2^-48``, the bound
the exponential mechanism uses (:func:`float_error`).

:func:`exponential_index` draws one grid point of a selection whose distances are given per point (the
class of equal distance exactly, then a point of it uniformly).
"""

from __future__ import annotations

import decimal

import numpy as np
import numpy.typing as npt

__all__ = ["UNIFORM_BITS", "exact_choice", "exponential_index", "float_error"]

IntArray = npt.NDArray[np.int64]

UNIFORM_BITS = 53
"""Bits of the uniform compared with the float cumulative weights."""

_EXP_ZERO = -746.0
"""Below about -745.13, ``exp`` rounds to exactly 0.0 in double precision."""


def float_error(classes: int) -> float:
    """The bound ``2^-36 + (P + 8) 2^-48`` on the error of each float cumulative fraction (module docstring)."""
    return 2.0**-36 + (classes + 8) * 2.0**-48


def _float_fractions(counts: IntArray, shifted: IntArray, rate: float) -> npt.NDArray[np.float64]:
    """Cumulative fractions ``sum_{j <= i} w_j / sum_j w_j`` in floats (error: :func:`float_error`)."""
    with np.errstate(divide="ignore"):
        log_weight = np.log(counts.astype(np.float64)) - rate * shifted.astype(np.float64)
    log_weight -= np.max(log_weight)
    np.copyto(log_weight, -np.inf, where=log_weight < _EXP_ZERO)  # exp(-inf) = 0.0 exactly, and fast
    cumulative = np.cumsum(np.exp(log_weight))
    fractions: npt.NDArray[np.float64] = cumulative / cumulative[-1]
    return fractions


def exact_choice(rng: np.random.Generator, counts: IntArray, distances: IntArray, rate: float) -> int:
    """Index i drawn with probability exactly proportional to ``counts[i] exp(-rate distances[i])``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The randomness (53 bits per draw, 64 more per refinement round).
    counts : ndarray of int64, shape (P,)
        Positive counts (the number of outputs in each class), each below 2^63.
    distances : ndarray of int64, shape (P,)
        Integer distances (any order, below 2^53).
    rate : float
        The rate (``eps / 2`` for an eps-DP selection with a sensitivity-1 distance), > 0.

    Returns
    -------
    int
        The class index.
    """
    classes = counts.size
    shifted = distances - np.min(distances)
    fractions = _float_fractions(counts, shifted, rate)
    bits = int(rng.integers(0, 2**UNIFORM_BITS, dtype=np.int64))
    u = bits / 2.0**UNIFORM_BITS  # exact: a 53-bit integer over a power of two
    index = min(int(np.searchsorted(fractions, u, side="right")), classes - 1)
    below = float(fractions[index - 1]) if index > 0 else 0.0
    above = float(fractions[index])
    error = float_error(classes)
    # Settled when [u, u + 2^-53) lies inside the class's interval with a margin larger than the float error.
    if below + error <= u and u + 2.0**-UNIFORM_BITS <= above - error:
        return index
    return _refine(rng, counts, shifted, rate, bits)


def exponential_index(rng: np.random.Generator, distances: IntArray, rate: float) -> int:
    """A point index drawn with probability exactly proportional to ``exp(-rate distances[i])``.

    The distinct distances and the number of points at each form the classes of :func:`exact_choice`; the
    point is then uniform among those of the drawn class (an exact integer draw), so the law is exact.

    Parameters
    ----------
    rng : numpy.random.Generator
        The randomness.
    distances : ndarray of int64, shape (P,)
        The integer distance (negative utility) of each point, each below 2^53.
    rate : float
        ``eps / 2`` for an eps-DP selection with a sensitivity-1 distance; > 0.

    Returns
    -------
    int
        The index of the drawn point, in ``0..P - 1``.
    """
    values, sizes = np.unique(distances, return_counts=True)
    chosen = exact_choice(rng, sizes.astype(np.int64), values.astype(np.int64), rate)
    members = np.flatnonzero(distances == values[chosen])
    return int(members[rng.integers(0, members.size)])


def _refine(rng: np.random.Generator, counts: IntArray, shifted: IntArray, rate: float, bits: int) -> int:
    """The class of the uniform whose first 53 bits are ``bits``, by interval arithmetic in decimal.

    Each weight ``c exp(-rate d)`` is computed at ``prec`` digits: the product ``rate d`` (``rate`` converts
    to Decimal exactly) and ``exp`` are each correctly rounded, so a weight with exponent x is correct to a
    relative ``(|x| / 2 + 2) 10^(1 - prec)``; each partial sum and quotient adds a relative
    ``10^(1 - prec) / 2``. The slack used, ``2 (sum_i w_i (|x_i| + 4) + (P + 2) W) 10^(1 - prec) / W`` with W
    the total, is therefore a bound on the error of every computed fraction. When the known bits of the
    uniform do not settle the class, 64 more are drawn and the precision doubles.
    """
    known = UNIFORM_BITS
    precision = 60
    classes = counts.size
    while True:
        with decimal.localcontext() as context:
            context.prec = precision
            rate_decimal = decimal.Decimal(rate)  # exact: a double is a dyadic rational
            exponents = [-(rate_decimal * int(d)) for d in shifted]
            weights = [int(c) * x.exp() for c, x in zip(counts, exponents, strict=True)]
            total = sum(weights, decimal.Decimal(0))
            spread = sum((w * (abs(x) + 4) for w, x in zip(weights, exponents, strict=True)), decimal.Decimal(0))
            unit = decimal.Decimal(10) ** (1 - precision)
            slack = 2 * (spread + (classes + 2) * total) * unit / total + unit
            low = decimal.Decimal(bits) / (decimal.Decimal(2) ** known)
            high = (decimal.Decimal(bits) + 1) / (decimal.Decimal(2) ** known)
            running = decimal.Decimal(0)
            for index, weight in enumerate(weights):
                start = running / total
                running += weight
                end = running / total
                if start + slack <= low and high <= end - slack:
                    return index
        bits = (bits << 64) | int(rng.integers(0, 2**64, dtype=np.uint64))
        known += 64
        precision *= 2
