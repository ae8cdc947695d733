"""PrivBoot: the private bootstrap of Wang, Cheng and Awan under GDP (``docs/algorithms.md`` 6), a baseline."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import BudgetError, ConfigError
from privframe.plugin.evaluation import check_sensitivities
from privframe.privacy import accounting
from privframe_std.methods.privboot.accounting import ASYMPTOTIC_FACTOR, calibrate_mu0, privboot_pld
from privframe_std.methods.privboot.gmodel import fit_gmodel

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

__all__ = ["ANNOUNCE_DRAWS", "SECONDS_PER_DRAW", "PrivBoot", "privboot_cost_note", "privboot_resamples"]

_LOG = logging.getLogger(__name__)


def privboot_resamples(mu: float, confidence: float) -> int:
    """``B = max(2000 mu^2, 2 / alpha)``, rounded up (products rounded to 9 decimals first)."""
    alpha = 1.0 - confidence
    return max(math.ceil(round(2000.0 * mu * mu, 9)), math.ceil(round(2.0 / alpha, 9)))


EXACT_REPORT_DELTA = 1e-6
"""The delta at which an asymptotic run's exact cost is computed (``diagnostics["exact_epsilon"]``)."""

ASYMPTOTIC_TOLERANCE = 0.05
"""How far (relative, in epsilon at delta = 1e-6) the exact cost may exceed an asymptotic claim. [choice]"""


def _asymptotic_cost(mu: float, n: int, B: int) -> tuple[float | None, float]:
    """``(exact, claimed)`` epsilon at delta = 1e-6 of B releases at the asymptotic ``mu_0``; exact is None
    when the numerical composition cannot resolve that delta."""
    claimed = accounting.gdp_epsilon(EXACT_REPORT_DELTA, mu)
    try:
        exact = privboot_pld(mu / math.sqrt(ASYMPTOTIC_FACTOR * B), n, B).epsilon(EXACT_REPORT_DELTA)
    except BudgetError:
        return None, claimed
    return exact, claimed


MAX_GMODEL_BYTES = 1 << 31
"""The most memory the g-model's likelihood matrix may take."""

SECONDS_PER_DRAW = 11e-9
"""Measured cost of one bootstrap index draw, gather and reduction (2-core reference machine, n = 20 000,
mu = 8: 18.6-27.5 s for 2.56e9 draws, the upper end taken)."""

ANNOUNCE_DRAWS = 10**9
"""``B n`` from which privboot logs its expected duration before the bootstrap (about 11 s at 11 ns a draw)."""


def privboot_cost_note(n: int, B: int, mu: float) -> str | None:
    """The warning logged before a long privboot call (``B n >= ANNOUNCE_DRAWS``), else None.

    The bootstrap draws and gathers ``B n`` values (``B = 2000 mu^2`` by default): about ``2000 mu^2 n``
    times :data:`SECONDS_PER_DRAW`, while its memory stays within the run's ``memory_budget``.
    """
    draws = B * n
    if draws < ANNOUNCE_DRAWS:
        return None
    return (
        f"privboot: B = {B} bootstrap resamples of n = {n} records (B = max(2000 mu^2, 2 / alpha) at mu = {mu:g}) "
        f"are {draws:.3g} index draws: expect about {draws * SECONDS_PER_DRAW:.0f} s (about "
        f"{SECONDS_PER_DRAW * 1e9:.0f} ns a draw on a 2-core machine); cr-gs gives a one-shot interval at a "
        "fraction of the cost"
    )


@attrs.frozen
class PrivBoot:
    """The private bootstrap: B noisy n-out-of-n bootstrap values, then a deconvolution or standard interval.

    Each of the B releases is ``theta(X*_b) + N(0, sigma^2)`` on an n-out-of-n bootstrap resample, at
    ``mu_0 = Delta_n / sigma``. With the default ``accounting="exact"`` and an ``ApproxDP(eps, delta)``
    budget, mu_0 is the largest value whose exact B-fold composition (numerical, pessimistic, see
    :mod:`privframe_std.methods.privboot.accounting`) is (eps, delta)-DP, at any B; the ledger records that
    guarantee. The exact composition is an (eps, delta) statement, not a GDP one, so a ``GDP`` budget is
    refused with the conversion to name (``pf.GDP(mu).to_approx_dp(1e-6)`` is the (eps, delta) point of
    mu-GDP at delta = 1e-6). ``accounting="asymptotic"`` reproduces the paper:
    ``mu_0 = mu / sqrt((2 - 2/e) B)``, mu-GDP only as B grows; its ledger entry is flagged asymptotic, a
    ``Session`` refuses it unless opened with ``allow_asymptotic=True``, ``B`` below the default rule is
    refused (B = 20 at mu = 1 costs eps = 7.19 at delta = 1e-6, against mu-GDP's 4.89), and
    ``diagnostics["exact_epsilon"]`` reports the exact cost at delta = 1e-6.

    Parameters
    ----------
    check_consistency : bool, default True
        Refuse statistics whose bootstrap is inconsistent (``ks``: coverage 0.36-0.48 at nominal 0.90) with a
        ``ConfigError`` naming the methods that work; False runs them anyway, to reproduce the papers.
    ci : {"deconvolution", "standard"}, default "deconvolution"
        "deconvolution": estimate the law of the noiseless bootstrap statistic by Efron's g-modelling
        (log-spline prior, Gaussian noise of the known sigma) and report its alpha/2 and 1 - alpha/2
        quantiles. "standard": ``mean +- z_{1-alpha/2} sqrt(max(var - sigma^2, 0))`` of the releases (the
        simple variant). The choice is post-processing; privacy is the same.
    accounting : {"exact", "asymptotic"}, default "exact"
        Noise calibration and ledger entry, as above.
    grid_size, df, penalty : int, int, float, default 300, 5, 0.1
        The g-model's support points (spanning the releases), spline degrees of freedom and penalty c0.
    """

    name: ClassVar[str] = "privboot"

    ci: str = attrs.field(default="deconvolution", validator=pp.validators.choice("deconvolution", "standard"))
    accounting: str = attrs.field(default="exact", validator=pp.validators.choice("exact", "asymptotic"))
    grid_size: int = attrs.field(
        default=300, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(10)
    )
    df: int = attrs.field(default=5, converter=pp.validators.as_int, validator=pp.validators.integer_at_least(2))
    penalty: float = attrs.field(default=0.1, validator=pp.validators.positive)
    check_consistency: bool = attrs.field(default=True, validator=pp.validators.boolean)

    @property
    def needs(self) -> pp.MethodNeeds:
        """A sampler, an additive mechanism handed GDP budgets (mu_0 per release), and (with
        ``check_consistency``) a statistic whose bootstrap is consistent."""
        consistent = {pp.StatisticNeed.BOOTSTRAP_CONSISTENT} if self.check_consistency else set()
        return pp.MethodNeeds(statistic=consistent, mechanism_budget=pp.GDP, asymptotic=self.accounting == "asymptotic")

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """The n-out-of-n bootstrap with ``B = max(2000 mu^2, 2 / alpha)``, Gaussian noise, and the accountant
        of the accounting mode (``gdp`` for "asymptotic", ``approx-dp`` for "exact")."""
        accountant = "approx-dp" if self.accounting == "exact" else "gdp"
        defaults: dict[str, object] = {"sampler": "bootstrap", "mechanism": "gaussian", "accountant": accountant}
        if budget is not None:
            defaults["B"] = privboot_resamples(self._target(budget)[0], confidence)
        return defaults

    def _target(self, budget: pp.Budget) -> tuple[float, pp.ApproxDP | None]:
        """The mu driving the B rule and, for exact accounting, the (eps, delta) target."""
        if isinstance(budget, pp.PureDP):
            raise BudgetError(
                "a GDP method cannot honour pure epsilon-DP; give pf.ApproxDP(...) (or pf.GDP(...) with "
                "accounting='asymptotic')",
                path="budget",
            )
        if self.accounting == "asymptotic":
            return pp.as_gdp(budget).mu, None
        if isinstance(budget, pp.GDP):
            raise BudgetError(
                "privboot's exact accounting proves an (epsilon, delta) guarantee, not a GDP one: give "
                "pf.ApproxDP(epsilon, delta) (pf.GDP(mu).to_approx_dp(1e-6) is mu-GDP's point at delta = 1e-6), "
                "or accounting='asymptotic' to record mu-GDP as B grows (an asymptotic guarantee)",
                path="budget",
            )
        if budget.delta <= 0:
            raise BudgetError("exact accounting needs an (epsilon, delta) budget with delta > 0", path="budget")
        return accounting.gdp_mu_for(budget.epsilon, budget.delta), budget

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Under ``accounting="asymptotic"``, refuse a B at which the claim understates the exact cost.

        The exact cost of B releases at ``mu_0 = mu / sqrt((2 - 2/e) B)`` (at delta = 1e-6) exceeds mu-GDP's
        by 29-78% at B = 20, 6-18% at B = 100 and 1-2% at B = 2000 (mu from 0.5 to 2); a claim off by more
        than :data:`ASYMPTOTIC_TOLERANCE` is refused, not recorded. Public inputs only (n, B, the budget). A
        statistic without a finite global sensitivity at n (or bounds that overflow it) is refused too.
        """
        if design is not None:
            check_sensitivities(statistic, call.bounds, (design.n,), needed_by=self.name, shift=self.needs.shift)
        if self.accounting != "asymptotic" or call.budget is None or design is None:
            return
        mu = self._target(call.budget)[0]
        exact, claimed = _asymptotic_cost(mu, design.n, design.B)
        if exact is None or exact <= claimed * (1.0 + ASYMPTOTIC_TOLERANCE):
            return
        raise ConfigError(
            f"B = {design.B} bootstrap releases are too few for accounting='asymptotic' at mu = {mu:g}: their exact "
            f"cost is eps = {exact:.3g} at delta = 1e-6, not mu-GDP's {claimed:.3g}; use more resamples (the "
            "default B = max(2000 mu^2, 2 / alpha)), or the default accounting='exact' with an (epsilon, delta) "
            "budget, which charges the exact cost at any B",
            path="sampler.B",
        )

    def _check_gaussian(self, law: pp.NoiseLaw, rng: np.random.Generator) -> None:
        """The g-model (``ci="deconvolution"``) assumes Gaussian noise: refuse another law (public reads only).

        A law is taken as Gaussian when its 0.99 quantile is a Gaussian's with its standard deviation, within 1%
        for a described law and 3% for one drawn from the mechanism (its sampled quantile and sd carry about
        1% of Monte Carlo error; Laplace noise is 19% off).
        """
        upper, sd = law.quantile(0.99, rng), law.sd(rng)
        if sd == 0.0:  # a noise scale below the doubles (bounds of width ~1e-300): no law to tell apart
            return
        ratio = upper / (sd * float(special.ndtri(0.99)))
        tolerance = 0.01 if law.described else 0.03
        if not 1.0 - tolerance <= ratio <= 1.0 + tolerance:
            raise ConfigError(
                f"privboot's deconvolution (g-modelling) assumes Gaussian noise, and '{law.name}' adds "
                "another law; use ci='standard' (it needs only the noise's sd) or the 'gaussian' mechanism",
                path="ci",
            )

    def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pp.IntervalResult:
        """Compute the interval and its ledger."""
        mu, target = self._target(ctx.budget)
        if target is not None:
            ctx = ctx.with_limit(target)
        sample_rng, noise_rng = ctx.generators(2)
        n = ctx.n
        resamples = ctx.resample(sample_rng)
        if resamples.m != n or not resamples.replace:
            raise ConfigError(
                "privboot needs n-out-of-n resamples drawn with replacement ('bootstrap')", path="sampler"
            )
        B = resamples.B
        self.check_design(
            resamples.design,
            ctx.statistic,
            pp.PublicCall(n=ctx.n, budget=ctx.budget, bounds=ctx.bounds, confidence=ctx.confidence),
        )
        if self.ci == "deconvolution" and B * self.grid_size * 8 > MAX_GMODEL_BYTES:
            default_b = privboot_resamples(mu, ctx.confidence)
            cause = (
                f"B = {B} bootstrap releases (the default B = max(2000 mu^2, 2 / alpha) at mu = {mu:g})"
                if default_b == B
                else f"B = {B} bootstrap releases"
            )
            raise ConfigError(
                f"the g-model's likelihood of {cause} on grid_size = {self.grid_size} points needs more than "
                f"{MAX_GMODEL_BYTES} bytes; lower B or grid_size, or use ci='standard' (a large mu makes "
                "privboot's default B grow as mu^2)",
                path="grid_size",
            )
        note = privboot_cost_note(n, B, mu)
        if note is not None:
            _LOG.warning(note)
        theta_hat = ctx.evaluate()
        if theta_hat.shape[0] != 1:
            raise ConfigError(
                f"privboot gives intervals for scalar statistics; '{ctx.statistic.name}' is not", path="statistic"
            )
        delta_n = ctx.sensitivity(n)

        asymptotic_mu0 = mu / math.sqrt(ASYMPTOTIC_FACTOR * B)
        details = {"B": float(B), "n": float(n)}
        if target is None:
            mu0 = asymptotic_mu0
            planned = ctx.plan(delta_n, pp.GDP(mu0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=pp.GDP(mu),
                asymptotic=True,
                details={**planned.details, **details, "mu_0": mu0},
                note=f"{B} releases at mu_0 = mu / sqrt((2 - 2/e) B) each; mu-GDP as B grows (asymptotic)",
            )
        else:
            mu0 = calibrate_mu0(target.epsilon, target.delta, n=n, B=B)
            planned = ctx.plan(delta_n, pp.GDP(mu0), label="bootstrap")
            event = attrs.evolve(
                planned,
                budget=target,
                details={**planned.details, **details, "mu_0": mu0},
                note=f"{B} releases at mu_0 each; exact numerical composition of the binomial-mixture curve",
            )
        # The noise law is public (the event's): stated by the mechanism, or drawn from it on zeros, from a
        # stream spawned after the release's, so a described law leaves every seeded result as it was.
        law = pp.noise_law(ctx.mechanism, event)
        law_rng = noise_rng if law.described else noise_rng.spawn(1)[0]
        if self.ci == "deconvolution":
            self._check_gaussian(law, law_rng)
        sigma = law.sd(law_rng)
        if sigma == 0.0 and self.ci == "deconvolution":  # public: the noise scale follows from the bounds
            raise ConfigError(
                "are so narrow that the noise's standard deviation is below the doubles, and the deconvolution "
                "(g-modelling) needs it > 0; rescale the data (and the bounds), or use ci='standard'",
                path="bounds",
            )
        theta_star = ctx.evaluate_resamples(resamples, 1)[:, 0]
        releases = ctx.release(theta_star, event, rng=noise_rng)

        alpha = 1.0 - ctx.confidence
        # mean and variance in units of the noise scale, so that huge bounds cannot overflow them
        unit = sigma if sigma > 0 else 1.0
        center = float(np.mean(releases / unit)) * unit
        diagnostics: dict[str, Any] = {
            "delta_n": delta_n,
            "sigma": sigma,
            "mu_0": mu0,
            "asymptotic_sigma": delta_n / asymptotic_mu0,
            "asymptotic": target is None,
        }
        if target is None:  # what the asymptotic claim costs exactly, at delta = 1e-6 (public inputs only)
            diagnostics["exact_epsilon"], diagnostics["claimed_epsilon"] = _asymptotic_cost(mu, n, B)
        excess = float(np.var(releases / unit, ddof=1)) - (sigma / unit) ** 2
        spread = unit * math.sqrt(excess) if excess > 0 else 0.0 if excess <= 0 else math.nan
        z = float(special.ndtri(1 - alpha / 2))
        low, high = center - z * spread, center + z * spread
        # post-processing of the releases, free to report, in the data's own coordinates
        diagnostics["standard_interval"] = (low + ctx.coordinates.offset, high + ctx.coordinates.offset)
        if self.ci == "deconvolution":
            fit = fit_gmodel(
                releases,
                sigma,
                grid_size=self.grid_size,
                df=self.df,
                penalty=self.penalty,
                memory_budget=ctx.options.memory_budget,
            )
            low, high = (float(v) for v in fit.quantile([alpha / 2, 1 - alpha / 2]))
            diagnostics["deconvolution_converged"] = fit.converged
        return ctx.interval(
            low,
            high,
            center,
            parameters={"B": B, "mu": mu, "ci": self.ci, "accounting": self.accounting},
            diagnostics=diagnostics,
        )
