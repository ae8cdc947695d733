"""PTR-GDP: propose-test-release under Gaussian DP (``docs/algorithms.md``, section 3.3).

Input: a value g(D) and a bound s(D) with ``|g(D) - g(D')| <= s(D)`` and ``|ln s(D) - ln s(D')| <= gamma``
for every neighbour D'. The budget ``GDP(mu, delta)`` is split into a test part ``mu_0`` and a release part
``mu_1`` with ``mu_0^2 + mu_1^2 = mu^2``.

- ``variant="bound"`` (default): ``b = exp(ln s(D) + (gamma / mu_0)(Z_0 + z_{1-delta}))`` is mu_0-GDP and
  exceeds s(D) except with probability delta; the release ``g(D) + (b / mu_1) Z_1`` is then mu_1-GDP. It
  never fails. Together (mu, delta)-GDP.
- ``variant="classic"``: with a public proposal b_0 the test passes iff
  ``ln s(D) + (gamma / mu_0)(Z_0 + z_{1-delta}) <= ln b_0``; on a pass release ``g(D) + (b_0 / mu_1) Z_1``.
  On a fail raise ``PTRFailed`` (``on_fail="raise"``), or release with the global sensitivity instead
  (``on_fail="global"``), which is mu_1-GDP unconditionally. Same guarantee.
"""

from __future__ import annotations

import math
from typing import ClassVar

import attrs
import numpy as np
from scipy.special import ndtri

import privframe as pf
from privframe.errors import BudgetError, ConfigError, DataError, PTRFailed

__all__ = ["PTRGDP"]


def _exp(log_value: float) -> float:
    try:
        return math.exp(log_value)
    except OverflowError:
        return math.inf


@attrs.frozen
class PTRGDP:
    """Propose-test-release with Gaussian noise, recorded as (mu, delta)-GDP.

    Parameters
    ----------
    variant : {"bound", "classic"}, default "bound"
        "bound" releases with a privately proposed bound and never fails; "classic" tests a public proposal.
    on_fail : {"raise", "global"}, default "raise"
        Classic variant only: raise ``PTRFailed`` on a failed test, or release with the global sensitivity.
    test_share : float, default 0.5
        Share of ``mu^2`` spent on the test: ``mu_0 = mu sqrt(test_share)``,
        ``mu_1 = mu sqrt(1 - test_share)`` ([choice]: the papers use ``mu_0 = mu_1``).
    """

    name: ClassVar[str] = "ptr-gdp"
    variant: str = attrs.field(default="bound", validator=pf.validators.choice("bound", "classic"))
    on_fail: str = attrs.field(default="raise", validator=pf.validators.choice("raise", "global"))
    test_share: float = attrs.field(default=0.5, validator=pf.validators.probability)

    def plan_smooth(self, gamma: float, budget: pf.Budget, *, label: str, dimension: int = 1) -> pf.PrivacyEvent:
        """The event: ``GDP(mu, delta)`` with the test/release split and gamma in its details."""
        if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
            raise BudgetError("must be a finite number > 0", path="gamma")
        if not isinstance(budget, pf.GDP):
            raise BudgetError("ptr-gdp takes a GDP(mu, delta) budget", path="budget")
        if not budget.delta > 0:
            raise BudgetError("ptr-gdp needs delta > 0 (it cannot give pure mu-GDP)", path="delta")
        mu_test = budget.mu * math.sqrt(self.test_share)
        mu_release = budget.mu * math.sqrt(1.0 - self.test_share)
        return pf.PrivacyEvent(
            label=label,
            mechanism=self.name,
            budget=budget,
            note=f"propose-test-release ({self.variant}); noise scaled to a privately tested bound",
            details={"gamma": float(gamma), "mu_test": mu_test, "mu_release": mu_release},
        )

    def release_smooth(
        self,
        value: pf.Array,
        bound: float,
        event: pf.PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> pf.SmoothRelease:
        """Test the bound, then release ``value`` plus Gaussian noise (Z_0 is drawn before Z_1)."""
        if not (math.isfinite(bound) and bound > 0):
            raise DataError(f"the smooth bound for '{event.label}' must be finite and > 0", path="bound")
        assert isinstance(event.budget, pf.GDP)
        gamma = event.details["gamma"]
        mu_test = event.details["mu_test"]
        mu_release = event.details["mu_release"]
        z_quantile = float(-ndtri(event.budget.delta))  # z_{1-delta}, accurate for tiny delta
        log_proposed = math.log(bound) + (gamma / mu_test) * (float(rng.standard_normal()) + z_quantile)
        if self.variant == "bound":
            used, passed = _exp(log_proposed), True
        else:
            if proposal is None or not (math.isfinite(proposal) and proposal > 0):
                raise ConfigError("the classic ptr-gdp variant needs a public proposal b_0 > 0", path="proposal")
            passed = log_proposed <= math.log(proposal)
            if passed:
                used = float(proposal)
            elif self.on_fail == "global" and fallback_sensitivity is not None:
                used = float(fallback_sensitivity)
            else:
                raise PTRFailed(f"the test for '{event.label}' failed; nothing was released", path="ptr-gdp")
        scale = used / mu_release
        noisy: pf.Array = value + scale * rng.standard_normal(np.shape(value))
        return pf.SmoothRelease(value=noisy, bound=used, noise_scale=scale, passed=passed)
