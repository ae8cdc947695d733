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

The bound travels as a log end to end, because on tied data it underflows (a median 20 000 ranks from the
next distinct value at beta = 0.5 has ``s(D) = e^-10000``). A proposed ``b`` below ``2^-990`` is raised to it
(more noise: still mu_1-GDP). Below a quarter of the spacing of doubles at the value, ``b`` is smaller than any
distance between distinct doubles there: on the test's good event (``b >= s(D) >= |g(D) - g(D')|``) every
neighbour has the very same double, so the value is released as it is (noise scale 0) - as tight as the
doubles allow, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import BudgetError, ConfigError, PTRFailed
from privframe.privacy import noise
from privframe_std.mechanisms._checks import GaussianNoiseLaw

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = ["LOG_SMALLEST_BOUND", "PTRGDP"]

LOG_SMALLEST_BOUND = math.log(2.0**-990)
"""The smallest bound a lattice release is planned for (its grid, 2^-20 of the noise, stays a normal double); a
smaller proposed bound is raised to it (more noise than needed: still private) or, below a quarter of the
doubles' spacing at the value, releases the value exactly."""


def _log_quarter_spacing(rows: pp.Array) -> pp.Array:
    """Per row, ``ln`` of a quarter of the smallest spacing of doubles at its values (``-inf`` at 0 is avoided:
    the spacing of 0 is the smallest subnormal)."""
    spacing = np.min(np.spacing(np.abs(rows)), axis=1)  # > 0 everywhere: 2^-1074 at 0
    log_quarter: pp.Array = np.log(spacing) - math.log(4.0)
    return log_quarter


@attrs.frozen
class PTRGDP(GaussianNoiseLaw):
    """Propose-test-release with Gaussian noise, recorded as (mu, delta)-GDP.

    Both Gaussian draws are exact discrete Gaussians on public power-of-two grids (as in the ``gaussian``
    mechanism): the noisy ``ln s(D)`` lives on a grid of about 2^-20 of its noise scale and is shifted by
    a whole number of grid steps, at least ``z_{1-delta}`` standard deviations plus two steps, which keeps
    the probability that ``b < s(D)`` below delta (the discrete Gaussian's tail is below the continuous
    one's one step later); the release lives on a grid of about 2^-20 of ``b / mu_1``.

    Parameters
    ----------
    variant : {"bound", "classic"}, default "bound"
        "bound" releases with a privately proposed bound and never fails; "classic" tests a public proposal.
    on_fail : {"raise", "global"}, default "raise"
        Classic variant only: raise ``PTRFailed`` on a failed test, or release with the global sensitivity.
    test_share : float, default 0.5
        Share of ``mu^2`` spent on the test: ``mu_0 = mu sqrt(test_share)``,
        ``mu_1 = mu sqrt(1 - test_share)`` ([choice]: the papers use ``mu_0 = mu_1``).
    exact : bool, default True
        False draws both Gaussians in floating point: for simulations only (the event says so).
    """

    name: ClassVar[str] = "ptr-gdp"
    accepts: ClassVar[Mapping[pp.BudgetKind, pp.BudgetKind]] = MappingProxyType({pp.GDP: pp.GDP})
    variant: str = attrs.field(default="bound", validator=pp.validators.choice("bound", "classic"))
    on_fail: str = attrs.field(default="raise", validator=pp.validators.choice("raise", "global"))
    test_share: float = attrs.field(default=0.5, validator=pp.validators.probability)
    exact: bool = attrs.field(default=True, validator=pp.validators.boolean)

    def plan_smooth(self, gamma: float, budget: pp.Budget, *, label: str, dimension: int = 1) -> pp.PrivacyEvent:
        """The event: ``GDP(mu, delta)`` with the test/release split and gamma in its details."""
        if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
            raise BudgetError("must be a finite number > 0", path="gamma")
        if not isinstance(budget, pp.GDP):
            raise BudgetError("ptr-gdp takes a GDP(mu, delta) budget", path="budget")
        if not budget.delta > 0:
            raise BudgetError("ptr-gdp needs delta > 0 (it cannot give pure mu-GDP)", path="delta")
        details = {
            "gamma": float(gamma),
            "mu_test": budget.mu * math.sqrt(self.test_share),
            "mu_release": budget.mu * math.sqrt(1.0 - self.test_share),
            "dimension": float(dimension),
        }
        note = f"propose-test-release ({self.variant}); noise scaled to a privately tested bound"
        plan: pp.FloatNoise | None = None
        if self.exact:
            note += "; exact discrete Gaussians on power-of-two grids"
        else:
            plan = pp.FloatNoise("gaussian")
            note += "; float noise: for simulations only, not safe against floating-point attacks"
        return pp.PrivacyEvent(label=label, mechanism=self.name, budget=budget, note=note, details=details, noise=plan)

    def release_smooth(
        self,
        value: pp.Array,
        log_bound: float,
        event: pp.PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> pp.SmoothRelease:
        """Test the bound ``exp(log_bound)``, then release ``value`` plus Gaussian noise (the test draws first).

        The bound arrives as ``ln s(D)``, which never underflows: a smooth sensitivity far below the
        smallest double keeps its exact log and the test stays sound.
        """
        values = np.asarray(value, dtype=np.float64)
        batch = self.release_smooth_batch(
            values.reshape(1, -1),
            np.array([log_bound], dtype=np.float64),
            event,
            rng,
            proposal=proposal,
            fallback_sensitivity=fallback_sensitivity,
        )
        if not batch.released[0]:
            raise PTRFailed(f"the test for '{event.label}' failed; nothing was released", path="ptr-gdp")
        return pp.SmoothRelease(
            value=batch.value[0].reshape(values.shape),
            bound=float(batch.bound[0]),
            noise_scale=float(batch.noise_scale[0]),
            passed=bool(batch.passed[0]),
        )

    def release_smooth_batch(
        self,
        values: pp.Array,
        log_bounds: pp.Array,
        event: pp.PrivacyEvent,
        rng: np.random.Generator,
        *,
        proposal: float | None = None,
        fallback_sensitivity: float | None = None,
    ) -> pp.SmoothReleaseBatch:
        """``N`` independent releases at once: row i of ``values`` ``(N, d)`` with bound ``exp(log_bounds[i])``.

        Row i has exactly the law of :meth:`release_smooth` on that row (all the tests draw first, then all
        the releases); a row whose classic test failed without a fallback is not released (NaN value and
        bound, ``released`` False). For audits and simulations that need many releases.
        """
        if not isinstance(event.budget, pp.GDP) or event.mechanism != self.name:
            raise BudgetError("expected an event planned by ptr-gdp", path="event")
        if self.variant == "classic" and (proposal is None or not (math.isfinite(proposal) and proposal > 0)):
            raise ConfigError("the classic ptr-gdp variant needs a public proposal b_0 > 0", path="proposal")
        rows = np.asarray(values, dtype=np.float64)
        logs = np.asarray(log_bounds, dtype=np.float64).reshape(-1)
        if rows.ndim != 2 or rows.shape[0] != logs.shape[0]:
            raise ConfigError("expected values (N, d) and N log bounds", path="values")
        count = logs.shape[0]
        details = event.details
        float_noise = event.simulated
        log_proposed = self._proposed(logs, event, rng, float_noise)
        passed = np.ones(count, dtype=bool)
        exact = np.zeros(count, dtype=bool)
        if self.variant == "bound":
            with np.errstate(over="ignore"):
                used = np.exp(np.maximum(log_proposed, LOG_SMALLEST_BOUND))
            exact = log_proposed < _log_quarter_spacing(rows)
        else:
            assert proposal is not None
            passed = log_proposed <= math.log(proposal)
            fallback = fallback_sensitivity if self.on_fail == "global" else None
            used = np.where(passed, float(proposal), math.nan if fallback is None else float(fallback))
        released = ~np.isnan(used)
        scale = used / details["mu_release"]
        # An infinite bound (ln s + noise beyond the doubles) makes the release pure noise: the mechanism
        # outputs the data-independent "no information" value, NaN (methods report the whole range). A bound
        # below a quarter of the doubles' spacing at the value releases the value itself: every neighbour
        # within it has the same double (module docstring).
        usable = released & np.isfinite(scale) & (scale > 0) & ~exact
        out = np.full(rows.shape, math.nan)
        noise_scale = np.where(released, math.inf, math.nan)
        out[exact] = rows[exact]
        noise_scale[exact] = 0.0
        if np.any(usable):
            chosen = np.flatnonzero(usable)
            if float_noise:
                out[chosen] = rows[chosen] + scale[chosen, np.newaxis] * rng.standard_normal(rows[chosen].shape)
                noise_scale[chosen] = scale[chosen]
            else:
                dimension = max(1, int(details.get("dimension", rows.shape[1])))
                plans = [noise.plan_gaussian(float(b), details["mu_release"], dimension) for b in used[chosen]]
                out[chosen] = noise.release_rows(rows[chosen], plans, rng)
                noise_scale[chosen] = [plan.scale for plan in plans]
        return pp.SmoothReleaseBatch(value=out, bound=used, noise_scale=noise_scale, passed=passed, released=released)

    def _proposed(
        self, log_bounds: pp.Array, event: pp.PrivacyEvent, rng: np.random.Generator, float_noise: bool
    ) -> pp.Array:
        """``ln b``: ``ln s(D)`` plus test noise, shifted up so that ``b >= s(D)`` except with probability delta."""
        assert isinstance(event.budget, pp.GDP)
        gamma, mu_test = event.details["gamma"], event.details["mu_test"]
        z_quantile = float(-special.ndtri(event.budget.delta))  # z_{1-delta}, accurate for tiny delta
        if float_noise:
            proposed: pp.Array = log_bounds + (gamma / mu_test) * (rng.standard_normal(log_bounds.shape) + z_quantile)
            return proposed
        plan = noise.plan_gaussian(gamma, mu_test)
        noisy = noise.release(log_bounds, plan, rng)
        # noisy >= ln s - g/2 + g Y, and P(Y <= -y) <= Phi(-(y - 1) / sd) for the discrete Gaussian of
        # standard deviation sd (in grid steps): y = ceil(sd z) + 2 gives P(ln b < ln s) <= delta.
        steps = math.ceil(math.sqrt(plan.t * plan.q) * z_quantile) + 2
        shifted: pp.Array = noisy + plan.grid * steps
        return shifted
