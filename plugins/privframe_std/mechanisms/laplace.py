"""The Laplace mechanism: ``g(D) + Lap(Delta_1 / eps)`` is eps-DP for L1 sensitivity Delta_1; released on a grid."""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import BudgetError
from privframe.privacy import noise
from privframe_std.mechanisms._checks import (
    check_sensitivity,
    float_event,
    laplace_quantile,
    lattice_details,
    lattice_plan,
)

__all__ = ["LaplaceMechanism"]


@attrs.frozen
class LaplaceMechanism:
    """Laplace noise, eps-DP for the L1 sensitivity, drawn exactly on a public grid.

    Like every mechanism it receives the **L2** sensitivity Delta of a ``dimension``-vector and bounds the L1
    sensitivity by ``Delta_1 <= sqrt(dimension) * Delta`` (exact for d = 1). Under ``PureDP(eps)`` or
    ``ApproxDP(eps, delta)`` (delta is not needed and not spent) the event records ``PureDP(eps)``. A GDP
    budget is refused.

    The release is ``g (round(value / g) + Y)`` with g a power of two about 2^-20 of the scale
    ``Delta_1 / eps`` and Y the exact discrete Laplace of integer scale ``t = ceil(K / eps)``, where
    ``K = Delta_1 / g + d`` charges the rounding (:func:`privframe.noise.plan_laplace`): ``K / t <= eps``.

    Parameters
    ----------
    exact : bool, default True
        False adds floating-point Laplace noise at exactly ``Delta_1 / eps``: for simulations only (the
        event says so); its low bits can reveal the data.
    """

    name: ClassVar[str] = "laplace"
    exact: bool = attrs.field(default=True, validator=pf.validators.boolean)

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        """The event: ``PureDP(eps)``, and the grid and integer scale that achieve it."""
        if dimension < 1:
            raise BudgetError("must be a positive integer", path="dimension")
        delta_l1 = check_sensitivity(sensitivity) * math.sqrt(dimension)
        if isinstance(budget, pf.GDP):
            raise BudgetError(
                "the Laplace mechanism is calibrated in epsilon; give pf.PureDP or pf.ApproxDP", path="budget"
            )
        event = pf.PrivacyEvent(
            label=label, mechanism=self.name, budget=pf.PureDP(budget.epsilon), sensitivity=delta_l1
        )
        if delta_l1 == 0.0:
            return attrs.evolve(event, noise_scale=0.0)
        if not self.exact:
            return float_event(event, delta_l1 / budget.epsilon)
        return lattice_details(event, noise.plan_laplace(delta_l1, budget.epsilon, dimension))

    def apply(self, value: pf.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pf.Array:
        """The release: exact discrete Laplace noise on the event's grid (or float noise if it says so)."""
        values = np.asarray(value, dtype=np.float64)
        scale = event.noise_scale or 0.0
        if scale == 0.0:
            return values
        if event.details.get("float_noise"):
            noisy: pf.Array = values + rng.laplace(0.0, 1.0, size=np.shape(values)) * scale
            return noisy
        return noise.release(values, lattice_plan(event, "laplace"), rng)

    def noise_quantile(self, noise_scale: float, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (Laplace, rounding to the grid included)."""
        return laplace_quantile(noise_scale, p)

    def noise_sd(self, noise_scale: float) -> float:
        """``sqrt(2) noise_scale`` (the discrete Laplace's variance is at most the continuous one's)."""
        return math.sqrt(2.0) * noise_scale

    def noise_draws(self, noise_scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> pf.Array:
        """Draws of the noise's law, for simulation only (floating point; never added to a release)."""
        draws: pf.Array = rng.laplace(0.0, noise_scale, size=shape)
        return draws
