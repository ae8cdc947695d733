"""Dette-Graw: the private m-out-of-n bootstrap under GDP (algorithms.md section 7), a baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe import engine
from privframe.errors import ConfigError
from privframe_std._validation import choice
from privframe_std.methods._oneshot import require

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
    raise ConfigError("calibration: must be 'clt' or 'composition'")


def _share(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise ConfigError(f"{attribute.name}: must be a number in (0, 1)")


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
    uses: ClassVar[frozenset[str]] = frozenset({"sampler", "mechanism", "accountant"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"sampler": "wr", "mechanism": "gaussian", "accountant": "gdp"}
    )
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({"m": "n/log(n)", "B": 1000})
    private: ClassVar[bool] = True

    calibration: str = attrs.field(default="clt", validator=choice("clt", "composition"))
    share: float = attrs.field(default=0.5, validator=_share)

    def run(
        self,
        data: pf.Array,
        parts: pf.Parts,
        budget: pf.Budget | None,
        confidence: float,
        rng: np.random.SeedSequence,
    ) -> pf.IntervalResult:
        """Compute the interval and its ledger."""
        sampler = require(parts.sampler, "sampler", self.name, pf.Sampler)
        mechanism = require(parts.mechanism, "mechanism", self.name, pf.Mechanism)
        accountant = require(parts.accountant, "accountant", self.name, pf.Accountant)
        assert isinstance(sampler, pf.Sampler)
        assert isinstance(mechanism, pf.Mechanism)
        assert isinstance(accountant, pf.Accountant)
        if budget is None:
            raise pf.BudgetError("budget: dette-graw is private and needs a budget")
        gdp = pf.as_gdp(budget)
        statistic = parts.statistic
        sample_rng, center_rng, release_rng = pf.spawn_generators(rng, 3)

        n = data.shape[0]
        resamples = engine.draw_resamples(sampler, n, sample_rng)
        m, B, kappa = resamples.m, resamples.B, resamples.kappa
        if self.calibration == "composition" and resamples.kappa >= m:
            raise ConfigError(
                "calibration: 'composition' needs a sampler with a multiplicity cap kappa < m (such as 'wr')"
            )
        theta_hat = engine.evaluate_full(statistic, data)
        if theta_hat.shape[0] != 1:
            raise ConfigError(f"statistic: dette-graw gives intervals for scalar statistics; '{statistic.name}' is not")
        theta_star = engine.evaluate_resamples(statistic, data, resamples, 1)[:, 0]
        delta_n = statistic.sensitivity(n, parts.bounds)
        delta_m = statistic.sensitivity(m, parts.bounds)
        if delta_n is None or delta_m is None or not (math.isfinite(delta_n) and math.isfinite(delta_m)):
            raise ConfigError(
                f"method: dette-graw needs a finite global sensitivity and statistic '{statistic.name}' has none"
            )
        mu_c = math.sqrt(self.share) * gdp.mu
        mu_boot = math.sqrt(1.0 - self.share) * gdp.mu
        p = inclusion_probability(n, m)
        mu_0 = dette_graw_mu0(self.calibration, mu_boot, B, p, kappa)

        spender = pf.PrivacySpender(accountant, budget)
        center, center_event = spender.release(
            mechanism, theta_hat, delta_n, pf.GDP(mu_c), label="center", rng=center_rng
        )
        details = {"mu_0": mu_0, "B": float(B), "m": float(m), "p": p, "kappa": float(kappa)}
        if self.calibration == "composition":
            # One release spends mu_0 on Delta_m, i.e. kappa mu_0 on a record present up to kappa times.
            planned = mechanism.plan(kappa * delta_m, pf.GDP(kappa * mu_0), label="bootstrap")
            event = attrs.evolve(
                planned,
                count=B,
                details=details,
                note=f"{B} releases, each {kappa} x mu_0-GDP (group privacy over kappa copies); composed exactly",
            )
        else:
            planned = mechanism.plan(delta_m, pf.GDP(mu_0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=pf.GDP(mu_boot),
                asymptotic=True,
                details=details,
                note=f"{B} releases at mu_0 each; mu_boot from the subsampled-GDP CLT (asymptotic in B)",
            )
        spender.charge(event)
        releases = mechanism.apply(theta_star, event, release_rng)

        center_value = float(center[0])
        tau_n, tau_m = engine.rate(statistic, n), engine.rate(statistic, m)
        alpha = 1.0 - confidence
        q_low, q_high = np.quantile(
            tau_m * (releases - center_value), [alpha / 2, 1 - alpha / 2], method="inverted_cdf"
        )
        return pf.IntervalResult(
            low=center_value - float(q_high) / tau_n,
            high=center_value - float(q_low) / tau_n,
            center=center_value,
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": statistic.name,
                "sampler": sampler.name,
                "mechanism": mechanism.name,
                "accountant": accountant.name,
                "n": n,
                "m": m,
                "B": B,
                "kappa": kappa,
                "mu": gdp.mu,
                "budget": str(budget),
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
            privacy=spender.ledger(),
        )
