"""CR-GS: the one-shot confidence region with global sensitivity under mu-GDP (``docs/algorithms.md``, section 3.1)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError
from privframe_std.methods.oneshot.radius import RADIUS_RULES, convolved_quantile, described_noise, noise_floor
from privframe_std.methods.oneshot.roots import DEFAULT_SIZES, ORDER_STATISTIC_RULES, compute_roots, fpc_factor

__all__ = ["CRGS", "NOT_CENTRED"]

NOT_CENTRED = frozenset({"ks"})
"""Statistics whose sampling law is not centred at the parameter: a ball about the estimate misses."""


@attrs.frozen
class CRGS:
    """One-shot private confidence region from global sensitivity (mu-GDP; the cost does not grow with B).

    Releases two numbers, each at half the budget in the accountant's unit (``mu / sqrt(2)``-GDP with the
    default Gaussian mechanism and ``gdp`` accountant; ``epsilon / 2`` with ``laplace`` and ``approx-dp``, the
    defaults for a ``PureDP`` budget, or with any pure-DP mechanism and ``accountant="approx-dp"``):
    the centre ``theta_hat + nu_n Z_2`` with ``nu_n = sqrt(2) Delta_n / mu`` and a root quantile ``Q`` plus
    noise of scale ``sigma_m = sqrt(2) tau_m (kappa Delta_m + Delta_n) / mu``. The region is the ball of
    radius ``Q_tilde / tau_n`` about the centre. An ``ApproxDP`` budget is honoured through the largest
    mu-GDP that implies it.

    With ``radius="noise-aware"`` (the default) ``Q`` is the (1 - alpha) quantile of the roots convolved
    with both noises: ``||dev_i + c_i|| - e_i`` with ``c_i`` draws of the centre's noise and ``e_i`` of the
    radius's (their scales are public before anything is released), so the released radius covers the
    distance from the *released* centre once its own noise is added; it is never below the centre noise's
    own (1 - alpha) radius (``docs/algorithms.md`` 3.5): calibrated at every budget, never of zero width.
    ``radius="paper"`` is the published ``max(Q + sigma_m Z_1, 0)`` with ``Q`` the (1 - alpha) root
    quantile, for reproduction: at small budgets it under-covers and can have zero width.

    Parameters
    ----------
    radius : {"noise-aware", "paper"}, default "noise-aware"
        The radius construction (see above). Privacy is the same for both.
    check_consistency : bool, default True
        Refuse statistics whose limit law is not centred (``ks``: a ball about the estimate covered 0.81 at
        nominal 0.90) with a ``ConfigError`` naming what works; False runs them, to reproduce the papers.
    fpc : bool, default True
        Finite-population correction (beyond the paper) for without-replacement subsamples of sqrt(k)-rate
        statistics: ``Q`` and its sensitivity are multiplied by ``1 / sqrt(1 - m / n)``, so privacy is
        unchanged. Ignored (factor 1) for with-replacement samplers and other rates.
    order_statistic : str, default "inverted_cdf"
        Which root is the radius: a numpy quantile method that returns one of the roots
        ("inverted_cdf": the ``ceil((1 - alpha) B)``-th smallest [choice]; or "closest_observation", "lower",
        "higher", "nearest"). Each fixes the rank from B and alpha alone, so privacy is unaffected.
    """

    name: ClassVar[str] = "cr-gs"
    needs: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"sampler": pf.Sampler, "mechanism": pf.Mechanism, "accountant": pf.Accountant}
    )
    private: ClassVar[bool] = True
    distributed: ClassVar[bool] = True
    """Accepts a Dask array with a decomposable statistic (``docs/cluster.md``)."""

    radius: str = attrs.field(default="noise-aware", validator=pf.validators.choice(*RADIUS_RULES))
    fpc: bool = attrs.field(default=True, validator=pf.validators.boolean)
    check_consistency: bool = attrs.field(default=True, validator=pf.validators.boolean)
    order_statistic: str = attrs.field(default="inverted_cdf", validator=pf.validators.choice(*ORDER_STATISTIC_RULES))

    def defaults(self, budget: pf.Budget | None, confidence: float) -> Mapping[str, object]:
        """WOR resamples (m = n / ln n, B = 1000); Gaussian noise and the GDP accountant, or, for a pure
        ``PureDP`` budget, Laplace noise and the ``approx-dp`` accountant (an even split of epsilon)."""
        if isinstance(budget, pf.PureDP):
            return {"sampler": "wor", "mechanism": "laplace", "accountant": "approx-dp", **DEFAULT_SIZES}
        return {"sampler": "wor", "mechanism": "gaussian", "accountant": "gdp", **DEFAULT_SIZES}

    def run(self, ctx: pf.RunContext) -> pf.RegionResult:
        """Compute the region and its ledger."""
        # Two equal releases whose composition fits the budget, in the accountant's unit: mu / sqrt 2 under
        # GDP, epsilon / 2 under pure or (epsilon, delta) accounting. The mechanism calibrates to its share.
        half = ctx.accountant.per_call(ctx.budget, 2)
        if self.check_consistency and ctx.statistic.name in NOT_CENTRED:
            raise ConfigError(
                f"cr-gs draws a ball about the estimate, but '{ctx.statistic.name}' has a limit law that is not "
                "centred (measured coverage 0.81 at nominal 0.90); use privsub (interval='basic') or dette-graw",
                path="method",
            )
        noise_law = described_noise(ctx.mechanism, self.name) if self.radius == "noise-aware" else None
        sample_rng, center_rng, radius_rng, simulation_rng = ctx.generators(4)
        roots = compute_roots(ctx, sample_rng, self.order_statistic)
        delta_n, delta_m = ctx.sensitivity(roots.n), ctx.sensitivity(roots.m)
        factor = fpc_factor(self.fpc, ctx, roots)
        scale = factor * roots.tau_m
        radius_sensitivity = scale * (roots.kappa * delta_m + delta_n)
        center, center_event = ctx.release(roots.theta_hat, delta_n, half, label="center", rng=center_rng)
        nu_n = center_event.noise_scale or 0.0
        diagnostics: dict[str, object] = {"radius": self.radius}
        sigma_m = ctx.additive_mechanism.plan(radius_sensitivity, half, label="radius").noise_scale or 0.0
        quantile, floor = scale * roots.r, 0.0
        if noise_law is not None:
            offsets = roots.tau_n * noise_law.noise_draws(nu_n, roots.deviations.shape, simulation_rng)
            shifts = noise_law.noise_draws(sigma_m, (roots.B,), simulation_rng)
            quantile = convolved_quantile(
                scale * roots.deviations, offsets, ctx.confidence, self.order_statistic, shifts
            )
            floor = noise_floor(offsets, ctx.confidence, self.order_statistic)
            diagnostics["floor"] = floor / roots.tau_n
        q_noisy, radius_event = ctx.release(
            np.array([quantile]), radius_sensitivity, half, label="radius", rng=radius_rng
        )
        q_tilde = max(float(q_noisy[0]), floor)
        return ctx.region(
            center,
            q_tilde / roots.tau_n,
            parameters={
                "m": roots.m,
                "B": roots.B,
                "kappa": roots.kappa,
                "mu": pf.as_gdp(ctx.budget).mu if not isinstance(ctx.budget, pf.PureDP) else None,
                "per_release": str(half),
                "fpc": self.fpc,
                "radius": self.radius,
            },
            diagnostics={
                **diagnostics,
                "delta_n": delta_n,
                "delta_m": delta_m,
                "tau_n": roots.tau_n,
                "tau_m": roots.tau_m,
                "radius_sensitivity": radius_sensitivity,
                "nu_n": nu_n,
                "sigma_m": radius_event.noise_scale,
                "fpc_factor": factor,
            },
        )
