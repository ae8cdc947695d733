"""Private-variance intervals for a mean: a noisy clipped mean and a noisy second moment about the bounds'
midpoint, with the noise of both inside a calibrated interval (docs/methods/private-variance.md).

The math core: :func:`plan` (public inputs only), :func:`statistics` (the two values to release, computed
from the data) and :func:`interval` (post-processing of the two releases and their noise laws);
:class:`PrivateVariance` is the registered method ``private-variance`` that runs them.
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
from privframe_std.methods.private_variance.method import PrivateVariance

__all__ = [
    "SPELLINGS",
    "NoiseLaw",
    "PrivateVariance",
    "Release",
    "VariancePlan",
    "interval",
    "noise_laws",
    "plan",
    "rounding_margin",
    "sensitivities",
    "statistics",
]
