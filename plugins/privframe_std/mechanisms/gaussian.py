"""The Gaussian mechanism: ``g(D) + (Delta / mu) Z`` is mu-GDP for L2 sensitivity Delta; released on a grid."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import BudgetError
from privframe.privacy import noise
from privframe_std.mechanisms._checks import (
    GaussianNoiseLaw,
    check_sensitivity,
    float_event,
    lattice_details,
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
    the exact discrete Gaussian (:func:`privframe.noise.plan_gaussian`): the rounding is charged in the
    sensitivity (``Delta / g + sqrt(d)`` grid steps), and the discrete Gaussian is charged at a variance
    1/4 step^2 below its own. The noise is therefore a hair larger than ``Delta / mu`` (a relative 2^-20 / mu).

    Parameters
    ----------
    exact : bool, default True
        False adds floating-point Gaussian noise at exactly ``Delta / mu``: faster and bit-compatible with
        older results, for simulations only; its low bits can reveal the data, and every event it plans
        says so (``details["float_noise"] = 1``).
    """

    name: ClassVar[str] = "gaussian"
    exact: bool = attrs.field(default=True, validator=pf.validators.boolean)

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        """The event: its true guarantee ``GDP(mu)``, and the grid and integer noise that achieve it."""
        delta_l2 = check_sensitivity(sensitivity)
        if isinstance(budget, pf.PureDP):
            raise BudgetError("the Gaussian mechanism cannot give pure epsilon-DP; use 'laplace'", path="budget")
        gdp = pf.GDP(pf.as_gdp(budget).mu)  # Gaussian noise is mu-GDP; no delta is spent
        note = "" if isinstance(budget, pf.GDP) else f"calibrated to {budget} (tight GDP conversion)"
        event = pf.PrivacyEvent(label=label, mechanism=self.name, budget=gdp, sensitivity=delta_l2, note=note)
        if delta_l2 == 0.0:
            return attrs.evolve(event, noise_scale=0.0)  # nothing depends on the data: nothing to add
        if not self.exact:
            return float_event(event, delta_l2 / gdp.mu)
        plan = noise.plan_gaussian(delta_l2, gdp.mu, dimension)
        return lattice_details(event, plan)

    def apply(self, value: pf.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pf.Array:
        """The release: exact discrete Gaussian noise on the event's grid (or float noise if it says so)."""
        values = np.asarray(value, dtype=np.float64)
        scale = event.noise_scale or 0.0
        if scale == 0.0:
            return values
        if event.details.get("float_noise"):
            noisy: pf.Array = values + scale * rng.standard_normal(np.shape(values))
            return noisy
        return noise.release(values, lattice_plan(event, "gaussian"), rng)
