"""The Gaussian mechanism: ``g(D) + (Delta / mu) Z`` is mu-GDP for L2 sensitivity Delta; released on a grid."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import BudgetError
from privframe.privacy import noise
from privframe_std.mechanisms._checks import (
    GaussianNoiseLaw,
    check_sensitivity,
    float_event,
    lattice_event,
    lattice_plan,
)

__all__ = ["GaussianMechanism"]


@attrs.frozen
class GaussianMechanism(GaussianNoiseLaw):
    """Gaussian noise calibrated to an L2 sensitivity, drawn exactly on a public grid.

    Under ``GDP(mu)`` the noise has standard deviation ``Delta / mu``; under ``ApproxDP(eps, delta)`` it is
    calibrated through the tight GDP conversion (the analytic Gaussian mechanism): ``Delta / mu*`` with mu*
    the largest mu whose mu-GDP implies (eps, delta). Pure DP cannot be honoured by Gaussian noise.

    The release is ``g (round(value / g) + Y)`` with g a power of two about 2^-20 of the noise scale and Y
    the exact discrete Gaussian (:func:`privframe.privacy.noise.plan_gaussian`): the rounding is charged in the
    sensitivity (``Delta / g + sqrt(d)`` grid steps), and the discrete Gaussian is charged at a variance
    1/4 step^2 below its own. The noise is therefore a hair larger than ``Delta / mu`` (a relative 2^-20 / mu).

    Parameters
    ----------
    exact : bool, default True
        False adds floating-point Gaussian noise at exactly ``Delta / mu``: faster and bit-compatible with
        older results, for simulations only; its low bits can reveal the data, and every event it plans
        says so (its ``noise`` is a ``pp.FloatNoise``, ``event.simulated`` is True).
    """

    name: ClassVar[str] = "gaussian"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pp.GDP: pp.GDP, pp.ApproxDP: pp.GDP})
    exact: bool = attrs.field(default=True, validator=pp.validators.boolean)

    def plan(self, sensitivity: float, budget: pp.Budget, *, label: str, dimension: int = 1) -> pp.PrivacyEvent:
        """The event: its true guarantee ``GDP(mu)``, and the grid and integer noise that achieve it."""
        delta_l2 = check_sensitivity(sensitivity)
        if isinstance(budget, pp.PureDP):
            raise BudgetError("the Gaussian mechanism cannot give pure epsilon-DP; use 'laplace'", path="budget")
        gdp = pp.GDP(pp.as_gdp(budget).mu)  # Gaussian noise is mu-GDP; no delta is spent
        note = "" if isinstance(budget, pp.GDP) else f"calibrated to {budget} (tight GDP conversion)"
        event = pp.PrivacyEvent(label=label, mechanism=self.name, budget=gdp, sensitivity=delta_l2, note=note)
        if delta_l2 == 0.0:
            return attrs.evolve(event, noise_scale=0.0)  # nothing depends on the data: nothing to add
        if not self.exact:
            return float_event(event, "gaussian", delta_l2 / gdp.mu)
        plan = noise.plan_gaussian(delta_l2, gdp.mu, dimension)
        return lattice_event(event, plan)

    def apply(self, value: pp.Array, event: pp.PrivacyEvent, rng: np.random.Generator) -> pp.Array:
        """The release: exact discrete Gaussian noise on the event's grid (or float noise if it says so)."""
        values = np.asarray(value, dtype=np.float64)
        scale = event.noise_scale or 0.0
        if scale == 0.0:
            return values
        if event.simulated:
            noisy: pp.Array = values + scale * rng.standard_normal(np.shape(values))
            return noisy
        return noise.release(values, lattice_plan(event, "gaussian"), rng)
