"""PrivBoot: the private bootstrap of Wang, Cheng and Awan under GDP (algorithms.md section 6), a baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs
import numpy as np
from scipy import special

import privframe as pf
from privframe import accounting, engine
from privframe.errors import BudgetError, ConfigError
from privframe_std._validation import choice, int_at_least, positive_float
from privframe_std.accountants.approx_dp import ApproxDPAccountant
from privframe_std.accountants.gdp import GDPAccountant
from privframe_std.methods._gmodel import fit_gmodel
from privframe_std.methods._oneshot import require
from privframe_std.methods._privboot_accounting import ASYMPTOTIC_FACTOR, PrivBootPLD, calibrate_mu0, privboot_pld

__all__ = ["PrivBoot", "PrivBootPLD", "calibrate_mu0", "privboot_pld", "privboot_resamples"]


def privboot_resamples(mu: float, confidence: float) -> int:
    """``B = max(2000 mu^2, 2 / alpha)``, rounded up (products rounded to 9 decimals first)."""
    alpha = 1.0 - confidence
    return max(math.ceil(round(2000.0 * mu * mu, 9)), math.ceil(round(2.0 / alpha, 9)))


def _delta(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise ConfigError(f"{attribute.name}: must be a number in (0, 1)")


@attrs.frozen
class PrivBoot:
    """The private bootstrap: B noisy n-out-of-n bootstrap values, then a deconvolution or standard interval.

    Each of the B releases is ``theta(X*_b) + N(0, sigma^2)`` on an n-out-of-n bootstrap resample. With the
    default ``accounting="asymptotic"``, ``sigma = sqrt((2 - 2/e) B) Delta_n / mu``: B releases at
    ``mu_0 = Delta_n / sigma`` are mu-GDP as B grows (the ledger entry is flagged asymptotic). With
    ``accounting="exact"``, mu_0 is the largest value whose exact B-fold composition (numerical, see
    ``_privboot_accounting``) is (eps, delta)-DP for the budget's (eps, delta) at ``exact_delta``; the ledger
    then records that (eps, delta) guarantee.

    Parameters
    ----------
    ci : {"deconvolution", "standard"}, default "deconvolution"
        "deconvolution": estimate the law of the noiseless bootstrap statistic by Efron's g-modelling
        (log-spline prior, Gaussian noise of the known sigma) and report its alpha/2 and 1 - alpha/2
        quantiles. "standard": ``mean +- z_{1-alpha/2} sqrt(max(var - sigma^2, 0))`` of the releases (the
        simple variant). The choice is post-processing; privacy is the same.
    accounting : {"asymptotic", "exact"}, default "asymptotic"
        Noise calibration and ledger entry, as above.
    exact_delta : float, default 1e-6
        With ``accounting="exact"`` and a GDP budget mu: the delta at which the exact composition must meet
        mu-GDP's epsilon. [choice]
    grid_size, df, penalty : int, int, float, default 300, 5, 0.1
        The g-model's support points (spanning the releases), spline degrees of freedom and penalty c0.
    """

    name: ClassVar[str] = "privboot"
    uses: ClassVar[frozenset[str]] = frozenset({"sampler", "mechanism"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType({"sampler": "bootstrap", "mechanism": "gaussian"})
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({})
    private: ClassVar[bool] = True

    ci: str = attrs.field(default="deconvolution", validator=choice("deconvolution", "standard"))
    accounting: str = attrs.field(default="asymptotic", validator=choice("asymptotic", "exact"))
    exact_delta: float = attrs.field(default=1e-6, validator=_delta)
    grid_size: int = attrs.field(default=300, validator=int_at_least(10))
    df: int = attrs.field(default=5, validator=int_at_least(2))
    penalty: float = attrs.field(default=0.1, validator=positive_float)

    def _target(self, budget: pf.Budget) -> tuple[float, pf.ApproxDP | None]:
        """The mu driving the B rule and, for exact accounting, the (eps, delta) target."""
        if isinstance(budget, pf.PureDP):
            raise BudgetError(
                "budget: a GDP method cannot honour pure epsilon-DP; give pf.GDP(...) or pf.ApproxDP(...)"
            )
        if self.accounting == "asymptotic":
            return pf.as_gdp(budget).mu, None
        if isinstance(budget, pf.ApproxDP):
            if budget.delta <= 0:
                raise BudgetError("budget: exact accounting needs an (epsilon, delta) budget with delta > 0")
            return accounting.gdp_mu_for(budget.epsilon, budget.delta), budget
        mu = budget.mu
        return mu, pf.ApproxDP(accounting.gdp_epsilon(self.exact_delta, mu), self.exact_delta)

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
        assert isinstance(sampler, pf.Sampler)
        assert isinstance(mechanism, pf.Mechanism)
        if budget is None:
            raise BudgetError("budget: privboot is private and needs a budget")
        mu, target = self._target(budget)
        statistic = parts.statistic
        sample_rng, noise_rng = pf.spawn_generators(rng, 2)
        n = data.shape[0]

        rule_B = privboot_resamples(mu, confidence)
        if getattr(sampler, "B", 0) is None:
            try:
                sampler = attrs.evolve(sampler, B=rule_B)  # type: ignore[misc]
            except (TypeError, attrs.exceptions.NotAnAttrsClassError) as exc:
                raise ConfigError("sampler: privboot could not set the sampler's B; pass B=...") from exc
        resamples = engine.draw_resamples(sampler, n, sample_rng)
        if resamples.m != n or not resamples.replace:
            raise ConfigError("sampler: privboot needs n-out-of-n resamples drawn with replacement ('bootstrap')")
        B = resamples.B
        theta_hat = engine.evaluate_full(statistic, data)
        if theta_hat.shape[0] != 1:
            raise ConfigError(f"statistic: privboot gives intervals for scalar statistics; '{statistic.name}' is not")
        delta_n = statistic.sensitivity(n, parts.bounds)
        if delta_n is None or not math.isfinite(delta_n):
            raise ConfigError(
                f"method: privboot needs a finite global sensitivity and statistic '{statistic.name}' has none"
            )

        asymptotic_mu0 = mu / math.sqrt(ASYMPTOTIC_FACTOR * B)
        details = {"B": float(B), "n": float(n)}
        if target is None:
            mu0 = asymptotic_mu0
            planned = mechanism.plan(delta_n, pf.GDP(mu0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=pf.GDP(mu),
                asymptotic=True,
                details={**details, "mu_0": mu0},
                note=f"{B} releases at mu_0 = mu / sqrt((2 - 2/e) B) each; mu-GDP as B grows (asymptotic)",
            )
            spender = pf.PrivacySpender(GDPAccountant(), pf.GDP(mu))
        else:
            mu0 = calibrate_mu0(target.epsilon, target.delta, n=n, B=B)
            planned = mechanism.plan(delta_n, pf.GDP(mu0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=target,
                details={**details, "mu_0": mu0},
                note=f"{B} releases at mu_0 each; exact numerical composition of the binomial-mixture curve",
            )
            spender = pf.PrivacySpender(ApproxDPAccountant(), target)
        spender.charge(event)
        theta_star = engine.evaluate_resamples(statistic, data, resamples, 1)[:, 0]
        releases = mechanism.apply(theta_star, event, noise_rng)
        sigma = float(event.noise_scale or 0.0)

        alpha = 1.0 - confidence
        center = float(np.mean(releases))
        diagnostics: dict[str, Any] = {
            "delta_n": delta_n,
            "sigma": sigma,
            "mu_0": mu0,
            "asymptotic_sigma": delta_n / asymptotic_mu0,
            "asymptotic": target is None,
        }
        spread = math.sqrt(max(float(np.var(releases, ddof=1)) - sigma**2, 0.0))
        z = float(special.ndtri(1 - alpha / 2))
        low, high = center - z * spread, center + z * spread
        diagnostics["standard_interval"] = (low, high)  # post-processing of the releases: free to report
        if self.ci == "deconvolution":
            fit = fit_gmodel(releases, sigma, grid_size=self.grid_size, df=self.df, penalty=self.penalty)
            low, high = (float(v) for v in fit.quantile([alpha / 2, 1 - alpha / 2]))
            diagnostics["deconvolution_converged"] = fit.converged
        return pf.IntervalResult(
            low=low,
            high=high,
            center=center,
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": statistic.name,
                "sampler": sampler.name,
                "mechanism": mechanism.name,
                "accountant": "gdp" if target is None else "approx-dp",
                "n": n,
                "B": B,
                "mu": mu,
                "budget": str(budget),
                "ci": self.ci,
                "accounting": self.accounting,
            },
            diagnostics=diagnostics,
            privacy=spender.ledger(),
        )
