"""The mean of bounded scalars (an interval) or of vectors in an L2 ball (a region)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe.errors import ConfigError
from privframe_std.statistics._decompose import SCALE, combine_sums, decomposed_batch, decomposed_full, segment_sums
from privframe_std.statistics._finite import finite_weighted_mean
from privframe_std.statistics._population import population_law

__all__ = ["NOISE_MECHANISMS", "Mean"]

NOISE_MECHANISMS = MappingProxyType({pp.GDP: "gaussian", pp.ApproxDP: "laplace", pp.PureDP: "laplace"})
"""Additive noise by default: Gaussian under a GDP budget, Laplace under a pure or (epsilon, delta) one."""


GRID_BITS = 31
"""Records are rounded to a public power-of-two grid of ``2^-31`` of the bounds' magnitude (see :class:`Mean`)."""

ROUNDING = math.ldexp(1.0, -50)
"""The rounding of the final division, charged in the sensitivity (in units of the bounds' magnitude)."""

MAX_DIMENSION = 1 << 22
"""The largest dimension of vector records (the ball's shrink below covers the grid for ``sqrt(d) <= 2^11``)."""


def grid_step(magnitude: float) -> float:
    """The public grid ``2^(ceil(log2 magnitude) - 31)`` records are rounded to: a power of two, so a record
    ``u h`` with ``|u| <= 2^31`` is an exact double and sums of up to 2^22 of them are exact."""
    _, exponent = math.frexp(magnitude)  # magnitude = f 2^exponent, 0.5 <= f < 1: 2^exponent >= magnitude
    return math.ldexp(1.0, exponent - GRID_BITS)


def magnitude(bounds: Any) -> float:
    """The largest absolute value a record (or the mean) can take: ``max(|low|, |high|)``, or the radius."""
    if isinstance(bounds, pp.Bounds):
        return max(abs(bounds.low), abs(bounds.high))
    if isinstance(bounds, pp.L2Ball):
        return bounds.radius
    raise ConfigError("the mean needs (low, high) or pf.L2Ball(radius)", path="bounds")


@attrs.frozen
class Mean:
    """Sample mean, computed exactly.

    Scalar data need ``bounds=(a, b)``: replace-one L2 sensitivity on k records ``(b - a) / k``. Vector
    data ``(n, d)`` need ``bounds=pf.L2Ball(R)``: sensitivity ``2 R / k``. Data are clipped (scalars) or
    projected onto the ball (vectors) first. Rate ``tau_k = sqrt(k)``.

    The sums are exact, so the statistic's own rounding cannot exceed its sensitivity (a float sum of values
    far from 0 differs between neighbours by many times ``(b - a) / k``): each record is rounded to the
    public grid ``h = 2^(ceil(log2 M) - 31)``, ``M = max(|a|, |b|)`` (or R; vectors are first projected onto the
    ball of radius ``R (1 - 2^-20)``, so the rounded rows stay in the ball), every partial sum of a data
    block is then exact in doubles, and the blocks are added exactly (a two-term sum). Only the final division
    rounds, twice at most by ``2^-53`` of the mean: ``2^-50 M`` is added to the sensitivity. The mean of the
    rounded records is within ``h / 2 <= 2^-31 M`` of the mean. The core computes the mean on data shifted
    by the public lower bound (``traits.equivariant``), where ``M = b - a``.
    """

    name: ClassVar[str] = "mean"
    traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(
        equivariant=True, mean=True, default_mechanisms=NOISE_MECHANISMS
    )

    def check_shape(self, shape: tuple[int, ...], bounds: Any) -> None:
        """Scalars in ``(low, high)``, or vectors of at most ``MAX_DIMENSION`` coordinates in an ``L2Ball``."""
        if isinstance(bounds, (pp.Bounds, pp.L2Ball)):
            bounds.check_shape(shape)
        if isinstance(bounds, pp.L2Ball) and shape[1] > MAX_DIMENSION:
            raise ConfigError(f"vector records of more than {MAX_DIMENSION} coordinates", path="x")

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Clip scalars to the interval, or project rows onto the ball, then round to the public grid."""
        self.check_shape(x.shape, bounds)
        step = grid_step(magnitude(bounds))
        if isinstance(bounds, pp.Bounds):
            clipped = bounds.clip(x)
        else:
            clipped = pp.L2Ball(bounds.radius * (1.0 - 2.0**-20)).clip(x)
        # In place on the clipped copy (a fresh array): at n = 1e8 each temporary is 800 MB. Vectors are laid
        # out column by column: the resample sums read one coordinate's column at a time through the indices
        # (a gathered row of a row-major array costs about 30 ns, a column read 1.5 ns an index).
        rounded: pp.Array = np.asarray(clipped, dtype=np.float64) if x.ndim == 1 else np.asfortranarray(clipped)
        np.divide(rounded, step, out=rounded)
        np.rint(rounded, out=rounded)
        np.multiply(rounded, step, out=rounded)  # exact: a power of two
        if isinstance(bounds, pp.Bounds):
            np.clip(rounded, bounds.low, bounds.high, out=rounded)
        return rounded

    def evaluate(self, x: pp.Array) -> pp.Array:
        """The mean, shape ``(d,)``: sums per public data block, added in block order, over n."""
        return decomposed_full(self, x)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """Means of B resamples at once: ``(B, 1)`` for scalars, ``(B, d)`` for vectors.

        Summed per public data block and combined in block order (:meth:`partial_batch`,
        :meth:`combine`), so a run on a Dask array gives the same doubles.
        """
        return decomposed_batch(self, x, index, plain_sums=True)

    def partial_batch(self, values: pp.Array, lengths: npt.NDArray[np.integer[Any]]) -> pp.Array:
        """Per-resample sums of one data block's records, ``(rows, d)``, in units of ``2^64`` (cannot overflow)."""
        sums = segment_sums(values, lengths)
        return sums[:, np.newaxis] if sums.ndim == 1 else sums

    def sum_partials(self, sums: pp.Array) -> pp.Array:
        """:meth:`partial_batch` from the ``(rows,)`` plain sums of one data block's records
        (``pp.PlainSumStatistic``): on the public grid the sums are exact in any order, so these are its
        doubles."""
        partials: pp.Array = (np.asarray(sums, dtype=np.float64) * SCALE)[:, np.newaxis]
        return partials

    def combine(self, partials: Sequence[pp.Array], k: int) -> pp.Array:
        """Means ``(rows, d)``: the partial sums added in block order, over k."""
        means: pp.Array = combine_sums(partials) / k / SCALE
        return means

    def sensitivity(self, k: int, bounds: Any) -> float:
        """L2 global sensitivity on k records under replace-one, with the final rounding charged:
        ``(b - a) / k`` or ``2 R / k``, plus ``2^-50 M``."""
        if isinstance(bounds, pp.Bounds):
            return bounds.width / k + ROUNDING * magnitude(bounds)
        if isinstance(bounds, pp.L2Ball):
            return 2.0 * bounds.radius / k + ROUNDING * bounds.radius
        raise ConfigError("the mean needs (low, high) or pf.L2Ball(radius)", path="bounds")

    def log_smooth_sensitivity(self, x: pp.Array, beta: float, bounds: Any) -> float:
        """ln of a smooth bound for CR-SS: the global sensitivity, which bounds the local one at every dataset.

        It is constant, so ``|ln SS(x) - ln SS(x')| = 0 <= beta`` for any beta.
        """
        return math.log(self.sensitivity(x.shape[0], bounds))

    def evaluate_log_smooth_batch(
        self, x: pp.Array, index: pp.IndexMatrix, beta: float, bounds: Any
    ) -> tuple[pp.Array, pp.Array]:
        """Means ``(B, d)`` and the constant ``ln SS`` ``(B,)`` of B resamples."""
        log_bound = math.log(self.sensitivity(index.shape[1], bounds))
        return self.evaluate_batch(x, index), np.full(index.shape[0], log_bound)

    def value_range(self, bounds: Any) -> tuple[float, float] | None:
        """The mean of scalars lies within their bounds (vectors: no interval range)."""
        return (bounds.low, bounds.high) if isinstance(bounds, pp.Bounds) else None

    def evaluate_weighted(self, values: pp.Array, weights: pp.Array) -> pp.Array:
        """Means of weighted resamples of one block of scalars: ``(weights @ values) / k``, ``(R,)``."""
        return finite_weighted_mean(values, weights)

    def population_value(self, population: Any) -> float:
        """The population mean (``population.mean()``)."""
        return float(population_law(population, "mean", self.name).mean())
