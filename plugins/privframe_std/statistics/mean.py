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
from privframe.errors import ConfigError, DataError
from privframe_std.statistics._decompose import SCALE, combine_sums, decomposed_batch, decomposed_full, segment_sums
from privframe_std.statistics._finite import finite_weighted_mean
from privframe_std.statistics._population import population_law

__all__ = ["NOISE_MECHANISMS", "Mean"]

NOISE_MECHANISMS = MappingProxyType({pp.GDP: "gaussian", pp.ApproxDP: "laplace", pp.PureDP: "laplace"})
"""Additive noise by default: Gaussian under a GDP budget, Laplace under a pure or (epsilon, delta) one."""


@attrs.frozen
class Mean:
    """Sample mean.

    Scalar data need ``bounds=(a, b)``: replace-one L2 sensitivity on k records ``(b - a) / k``. Vector
    data ``(n, d)`` need ``bounds=pf.L2Ball(R)``: sensitivity ``2 R / k``. Data are clipped (scalars) or
    projected onto the ball (vectors) first. Rate ``tau_k = sqrt(k)``.
    """

    name: ClassVar[str] = "mean"
    traits: ClassVar[pp.StatisticTraits] = pp.StatisticTraits(default_mechanisms=NOISE_MECHANISMS)

    def prepare(self, x: pp.Array, bounds: Any) -> pp.Array:
        """Clip scalars to the interval, or project rows onto the ball."""
        if isinstance(bounds, pp.Bounds):
            if x.ndim != 1:
                raise DataError("scalar bounds need one-dimensional data (use pf.L2Ball for vectors)", path="x")
            return bounds.clip(x)
        if isinstance(bounds, pp.L2Ball):
            if x.ndim != 2:
                raise DataError("an L2Ball bound needs two-dimensional data (n, d)", path="x")
            return bounds.clip(x)
        raise ConfigError("the mean needs (low, high) or pf.L2Ball(radius)", path="bounds")

    def evaluate(self, x: pp.Array) -> pp.Array:
        """The mean, shape ``(d,)``: sums per public data block, added in block order, over n."""
        return decomposed_full(self, x)

    def evaluate_batch(self, x: pp.Array, index: pp.IndexMatrix) -> pp.Array:
        """Means of B resamples at once: ``(B, 1)`` for scalars, ``(B, d)`` for vectors.

        Summed per public data block and combined in block order (:meth:`partial_batch`,
        :meth:`combine`), so a run on a Dask array gives the same doubles.
        """
        return decomposed_batch(self, x, index)

    def partial_batch(self, values: pp.Array, lengths: npt.NDArray[np.integer[Any]]) -> pp.Array:
        """Per-resample sums of one data block's records, ``(rows, d)``, in units of ``2^64`` (cannot overflow)."""
        sums = segment_sums(values, lengths)
        return sums[:, np.newaxis] if sums.ndim == 1 else sums

    def combine(self, partials: Sequence[pp.Array], k: int) -> pp.Array:
        """Means ``(rows, d)``: the partial sums added in block order, over k."""
        means: pp.Array = combine_sums(partials) / k / SCALE
        return means

    def sensitivity(self, k: int, bounds: Any) -> float:
        """L2 global sensitivity on k records under replace-one."""
        if isinstance(bounds, pp.Bounds):
            return bounds.width / k
        if isinstance(bounds, pp.L2Ball):
            return 2.0 * bounds.radius / k
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
