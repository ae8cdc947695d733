"""CR-SS: the one-shot confidence region from smooth sensitivity, (mu, delta)-GDP (``docs/algorithms.md`` 3.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import BudgetError
from privframe_std.methods.oneshot.radius import (
    RADIUS_RULES,
    DescribedSmoothMechanism,
    convolved_quantile,
    noise_floor,
    split,
)
from privframe_std.methods.oneshot.roots import (
    DEFAULT_SIZES,
    ORDER_STATISTIC_RULES,
    compute_smooth_roots,
    fpc_factor,
)

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = ["BETA_RULES", "CRSS", "cr_ss_beta", "cr_ss_budget", "noise_optimal_beta"]

BETA_RULES = ("noise-optimal", "paper")
"""How CR-SS picks the smoothness beta: ``noise-optimal`` (default) or the published rule."""


def cr_ss_beta(mu: float, delta: float, B: int, kappa: int, rho: float) -> float:
    """The published rule ``beta = (1 / (2 kappa)) min{1, mu / (4 sqrt(ln(B / (delta rho))))}``."""
    return min(1.0, mu / (4.0 * math.sqrt(math.log(B / (delta * rho))))) / (2.0 * kappa)


def noise_optimal_beta(mu: float, delta: float, kappa: int) -> float:
    """``beta = mu_0 g / kappa`` with ``g = (sqrt(z^2 + 4) - z) / 2``, ``mu_0 = mu / 2``, ``z = z_{1 - delta/2}``.

    PTR-GDP releases with noise ``b / mu_1``, ``b = s exp(gamma (Z_0 + z) / mu_0)``, at each release's
    ``GDP(mu / sqrt 2, delta / 2)`` with ptr-gdp's default test share (``mu_0 = mu / 2``). For a statistic whose
    smooth sensitivity falls like ``1 / beta`` (a median: ``max_k k e^{-k beta}`` gaps), the expected bound
    ``E b ~ (1 / beta) exp(gamma z / mu_0 + gamma^2 / (2 mu_0^2))`` with the radius's ``gamma = kappa beta`` is
    smallest at this beta. Public quantities only; privacy holds for every beta (``docs/algorithms.md`` 3.4).
    """
    z = float(-special.ndtri(delta / 2.0))
    g = (math.sqrt(z * z + 4.0) - z) / 2.0
    return (mu / 2.0) * g / kappa


def cr_ss_budget(budget: pp.Budget | None) -> tuple[pp.GDP, str]:
    """The (mu, delta)-GDP budget CR-SS runs at, and a note on any conversion.

    ``GDP(mu, delta)`` is used as given. ``ApproxDP(eps, delta)`` becomes ``GDP(mu*, delta / 2)`` with mu* the
    largest mu whose tight curve gives ``(eps, delta / 2)`` ([choice]: half of delta to the PTR tests), which
    implies (eps, delta)-DP. A GDP budget without delta, or a pure-DP budget, is refused: CR-SS cannot give
    them and never weakens the guarantee silently.
    """
    if budget is None:
        raise BudgetError("cr-ss is private and needs a budget", path="budget")
    if isinstance(budget, pp.GDP):
        if budget.delta <= 0:
            raise BudgetError(
                "cr-ss gives (mu, delta)-GDP, not pure mu-GDP; pass pf.GDP(mu, delta=...) with delta > 0", path="budget"
            )
        return budget, ""
    if isinstance(budget, pp.ApproxDP) and budget.delta > 0:
        half = budget.delta / 2.0
        return pp.GDP(pp.accounting.gdp_mu_for(budget.epsilon, half), delta=half), f"converted from {budget}"
    raise BudgetError("cr-ss needs pf.GDP(mu, delta=...) or pf.ApproxDP(epsilon, delta) with delta > 0", path="budget")


@attrs.frozen
class CRSS:
    """One-shot private confidence region from smooth sensitivity ((mu, delta)-GDP; cost independent of B).

    The centre ``theta(D)`` and the radius order statistic ``r`` are each released once through PTR-GDP at
    ``GDP(mu / sqrt 2, delta / 2)`` (test and release at ``mu / 2`` each), with smoothness
    ``beta = (1/(2 kappa)) min{1, mu / (4 sqrt(ln(B / (delta rho))))}`` (rho = 1/n for WOR). The radius bound is
    ``s(D) = max_i SS_beta(D[S_i]) (e^{kappa beta} - 1)/(e^beta - 1) + SS_beta(D)`` with log-smoothness
    ``kappa beta``. The region is the ball of radius ``tau_m r_tilde / tau_n``.

    With ``radius="noise-aware"`` (the default) ``r`` is the ``1 - alpha + gamma`` quantile of the roots
    convolved with the released centre's noise, the radius adds the radius noise's ``1 - gamma`` quantile
    and is never below the centre noise's own (1 - alpha) radius (``docs/algorithms.md`` 3.5); the smooth
    bound is unchanged, as each convolved root moves no more than the root. ``radius="paper"`` is the
    published ``max(r_tilde, 0)`` with r the (1 - alpha) root quantile, for reproduction.

    Parameters
    ----------
    radius : {"noise-aware", "paper"}, default "noise-aware"
        The radius construction (see above). Privacy is the same for both.
    noise_share : float, default 0.5
        Noise-aware radius only: the share ``gamma / alpha`` of the miscoverage spent on the radius noise
        (whose scale is only known on release, so it is covered by its upper quantile, not convolved).
    beta : {"noise-optimal", "paper"}, default "noise-optimal"
        The smoothness rule: :func:`noise_optimal_beta` minimises the PTR release noise from public
        quantities; "paper" is :func:`cr_ss_beta`. Privacy is the same for both.
    fpc : bool, default True
        Finite-population correction for without-replacement subsamples of sqrt(k)-rate statistics: the
        root and its bound are multiplied by ``1 / sqrt(1 - m / n)`` (privacy unchanged: value and bound scale
        together, gamma is unchanged). Ignored for other samplers and rates (``fpc_factor`` = 1).
    center_proposal, radius_proposal : float, optional
        Public proposals b_0 for ``ptr-gdp`` with ``variant="classic"`` (the radius proposal bounds the
        change of the root r, before the tau_m scaling).
    report_nonprivate : bool, default False
        Add the non-private smooth bounds s(D) and r to the diagnostics, for research and debugging only:
        these are data-dependent values that must never be published.
    order_statistic : str, default "inverted_cdf"
        Which root is the radius: a numpy quantile method that returns one of the roots
        ("inverted_cdf": the ``ceil((1 - alpha) B)``-th smallest [choice]; or "closest_observation", "lower",
        "higher", "nearest"). Each fixes the rank from B and alpha alone, so privacy is unaffected.
    """

    name: ClassVar[str] = "cr-ss"

    radius: str = attrs.field(default="noise-aware", validator=pp.validators.choice(*RADIUS_RULES))
    beta: str = attrs.field(default="noise-optimal", validator=pp.validators.choice(*BETA_RULES))
    noise_share: float = attrs.field(default=0.5, validator=pp.validators.probability)
    fpc: bool = attrs.field(default=True, validator=pp.validators.boolean)
    center_proposal: float | None = attrs.field(default=None, validator=pp.validators.optional(pp.validators.positive))
    radius_proposal: float | None = attrs.field(default=None, validator=pp.validators.optional(pp.validators.positive))
    report_nonprivate: bool = attrs.field(default=False, validator=pp.validators.boolean)
    order_statistic: str = attrs.field(default="inverted_cdf", validator=pp.validators.choice(*ORDER_STATISTIC_RULES))

    @property
    def needs(self) -> pp.MethodNeeds:
        """A sampler, a smooth-bound mechanism given a (mu, delta)-GDP budget (one that describes its noise, for
        the noise-aware radius), and a statistic with a smooth sensitivity."""
        mechanism = pp.SmoothMechanism if self.radius == "paper" else DescribedSmoothMechanism
        return pp.MethodNeeds(
            mechanism=mechanism,
            statistic={pp.StatisticNeed.SMOOTH_SENSITIVITY},
            mechanism_budget=pp.GDP,
        )

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """WOR resamples (m = n / ln n, B = 1000), PTR-GDP, the GDP accountant.

        A budget cr-ss cannot honour (no delta) is refused here, when the pipeline is built.
        """
        if budget is not None:
            cr_ss_budget(budget)
        return {"sampler": "wor", "mechanism": "ptr-gdp", "accountant": "gdp", **DEFAULT_SIZES}

    def run(self, ctx: pp.RunContext[pp.SmoothMechanism]) -> pp.IntervalResult | pp.RegionResult:
        """Compute the region and its ledger."""
        gdp, conversion = cr_ss_budget(ctx.budget)
        statistic = ctx.statistic
        n = ctx.n
        noise_aware = self.radius != "paper"
        sample_rng, center_rng, radius_rng, simulation_rng = ctx.generators(4)

        def beta_rule(resamples: pp.Resamples) -> tuple[float, float]:
            rho = resamples.rho if resamples.rho is not None else 1.0 / n
            if self.beta == "paper":
                return cr_ss_beta(gdp.mu, gdp.delta, resamples.B, resamples.kappa, rho), rho
            return noise_optimal_beta(gdp.mu, gdp.delta, resamples.kappa), rho

        smooth = compute_smooth_roots(ctx, sample_rng, beta_rule, self.order_statistic)
        roots, beta = smooth.roots, smooth.beta
        kappa = roots.kappa
        factor = fpc_factor(self.fpc, ctx, roots)
        # ln s(D) = ln(fpc) + logaddexp(ln max_i SS_i + ln((e^{kappa beta} - 1)/(e^beta - 1)), ln SS(D)), in logs
        # throughout: the smooth bounds themselves can underflow on tied data.
        log_growth = math.log(math.expm1(kappa * beta) / math.expm1(beta))
        log_radius_bound = math.log(factor) + float(
            np.logaddexp(smooth.log_max_resample_bound + log_growth, smooth.log_center_bound)
        )
        delta_n = statistic.sensitivity(n, ctx.bounds)
        delta_m = statistic.sensitivity(roots.m, ctx.bounds)
        radius_fallback = None if delta_n is None or delta_m is None else factor * (kappa * delta_m + delta_n)
        half = pp.GDP(gdp.mu / math.sqrt(2.0), delta=gdp.delta / 2.0)
        center, center_event = ctx.release_smooth(
            roots.theta_hat,
            smooth.log_center_bound,
            beta,
            half,
            label="center",
            rng=center_rng,
            proposal=self.center_proposal,
            fallback_sensitivity=delta_n,
        )
        shares = split(ctx.confidence, self.noise_share)
        value, floor = factor * roots.r, 0.0
        if noise_aware:
            # Offsets in root units: the root tau_m dev_i stands for tau_n (theta_hat - theta).
            center_sd = center.noise_scale if math.isfinite(center.noise_scale) else 0.0
            center_law = pp.noise_law(ctx.mechanism, attrs.evolve(center_event, noise_scale=center_sd))
            offsets = (roots.tau_n / roots.tau_m) * center_law.draws(roots.deviations.shape, simulation_rng)
            value = convolved_quantile(factor * roots.deviations, offsets, shares.sampling_level, self.order_statistic)
            floor = noise_floor(offsets, ctx.confidence, self.order_statistic)
        radius, radius_event = ctx.release_smooth(
            np.array([value]),
            log_radius_bound,
            kappa * beta,
            half,
            label="radius",
            rng=radius_rng,
            proposal=self.radius_proposal,
            fallback_sensitivity=radius_fallback,
        )
        r_tilde = float(radius.value[0])
        margin = 0.0
        if not noise_aware:
            r_upper = max(r_tilde, 0.0)
        else:
            radius_law = pp.noise_law(ctx.mechanism, attrs.evolve(radius_event, noise_scale=radius.noise_scale))
            margin = radius_law.quantile(1.0 - shares.noise, simulation_rng)
            r_upper = max(r_tilde + margin, floor) if math.isfinite(r_tilde + margin) else math.nan
        q_tilde = roots.tau_m * r_upper
        diagnostics: dict[str, object] = {
            "beta": beta,
            "rho": smooth.rho,
            "gamma_center": beta,
            "gamma_radius": kappa * beta,
            "proposed_bound_center": center.bound,
            "proposed_bound_radius": radius.bound,
            "center_noise": center.noise_scale,
            "radius_noise": radius.noise_scale,
            "ptr_passed": center.passed and radius.passed,
            "fpc_factor": factor,
            "radius": self.radius,
            "tau_n": roots.tau_n,
            "tau_m": roots.tau_m,
            "mu_test": center_event.details["mu_test"],
            "mu_release": center_event.details["mu_release"],
        }
        if noise_aware:
            diagnostics.update(
                {
                    "alpha_sampling": shares.sampling,
                    "alpha_noise": shares.noise,
                    "noise_margin": roots.tau_m * margin / roots.tau_n,
                    "floor": roots.tau_m * floor / roots.tau_n,
                }
            )
        if self.report_nonprivate:
            diagnostics["nonprivate"] = {
                "s_center": math.exp(smooth.log_center_bound),
                "s_radius": math.exp(log_radius_bound),
                "max_resample_bound": math.exp(smooth.log_max_resample_bound),
                "r": value,
            }
        return ctx.ball(
            center.value,
            q_tilde / roots.tau_n,
            parameters={
                "m": roots.m,
                "B": roots.B,
                "kappa": kappa,
                "mu": gdp.mu,
                "delta": gdp.delta,
                "budget": str(ctx.budget) if not conversion else f"{ctx.budget} ({conversion} to {gdp})",
                "fpc": self.fpc,
                "radius": self.radius,
                "noise_share": self.noise_share,
                "beta_rule": self.beta,
            },
            diagnostics=diagnostics,
        )
