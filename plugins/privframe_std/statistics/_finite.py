"""Arithmetic that stays finite for every dataset inside the public bounds.

A statistic that overflows on some data (a sum of values near the largest double) and not on their
neighbours would fail on one and release on the other; the failure is itself a release. These helpers
compute the same doubles as the plain expressions whenever those are finite, and a finite result when the
plain expression overflows: they rescale by an exact power of two, which changes no rounding.
"""

from __future__ import annotations

import math

import numpy as np

import privframe.plugin as pp

__all__ = ["finite_weighted_mean", "headroom"]


def headroom(count: int) -> float:
    """``2^-s`` with ``2^s >= 2 count``: a sum of ``count`` values scaled by it cannot overflow."""
    return math.ldexp(1.0, -(max(count, 1).bit_length() + 1))


def finite_weighted_mean(values: pp.Array, weights: pp.Array) -> pp.Array:
    """``(weights @ values) / weights.sum(axis=1)``, recomputed on values scaled by an exact power of two where
    it overflowed (the mean's sums use the same idea: ``_decompose.SCALE``)."""
    means: pp.Array = (weights @ values) / weights.sum(axis=1)
    if np.all(np.isfinite(means)):
        return means
    scale = headroom(int(np.max(weights.sum(axis=1))))
    scaled: pp.Array = (weights @ (values * scale)) / weights.sum(axis=1) / scale
    return scaled
