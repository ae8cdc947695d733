"""The Gaussian mechanism: ``g(D) + (Delta / mu) Z`` is mu-GDP for L2 sensitivity Delta."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import BudgetError
from privframe_std.mechanisms._checks import check_sensitivity

__all__ = ["GaussianMechanism"]


@attrs.frozen
class GaussianMechanism:
    """Additive N(0, sigma^2 I) noise calibrated to an L2 sensitivity.

    Under ``GDP(mu)`` the noise is ``sigma = Delta / mu``. Under ``ApproxDP(eps, delta)`` it is calibrated
    through the tight GDP conversion (the analytic Gaussian mechanism): ``sigma = Delta / mu*`` with mu*
    the largest mu whose mu-GDP implies (eps, delta). Pure DP cannot be honoured by Gaussian noise.
    """

    name: ClassVar[str] = "gaussian"

    def plan(self, sensitivity: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        """The event: its true guarantee ``GDP(mu)``, noise standard deviation ``Delta / mu``."""
        delta_l2 = check_sensitivity(sensitivity)
        if isinstance(budget, pf.PureDP):
            raise BudgetError("the Gaussian mechanism cannot give pure epsilon-DP; use 'laplace'", path="budget")
        gdp = pf.GDP(pf.as_gdp(budget).mu)  # Gaussian noise is exactly mu-GDP; no delta is spent
        mu = gdp.mu
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=gdp,
            sensitivity=delta_l2,
            noise_scale=delta_l2 / mu,
            note="" if isinstance(budget, pf.GDP) else f"calibrated to {budget} (tight GDP conversion)",
        )

    def apply(self, value: pf.Array, event: pf.PrivacyEvent, rng: np.random.Generator) -> pf.Array:
        """``value + noise_scale * N(0, I)``."""
        scale = event.noise_scale or 0.0
        noisy: pf.Array = value + scale * rng.standard_normal(np.shape(value))
        return noisy
