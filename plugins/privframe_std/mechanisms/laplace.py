"""The Laplace mechanism: ``g(D) + Lap(Delta_1 / eps)`` is eps-DP for L1 sensitivity Delta_1; released on a grid."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import BudgetError
from privframe.privacy import noise
from privframe_std.mechanisms._checks import (
    check_sensitivity,
    float_event,
    laplace_quantile,
    lattice_event,
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
    ``K = Delta_1 / g + d`` charges the rounding (:func:`privframe.privacy.noise.plan_laplace`): ``K / t <= eps``.

    Parameters
    ----------
    exact : bool, default True
        False adds floating-point Laplace noise at exactly ``Delta_1 / eps``: for simulations only (the
        event says so); its low bits can reveal the data.
    """

    name: ClassVar[str] = "laplace"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType(
        {pp.PureDP: pp.PureDP, pp.ApproxDP: pp.PureDP}
    )
    exact: bool = attrs.field(default=True, validator=pp.validators.boolean)

    def plan(self, sensitivity: float, budget: pp.Budget, *, label: str, dimension: int = 1) -> pp.PrivacyEvent:
        """The event: ``PureDP(eps)``, and the grid and integer scale that achieve it."""
        if dimension < 1:
            raise BudgetError("must be a positive integer", path="dimension")
        delta_l1 = check_sensitivity(sensitivity) * math.sqrt(dimension)
        if isinstance(budget, pp.GDP):
            raise BudgetError(
                "the Laplace mechanism is calibrated in epsilon; give pf.PureDP or pf.ApproxDP", path="budget"
            )
        event = pp.PrivacyEvent(
            label=label, mechanism=self.name, budget=pp.PureDP(budget.epsilon), sensitivity=delta_l1
        )
        if delta_l1 == 0.0:
            return attrs.evolve(event, noise_scale=0.0)
        if not self.exact:
            return float_event(event, "laplace", delta_l1 / budget.epsilon)
        return lattice_event(event, noise.plan_laplace(delta_l1, budget.epsilon, dimension))

    def apply(self, value: pp.Array, event: pp.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        """The release: exact discrete Laplace noise on the event's grid (or float noise if it says so)."""
        values = np.asarray(value, dtype=np.float64)
        scale = event.noise_scale or 0.0
        if scale == 0.0:
            return values
        if event.simulated:
            noisy: pp.Array = values + rng.laplace(0.0, 1.0, size=np.shape(values)) * scale
            return noisy
        return noise.release(values, lattice_plan(event, "laplace"), rng)

    def noise_quantile(self, event: pp.PrivacyEvent, p: float) -> float:
        """An upper bound on the p-quantile of one coordinate's noise (Laplace, rounding to the grid included)."""
        return laplace_quantile(event.noise_scale or 0.0, p)

    def noise_sd(self, event: pp.PrivacyEvent) -> float:
        """``sqrt(2)`` times the event's scale (the discrete Laplace's variance is at most the continuous one's)."""
        return math.sqrt(2.0) * (event.noise_scale or 0.0)

    def noise_draws(self, event: pp.PrivacyEvent, shape: tuple[int, ...], rng: np.random.Generator) -> pp.Array:
        """Draws of the noise's law, for simulation only (floating point; never added to a release)."""
        draws: pp.Array = rng.laplace(0.0, event.noise_scale or 0.0, size=shape)
        return draws
