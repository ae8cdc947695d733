"""CR-GS: the one-shot confidence region with global sensitivity under mu-GDP (algorithms.md 3.1)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError
from privframe_std._validation import choice
from privframe_std.methods._oneshot import ORDER_STATISTIC_RULES, compute_roots, fpc_factor, require

__all__ = ["CRGS"]


@attrs.frozen
class CRGS:
    """One-shot private confidence region from global sensitivity (mu-GDP; the cost does not grow with B).

    Releases two numbers, each at ``mu / sqrt(2)``-GDP through the mechanism (Gaussian by default):
    the centre ``theta_hat + nu_n Z_2`` with ``nu_n = sqrt(2) Delta_n / mu`` and the radius
    ``Q + sigma_m Z_1`` with ``sigma_m = sqrt(2) tau_m (kappa Delta_m + Delta_n) / mu`` (clamped at 0).
    The region is the ball of radius ``Q_tilde / tau_n`` about the centre. An ``ApproxDP`` budget is
    honoured through the largest mu-GDP that implies it.

    Parameters
    ----------
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
    uses: ClassVar[frozenset[str]] = frozenset({"sampler", "mechanism", "accountant"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"sampler": "wor", "mechanism": "gaussian", "accountant": "gdp"}
    )
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({"m": "n/log(n)", "B": 1000})
    private: ClassVar[bool] = True

    fpc: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    order_statistic: str = attrs.field(default="inverted_cdf", validator=choice(*ORDER_STATISTIC_RULES))

    def run(
        self,
        data: pf.Array,
        parts: pf.Parts,
        budget: pf.Budget | None,
        confidence: float,
        rng: np.random.SeedSequence,
    ) -> pf.RegionResult:
        """Compute the region and its ledger."""
        sampler = require(parts.sampler, "sampler", self.name, pf.Sampler)
        mechanism = require(parts.mechanism, "mechanism", self.name, pf.Mechanism)
        accountant = require(parts.accountant, "accountant", self.name, pf.Accountant)
        assert isinstance(sampler, pf.Sampler)  # checked by require; narrows the type
        assert isinstance(mechanism, pf.Mechanism)
        assert isinstance(accountant, pf.Accountant)
        if budget is None:
            raise pf.BudgetError("budget: cr-gs is private and needs a budget")
        gdp = pf.as_gdp(budget)
        statistic = parts.statistic
        sample_rng, center_rng, radius_rng = pf.spawn_generators(rng, 3)

        roots = compute_roots(statistic, data, sampler, confidence, sample_rng, self.order_statistic)
        delta_n = statistic.sensitivity(roots.n, parts.bounds)
        delta_m = statistic.sensitivity(roots.m, parts.bounds)
        if delta_n is None or delta_m is None or not (math.isfinite(delta_n) and math.isfinite(delta_m)):
            raise ConfigError(
                f"method: cr-gs needs a finite global sensitivity and statistic '{statistic.name}' has none"
            )
        factor = fpc_factor(self.fpc, statistic, roots.n, roots.m, roots.replace)
        radius_sensitivity = factor * roots.tau_m * (roots.kappa * delta_m + delta_n)
        half = pf.GDP(gdp.mu / math.sqrt(2))

        spender = pf.PrivacySpender(accountant, budget)
        center, center_event = spender.release(
            mechanism, roots.theta_hat, delta_n, half, label="center", rng=center_rng
        )
        q_noisy, radius_event = spender.release(
            mechanism,
            np.array([factor * roots.tau_m * roots.r]),
            radius_sensitivity,
            half,
            label="radius",
            rng=radius_rng,
        )
        q_tilde = max(float(q_noisy[0]), 0.0)
        ledger = spender.ledger()
        return pf.RegionResult(
            center=center,
            radius=q_tilde / roots.tau_n,
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": statistic.name,
                "sampler": sampler.name,
                "mechanism": mechanism.name,
                "accountant": accountant.name,
                "n": roots.n,
                "m": roots.m,
                "B": roots.B,
                "kappa": roots.kappa,
                "mu": gdp.mu,
                "budget": str(budget),
                "fpc": self.fpc,
            },
            diagnostics={
                "delta_n": delta_n,
                "delta_m": delta_m,
                "tau_n": roots.tau_n,
                "tau_m": roots.tau_m,
                "radius_sensitivity": radius_sensitivity,
                "nu_n": center_event.noise_scale,
                "sigma_m": radius_event.noise_scale,
                "fpc_factor": factor,
            },
            privacy=ledger,
        )
