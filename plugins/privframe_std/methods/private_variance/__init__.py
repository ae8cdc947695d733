"""Private-variance intervals for a mean: a noisy clipped mean and a noisy second moment about the bounds'
midpoint, with the noise of both inside a calibrated interval (docs/methods/private-variance.md).

This package is the math core: :func:`plan` (public inputs only), :func:`statistics` (the two values to
release, computed from the data) and :func:`interval` (post-processing of the two releases and their noise
laws). The method wrapper that charges the releases to a run's accountant is not part of it.
"""

from __future__ import annotations

from privframe_std.methods.private_variance.core import (
    SPELLINGS,
    Release,
    VariancePlan,
    interval,
    noise_laws,
    plan,
    rounding_margin,
    sensitivities,
    statistics,
)
from privframe_std.methods.private_variance.laws import NoiseLaw

__all__ = [
    "SPELLINGS",
    "NoiseLaw",
    "Release",
    "VariancePlan",
    "interval",
    "noise_laws",
    "plan",
    "rounding_margin",
    "sensitivities",
    "statistics",
]
