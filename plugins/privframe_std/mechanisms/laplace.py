"""The Laplace mechanism: ``g(D) + Lap(Delta_1 / eps)`` is eps-DP for L1 sensitivity Delta_1."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import BudgetError
from privframe_std.mechanisms._checks import check_sensitivity

__all__ = ["LaplaceMechanism"]


@attrs.frozen
class LaplaceMechanism:
    """Additive i.i.d. Laplace noise, eps-DP for the L1 sensitivity.

    Like every mechanism it receives the **L2** sensitivity Delta of a ``dimension``-vector and bounds the L1
    sensitivity by ``Delta_1 <= sqrt(dimension) * Delta`` (exact for d = 1). Under ``PureDP(eps)`` or
    ``ApproxDP(eps, delta)`` (delta is not needed and not spent) the noise scale is ``Delta_1 / eps``; the
    event records ``PureDP(eps)`` and the L1 sensitivity used. A GDP budget is refused.
    """

    name: ClassVar[str] = "laplace"

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        """The event: ``PureDP(eps)`` with scale ``Delta_1 / eps``."""
        if dimension < 1:
            raise BudgetError("must be a positive integer", path="dimension")
        delta_l1 = check_sensitivity(sensitivity) * math.sqrt(dimension)
        if isinstance(budget, pf.GDP):
            raise BudgetError(
                "the Laplace mechanism is calibrated in epsilon; give pf.PureDP or pf.ApproxDP", path="budget"
            )
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=pf.PureDP(budget.epsilon),
            sensitivity=delta_l1,
            noise_scale=delta_l1 / budget.epsilon,
        )

    def apply(self, value: pf.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pf.Array:
        """``value + Lap(0, noise_scale)`` coordinate-wise."""
        scale = event.noise_scale or 0.0
        noisy: pf.Array = value + rng.laplace(0.0, 1.0, size=np.shape(value)) * scale
        return noisy
