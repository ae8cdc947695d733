"""Dette-Graw: the private m-out-of-n bootstrap under GDP (``docs/algorithms.md``, section 7), a baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe.errors import ConfigError

__all__ = ["DetteGraw", "dette_graw_mu0", "inclusion_probability"]


def inclusion_probability(n: int, m: int) -> float:
    """``p = 1 - (1 - 1/n)^m``: the chance that a given record is in an m-out-of-n resample."""
    return -math.expm1(m * math.log1p(-1.0 / n))


def dette_graw_mu0(calibration: str, mu_boot: float, B: int, p: float, kappa: int) -> float:
    """Per-release GDP parameter mu_0 of the B bootstrap releases.

    ``"clt"``: ``sqrt(ln(1 + mu_boot^2 / (p^2 B)))`` (the subsampled-GDP central limit theorem, asymptotic);
    ``"composition"``: ``mu_boot / (kappa sqrt(B))`` (exact: group privacy over kappa copies, B-fold composition).
    """
    if calibration == "clt":
        return math.sqrt(math.log1p(mu_boot**2 / (p**2 * B)))
    if calibration == "composition":
        return mu_boot / (kappa * math.sqrt(B))
    raise ConfigError("must be 'clt' or 'composition'", path="calibration")


@attrs.frozen
class DetteGraw:
    """Private m-out-of-n bootstrap (Dette and Graw, 2025): a noisy centre plus B noisy resample values.

    With ``mu_c = sqrt(share) mu`` and ``mu_boot = sqrt(1 - share) mu``: the centre is
    ``theta(D) + (Delta_n / mu_c) Z`` and each of the B releases is ``theta(D*_b) + (Delta_m / mu_0) Z_b`` on an
    m-out-of-n resample drawn with replacement. The basic interval is
    ``[theta_tilde - q_{1-alpha/2} / tau_n, theta_tilde - q_{alpha/2} / tau_n]`` with q the quantiles of
    ``tau_m (t_b - theta_tilde)``. The privacy cost of the releases grows with B: mu_0 shrinks like
    ``1 / sqrt(B)``.

    Parameters
    ----------
    calibration : {"clt", "composition"}, default "clt"
        How mu_0 is set. "clt": ``mu_0 = sqrt(ln(1 + mu_boot^2 / (p^2 B)))``, ``p = 1 - (1 - 1/n)^m``, from the
        subsampled-GDP central limit theorem; the guarantee is asymptotic and the ledger flags it.
        "composition": ``mu_0 = mu_boot / (kappa sqrt(B))`` with kappa the sampler's multiplicity cap; exact.
    share : float, default 0.5
        Fraction of ``mu^2`` spent on the centre (``mu_c^2 = share mu^2``). [choice]
    """

    name: ClassVar[str] = "dette-graw"
    needs: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"sampler": pf.Sampler, "mechanism": pf.Mechanism, "accountant": pf.Accountant}
    )
    private: ClassVar[bool] = True

    calibration: str = attrs.field(default="clt", validator=pf.validators.choice("clt", "composition"))
    share: float = attrs.field(default=0.5, validator=pf.validators.probability)

    def defaults(self, budget: pf.Budget | None, confidence: float) -> Mapping[str, object]:
        """m-out-of-n resamples with the multiplicity cap (m = n / ln n, B = 1000), Gaussian noise, GDP."""
        return {"sampler": "wr", "mechanism": "gaussian", "accountant": "gdp", "m": "n/log(n)", "B": 1000}

    def run(self, ctx: pf.RunContext) -> pf.IntervalResult:
        """Compute the interval and its ledger."""
        gdp = pf.as_gdp(ctx.budget)
        sample_rng, center_rng, release_rng = ctx.generators(3)
        n = ctx.n
        resamples = ctx.resample(sample_rng)
        m, B, kappa = resamples.m, resamples.B, resamples.kappa
        if self.calibration == "composition" and kappa >= m:
            raise ConfigError(
                "'composition' needs a sampler with a multiplicity cap kappa < m (such as 'wr')", path="calibration"
            )
        theta_hat = ctx.evaluate()
        if theta_hat.shape[0] != 1:
            raise ConfigError(
                f"dette-graw gives intervals for scalar statistics; '{ctx.statistic.name}' is not", path="statistic"
            )
        theta_star = ctx.evaluate_resamples(resamples, 1)[:, 0]
        delta_n, delta_m = ctx.sensitivity(n), ctx.sensitivity(m)
        mu_c = math.sqrt(self.share) * gdp.mu
        mu_boot = math.sqrt(1.0 - self.share) * gdp.mu
        p = inclusion_probability(n, m)
        mu_0 = dette_graw_mu0(self.calibration, mu_boot, B, p, kappa)

        center, center_event = ctx.release(theta_hat, delta_n, pf.GDP(mu_c), label="center", rng=center_rng)
        details = {"mu_0": mu_0, "B": float(B), "m": float(m), "p": p, "kappa": float(kappa)}
        if self.calibration == "composition":
            # One release spends mu_0 on Delta_m, i.e. kappa mu_0 on a record present up to kappa times.
            planned = ctx.plan(kappa * delta_m, pf.GDP(kappa * mu_0), label="bootstrap")
            event = attrs.evolve(
                planned,
                count=B,
                details={**planned.details, **details},
                note=f"{B} releases, each {kappa} x mu_0-GDP (group privacy over kappa copies); composed exactly",
            )
        else:
            planned = ctx.plan(delta_m, pf.GDP(mu_0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=pf.GDP(mu_boot),
                asymptotic=True,
                details={**planned.details, **details},
                note=f"{B} releases at mu_0 each; mu_boot from the subsampled-GDP CLT (asymptotic in B)",
            )
        releases = ctx.release_planned(theta_star, event, rng=release_rng)

        center_value = float(center[0])
        tau_n, tau_m = ctx.rate(n), ctx.rate(m)
        alpha = 1.0 - ctx.confidence
        q_low, q_high = np.quantile(
            tau_m * (releases - center_value), [alpha / 2, 1 - alpha / 2], method="inverted_cdf"
        )
        return ctx.interval(
            center_value - float(q_high) / tau_n,
            center_value - float(q_low) / tau_n,
            center_value,
            parameters={
                "m": m,
                "B": B,
                "kappa": kappa,
                "mu": gdp.mu,
                "calibration": self.calibration,
                "share": self.share,
            },
            diagnostics={
                "delta_n": delta_n,
                "delta_m": delta_m,
                "tau_n": tau_n,
                "tau_m": tau_m,
                "p": p,
                "mu_c": mu_c,
                "mu_boot": mu_boot,
                "mu_0": mu_0,
                "center_noise": center_event.noise_scale,
                "release_noise": event.noise_scale,
                "asymptotic": self.calibration == "clt",
            },
        )
