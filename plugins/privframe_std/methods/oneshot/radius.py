"""The noise-aware one-shot radius (``docs/algorithms.md``, section 3.5): valid at every budget.

The paper's radius is the (1 - alpha) root quantile plus noise, clamped at 0. It ignores two things: the
centre is noisy too, and the radius's own noise can pull it below the root quantile (at small budgets
about half the time, down to zero width). The noise-aware radius

1. convolves the roots with the centre's noise: ``R'_i = ||dev_i + c_i||`` where ``c_i`` are independent
   draws of the centre-noise law (data-independent simulation), so the quantile describes the distance
   from the *released* centre, not the non-private one;
2. spends ``gamma = noise_share * alpha`` of the miscoverage on the radius noise: the released radius is
   ``Q_tilde + q_{1 - gamma}`` with ``Q_tilde`` the noisy ``(1 - alpha + gamma)`` quantile of ``R'`` and
   ``q_{1 - gamma}`` the radius noise's upper quantile, so ``P(radius < Q') <= gamma`` and the union bound
   gives coverage ``>= 1 - alpha`` whenever the root quantile does;
3. is never smaller than a quantile of ``||c_i||`` alone (public): the alpha quantile for CR-GS, whose
   convolved quantile is calibrated (a higher floor only over-covers), the (1 - alpha) quantile for CR-SS;
   so it never has zero width.

Privacy: the ``c_i`` do not depend on the data, so for neighbours ``|R'_i(D) - R'_i(D')| <=
||dev_i(D) - dev_i(D')||``, the bound the paper's sensitivity (and the smooth bound of CR-SS) already uses;
an order statistic is 1-Lipschitz in the sup norm. Steps 2 and 3 are post-processing of released and public
numbers.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs
import numpy as np

import privframe.plugin as pp
from privframe_std.methods.oneshot.roots import order_statistic

__all__ = ["RADIUS_RULES", "DescribedSmoothMechanism", "NoiseAwareSplit", "convolved_quantile", "noise_floor", "split"]

RADIUS_RULES = ("noise-aware", "paper")
"""``noise-aware`` (default): valid at every budget; ``paper``: the published construction, for reproduction."""


@attrs.frozen
class NoiseAwareSplit:
    """How the miscoverage alpha is split: ``sampling + noise == alpha``.

    ``sampling_level = 1 - sampling`` is the level of the convolved root quantile; ``noise`` is the
    probability left to the radius noise falling below its upper quantile.
    """

    sampling: float
    noise: float

    @property
    def sampling_level(self) -> float:
        """The level of the convolved root quantile, ``1 - alpha + gamma``."""
        return 1.0 - self.sampling


def split(confidence: float, noise_share: float) -> NoiseAwareSplit:
    """``gamma = noise_share * alpha`` to the radius noise, the rest to sampling."""
    alpha = 1.0 - confidence
    noise = noise_share * alpha
    return NoiseAwareSplit(sampling=alpha - noise, noise=noise)


@runtime_checkable
class DescribedSmoothMechanism(pp.SmoothMechanism, pp.DescribedNoise, Protocol):
    """A smooth-bound mechanism that describes its release noise: what CR-SS's noise-aware radius needs (a
    smooth-bound release cannot be drawn on a public input, so its law must be stated)."""


def convolved_quantile(
    deviations: pp.Array, offsets: pp.Array, level: float, rule: str, shifts: pp.Array | None = None
) -> float:
    """The ``level`` order statistic of ``||deviations_i + offsets_i|| + shifts_i`` (non-private).

    ``deviations`` and ``offsets`` are ``(B, d)``; ``shifts`` (``(B,)``, optional) are draws of the radius
    noise when the quantile is to be convolved with it too.
    """
    norms = np.linalg.norm(deviations + offsets, axis=1)
    if shifts is not None:
        norms = norms + shifts
    return order_statistic(norms, level, rule)


def noise_floor(offsets: pp.Array, confidence: float, rule: str) -> float:
    """The ``confidence`` order statistic of ``||offsets_i||``: the centre noise's own radius (public)."""
    return order_statistic(np.linalg.norm(offsets, axis=1), confidence, rule)
