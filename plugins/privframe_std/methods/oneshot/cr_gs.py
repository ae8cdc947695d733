"""CR-GS: the one-shot confidence region with global sensitivity under mu-GDP (``docs/algorithms.md``, section 3.1)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.plugin.evaluation import check_sensitivities
from privframe_std.methods.oneshot.radius import RADIUS_RULES, convolved_quantile, noise_floor
from privframe_std.methods.oneshot.roots import DEFAULT_SIZES, ORDER_STATISTIC_RULES, compute_roots, fpc_factor

__all__ = ["CRGS", "quieter_spelling"]


def quieter_spelling(budget: pp.ApproxDP, releases: int = 2) -> str:
    """``"laplace"`` or ``"gaussian"``: the mechanism whose noise is smaller when ``releases`` equal releases of
    the same sensitivity share an (eps, delta) budget (public inputs only).

    Laplace at ``eps / releases`` each has standard deviation ``sqrt(2) releases Delta / eps``; Gaussian noise
    at ``mu / sqrt(releases)`` each, mu the largest whose mu-GDP implies (eps, delta), has ``sqrt(releases)
    Delta / mu``. A tie goes to Laplace: pure eps-DP implies (eps, delta)-DP, so the (eps, delta) call is then
    the pure call, and never wider than it.
    """
    if budget.delta <= 0:
        return "laplace"
    mu = pp.accounting.gdp_mu_for(budget.epsilon, budget.delta)
    laplace_sd = math.sqrt(2.0) * releases / budget.epsilon
    gaussian_sd = math.sqrt(releases) / mu
    return "laplace" if laplace_sd <= gaussian_sd else "gaussian"


def _gdp_mu(budget: pp.Budget) -> float | None:
    """The mu of a GDP budget or the largest one implying an (eps, delta > 0) budget; None for a pure one."""
    if isinstance(budget, pp.PureDP) or (isinstance(budget, pp.ApproxDP) and budget.delta == 0):
        return None
    return pp.as_gdp(budget).mu


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
    distance from the *released* centre once its own noise is added; it is never below a positive floor,
    the alpha quantile of the centre noise's radius (``docs/algorithms.md`` 3.5): calibrated at every
    budget, never of zero width.
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

    radius: str = attrs.field(default="noise-aware", validator=pp.validators.choice(*RADIUS_RULES))
    fpc: bool = attrs.field(default=True, validator=pp.validators.boolean)
    check_consistency: bool = attrs.field(default=True, validator=pp.validators.boolean)
    order_statistic: str = attrs.field(default="inverted_cdf", validator=pp.validators.choice(*ORDER_STATISTIC_RULES))

    @property
    def needs(self) -> pp.MethodNeeds:
        """A sampler, an additive mechanism given the accountant's per-call share, and (with
        ``check_consistency``) a statistic whose limit law is centred; accepts a Dask array with a decomposable
        statistic (``docs/cluster.md``)."""
        centred = {pp.StatisticNeed.CENTRED} if self.check_consistency else set()
        return pp.MethodNeeds(statistic=centred, distributed=True)

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """WOR resamples (m = n / ln n, B = 1000); Gaussian noise and the GDP accountant, or, for a pure
        ``PureDP`` budget, Laplace noise and the ``approx-dp`` accountant (an even split of epsilon). An
        ``ApproxDP(eps, delta)`` budget is spent on whichever meets it more quietly (:func:`quieter_spelling`):
        Laplace noise at eps / 2 per release, or Gaussian noise at the largest mu whose mu-GDP implies it."""
        if isinstance(budget, pp.PureDP) or (isinstance(budget, pp.ApproxDP) and quieter_spelling(budget) == "laplace"):
            return {"sampler": "wor", "mechanism": "laplace", "accountant": "approx-dp", **DEFAULT_SIZES}
        return {"sampler": "wor", "mechanism": "gaussian", "accountant": "gdp", **DEFAULT_SIZES}

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Refuse, before the data are read, a statistic without a finite global sensitivity at n or m (none
        at all, or bounds so wide that it overflows), in the coordinates the run computes it in."""
        if design is not None:
            check_sensitivities(
                statistic, call.bounds, (design.n, design.m), needed_by=self.name, shift=self.needs.shift
            )

    def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pp.IntervalResult | pp.RegionResult:
        """Compute the region and its ledger."""
        # Two equal releases whose composition fits the budget, in the accountant's unit: mu / sqrt 2 under
        # GDP, epsilon / 2 under pure or (epsilon, delta) accounting. The mechanism calibrates to its share.
        half = ctx.accountant.per_call(ctx.budget, 2)
        sample_rng, center_rng, radius_rng, simulation_rng = ctx.generators(4)
        roots = compute_roots(ctx, sample_rng, self.order_statistic)
        delta_n, delta_m = ctx.sensitivity(roots.n), ctx.sensitivity(roots.m)
        factor = fpc_factor(self.fpc, ctx, roots)
        scale = factor * roots.tau_m
        radius_sensitivity = scale * (roots.kappa * delta_m + delta_n)
        center_event = ctx.plan(delta_n, half, label="center", dimension=roots.theta_hat.shape[0])
        center = ctx.release(roots.theta_hat, center_event, rng=center_rng)
        nu_n = center_event.noise_scale or 0.0
        diagnostics: dict[str, object] = {"radius": self.radius}
        radius_event = ctx.plan(radius_sensitivity, half, label="radius")
        quantile, floor = scale * roots.r, 0.0
        if self.radius == "noise-aware":
            # The laws of both noises are public before anything is released; drawn from the mechanism itself
            # when it does not describe them (pp.noise_law), from the simulation stream only.
            center_law, radius_law = (
                pp.noise_law(ctx.mechanism, center_event),
                pp.noise_law(ctx.mechanism, radius_event),
            )
            offsets = roots.tau_n * center_law.draws(roots.deviations.shape, simulation_rng)
            shifts = radius_law.draws((roots.B,), simulation_rng)
            quantile = convolved_quantile(
                scale * roots.deviations, offsets, ctx.confidence, self.order_statistic, shifts
            )
            # The floor only keeps the width positive: the convolved quantile is already calibrated to the
            # confidence, and a floor at the confidence quantile of ||c_i|| (bound 12-21% of the time at
            # epsilon near 1) made a 90% interval cover 0.93-0.99 (docs/algorithms.md 3.5).
            floor = noise_floor(offsets, 1.0 - ctx.confidence, self.order_statistic)
            diagnostics["floor"] = floor / roots.tau_n
            diagnostics["noise_described"] = center_law.described
        q_noisy = ctx.release(np.array([quantile]), radius_event, rng=radius_rng)
        q_tilde = max(float(q_noisy[0]), floor)
        return ctx.ball(
            center,
            q_tilde / roots.tau_n,
            parameters={
                "m": roots.m,
                "B": roots.B,
                "kappa": roots.kappa,
                "mu": _gdp_mu(ctx.budget),
                "per_release": str(half),
                "mechanism": ctx.mechanism.name,
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
