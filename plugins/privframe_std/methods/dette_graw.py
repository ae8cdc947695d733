"""Dette-Graw: the private m-out-of-n bootstrap under GDP (``docs/algorithms.md``, section 7), a baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np
import numpy.typing as npt

import privframe.plugin as pp
from privframe._typing import LazyModule
from privframe.errors import BudgetError, ConfigError
from privframe.plugin.evaluation import check_sensitivities
from privframe_std._binomial import binom_logpmf
from privframe_std.distributed.evaluate import evaluate_distributed
from privframe_std.distributed.local import evaluate_resamples

special = LazyModule("scipy.special")  # imported on first use (0.2 s the plugins' loading need not pay)

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "DetteGraw",
    "dette_graw_mu0",
    "effective_rate",
    "inclusion_probability",
    "multiplicity_chi_square",
    "multiplicity_pmf",
]


def inclusion_probability(n: int, m: int) -> float:
    """``p = 1 - (1 - 1/n)^m``: the chance that a given record is in an m-out-of-n resample."""
    return -math.expm1(m * math.log1p(-1.0 / n)) if n > 1 else 1.0


TAIL = 1e-300
"""Multiplicities K with ``P(K > k) < TAIL`` are left out of the chi^2 (see ``multiplicity_pmf``)."""


def multiplicity_pmf(n: int, m: int) -> tuple[FloatArray, FloatArray]:
    """``(k, log P(K = k))`` for K ~ Bin(m, 1/n), k = 0..k_max with k_max the first k where ``P(K > k) < 1e-300``.

    The truncation is a modelling choice, not only a numerical one: ``E[exp(K K' mu0^2)]`` over the whole
    binomial is dominated, for moderate mu0, by resamples made almost entirely of copies of one record
    (``P(K = m) = n^-m``); such events could only ever cost a delta of ``B * 1e-300``.
    """
    lam = m / n
    cap = min(m, math.ceil(lam + 40.0 * math.sqrt(lam + 1.0) + 700.0))
    k = np.arange(cap + 1, dtype=np.float64)
    log_pmf = binom_logpmf(k, m, 1.0 / n)
    log_tail = np.append(np.logaddexp.accumulate(log_pmf[::-1])[::-1][1:], -np.inf)  # log P(K > k)
    k_max = int(np.argmax(log_tail < math.log(TAIL)))
    return k[: k_max + 1], log_pmf[: k_max + 1]


def _log_chi_square(mu0: float, k: FloatArray, log_pmf: FloatArray) -> float:
    """``log sum_{k, k'} P(k) P(k') (exp(k k' mu0^2) - 1)``: every term is >= 0, summed in log space."""
    positive = k > 0
    u = np.multiply.outer(k[positive], k[positive]) * (mu0 * mu0)
    log_expm1 = u + np.log(-np.expm1(-u))  # log(e^u - 1), stable for small and large u
    lp = log_pmf[positive]
    return float(special.logsumexp(lp[:, np.newaxis] + lp[np.newaxis, :] + log_expm1))


def multiplicity_chi_square(mu0: float, n: int, m: int) -> float:
    """``chi^2(P || Q) = E[exp(K K' mu0^2)] - 1``, K, K' i.i.d. Bin(m, 1/n) truncated as in ``multiplicity_pmf``.

    P is one release when the record is present K times (``sum_k P(K = k) N(k mu0, 1)``), Q = N(0, 1), in
    units of the release noise. Returns ``inf`` on overflow.
    """
    k, log_pmf = multiplicity_pmf(n, m)
    value = _log_chi_square(mu0, k, log_pmf)
    return math.exp(value) if value < 709.0 else math.inf


def effective_rate(mu0: float, n: int, m: int) -> float:
    """``sqrt(chi^2 / (e^{mu0^2} - 1))``: the Poisson sampling rate with the same per-release chi^2 (compare p)."""
    return math.sqrt(multiplicity_chi_square(mu0, n, m) / math.expm1(mu0 * mu0))


def _clt_mu0(mu_boot: float, B: int, n: int, m: int) -> float:
    """The mu0 solving ``mu_boot^2 = B (E[exp(K K' mu0^2)] - 1)`` (chi^2 is increasing in mu0)."""
    from scipy import optimize  # on first use: loading the plugins stays light

    k, log_pmf = multiplicity_pmf(n, m)
    target = 2.0 * math.log(mu_boot) - math.log(B)

    def excess(log_mu0: float) -> float:
        return _log_chi_square(math.exp(log_mu0), k, log_pmf) - target

    # K K' >= 1 whenever both are >= 1, so chi^2 >= p^2 (e^{mu0^2} - 1) up to the truncated tail: the
    # Poisson formula's mu0 is (all but) an upper bound on the root.
    p = inclusion_probability(n, m)
    high = math.log(math.sqrt(math.log1p(mu_boot**2 / (p**2 * B))))
    while excess(high) <= 0:
        high += 0.01
    low = high - 1.0
    while excess(low) > 0:
        low -= 1.0
    return math.exp(float(optimize.brentq(excess, low, high, xtol=1e-13, rtol=1e-15)))


def dette_graw_mu0(calibration: str, mu_boot: float, B: int, n: int, m: int, kappa: int) -> float:
    """Per-release GDP parameter mu_0 of the B bootstrap releases on m-out-of-n resamples of n records.

    ``"clt"``: the root of ``mu_boot^2 = B (E[exp(K K' mu_0^2)] - 1)``, K, K' i.i.d. Bin(m, 1/n) (the
    composition CLT with the chi^2 divergence of one release, the record present K times; asymptotic in B);
    ``"composition"``: ``mu_boot / (kappa sqrt(B))`` (exact: group privacy over kappa copies, B-fold composition).
    """
    if calibration == "clt":
        return _clt_mu0(mu_boot, B, n, m)
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
    calibration : {"composition", "clt"}, default "composition"
        How mu_0 is set. "composition": ``mu_0 = mu_boot / (kappa sqrt(B))`` with kappa the sampler's
        multiplicity cap; an exact guarantee (each release is calibrated to what kappa copies of a record can
        move it by, and the accountant composes the B releases). "clt", the paper's: the root of
        ``mu_boot^2 = B (E[exp(K K' mu_0^2)] - 1)`` with K, K' i.i.d. Bin(m, 1/n), the multiplicity of a record
        in a with-replacement resample (the composition central limit theorem with the chi^2 divergence of one
        release); the guarantee is asymptotic and the ledger flags it. With at most one copy (Poisson sampling,
        rate p) this is ``sqrt(ln(1 + mu_boot^2 / (p^2 B)))``.
        It is an explicit option only: its noise is about ``p / kappa`` of the exact calibration's (intervals
        33 times narrower for the mean at n = 2000, GDP(1)), but the exact cost at finite B is above the
        recorded one (3.347 against 3.308 in epsilon at n = 4000), so ``method="auto"`` never chooses it and a
        ``Session`` refuses it unless opened with ``allow_asymptotic=True``.
    share : float, default 0.5
        Fraction of the budget spent on the centre, in the accountant's unit: ``mu_c^2 = share mu^2`` under
        GDP, ``eps_c = share eps`` (and the same share of delta) under pure or (eps, delta) accounting. [choice]

    Notes
    -----
    The mechanism may be any additive one. Under the ``gdp`` accountant both calibrations apply ("clt" is
    derived for Gaussian noise). Under ``approx-dp`` (the default for a
    ``PureDP`` budget, with ``laplace``) only "composition" applies: the B releases share the bootstrap part
    through the accountant's ``per_call`` (basic or advanced composition), each calibrated to the sensitivity
    ``kappa Delta_m`` of a record present up to kappa times.
    """

    name: ClassVar[str] = "dette-graw"

    calibration: str = attrs.field(default="composition", validator=pp.validators.choice("composition", "clt"))
    share: float = attrs.field(default=0.5, validator=pp.validators.probability)

    @property
    def needs(self) -> pp.MethodNeeds:
        """A sampler and an additive mechanism, handed GDP budgets under "clt" (mu_0 per release) and the
        accountant's per-call share under "composition". Accepts a Dask array with a decomposable statistic
        (``docs/cluster.md``; above one data block, 'wr' only with ``on_reject="raise"``)."""
        handed = pp.GDP if self.calibration == "clt" else "per-call"
        return pp.MethodNeeds(mechanism_budget=handed, distributed=True, asymptotic=self.calibration == "clt")

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """m-out-of-n resamples with the multiplicity cap (m = n / ln n, B = 1000), Gaussian noise and GDP
        accounting; Laplace noise and ``approx-dp`` accounting for a pure budget (``PureDP``, or ``ApproxDP``
        with delta = 0, which no GDP guarantee implies)."""
        sizes = {"sampler": "wr", "m": "n/log(n)", "B": 1000}
        if isinstance(budget, pp.PureDP) or (isinstance(budget, pp.ApproxDP) and budget.delta == 0):
            self._check_calibration("approx-dp")
            return {**sizes, "mechanism": "laplace", "accountant": "approx-dp"}
        return {**sizes, "mechanism": "gaussian", "accountant": "gdp"}

    def _check_calibration(self, accountant: str) -> None:
        """'clt' is the composition CLT of Gaussian releases: refused outside GDP accounting."""
        if self.calibration == "clt":
            raise ConfigError(
                f"'clt' calibrates Gaussian releases under GDP accounting; with the '{accountant}' accountant "
                "(a pure or (epsilon, delta) budget split in epsilon) use calibration='composition'",
                path="calibration",
            )

    def check_design(self, design: pp.Design | None, statistic: pp.Statistic, call: pp.PublicCall) -> None:
        """Refuse, from public inputs only, a statistic without a finite global sensitivity at n or m, and a
        'composition' design without a multiplicity cap below m."""
        if design is None:
            return
        check_sensitivities(statistic, call.bounds, (design.n, design.m), needed_by=self.name, shift=self.needs.shift)
        if self.calibration != "composition":
            return
        if design.kappa >= design.m:
            raise ConfigError(
                "'composition' needs a sampler with a multiplicity cap kappa < m (such as 'wr')", path="calibration"
            )

    def _plan_releases(
        self, ctx: pp.RunContext[pp.Mechanism], boot_budget: pp.Budget, delta_m: float, details: dict[str, float]
    ) -> tuple[float | None, pp.PrivacyEvent, pp.Budget]:
        """mu_0 (None outside GDP), the event of the B bootstrap releases and the budget of each (public inputs
        only)."""
        n, B, m, kappa = ctx.n, int(details["B"]), int(details["m"]), int(details["kappa"])
        if self.calibration == "composition":
            # B releases composed by the accountant; each is calibrated to kappa Delta_m, what a record
            # present up to kappa times can move it by, so its budget holds per record (no group privacy).
            per_release = ctx.accountant.per_call(boot_budget, B)
            mu_0 = per_release.mu / kappa if isinstance(per_release, pp.GDP) else None
            planned = ctx.plan(kappa * delta_m, per_release, label="bootstrap")
            return (
                mu_0,
                attrs.evolve(
                    planned,
                    count=B,
                    details={**planned.details, **details},
                    note=f"{B} releases of sensitivity kappa Delta_m (kappa = {kappa} copies), each {per_release}; "
                    f"composed by '{ctx.accountant.name}'",
                ),
                planned.budget,
            )
        assert isinstance(boot_budget, pp.GDP)  # 'clt' was refused above for other units
        mu_boot = boot_budget.mu
        mu_0 = dette_graw_mu0(self.calibration, mu_boot, B, n, m, kappa)
        details["mu_0"] = mu_0
        planned = ctx.plan(delta_m, pp.GDP(mu_0), label="bootstrap")
        return (
            mu_0,
            attrs.evolve(
                planned,
                budget=pp.GDP(mu_boot),
                asymptotic=True,
                details={**planned.details, **details, "effective_rate": effective_rate(mu_0, n, m)},
                note=(
                    f"{B} releases at mu_0 each; mu_boot^2 = B chi^2 with chi^2 = E[exp(K K' mu_0^2)] - 1, "
                    "K ~ Bin(m, 1/n) copies of the record (the composition CLT: asymptotic in B, small "
                    "per-release leakage; the exact cost at finite B can be slightly above mu_boot)"
                ),
            ),
            planned.budget,
        )

    def run(self, ctx: pp.RunContext[pp.Mechanism]) -> pp.IntervalResult:
        """Compute the interval and its ledger."""
        total = ctx.accountant.per_call(ctx.budget, 1)  # the budget in the accountant's unit
        gdp = total if isinstance(total, pp.GDP) else None
        if gdp is None:
            self._check_calibration(ctx.accountant.name)
        sample_rng, center_rng, release_rng = ctx.generators(3)
        n = ctx.n
        resamples = ctx.resample(sample_rng)
        m, B, kappa = resamples.m, resamples.B, resamples.kappa
        self.check_design(
            resamples.design,
            ctx.statistic,
            pp.PublicCall(n=ctx.n, budget=ctx.budget, bounds=ctx.bounds, confidence=ctx.confidence),
        )
        delta_n, delta_m = ctx.sensitivity(n), ctx.sensitivity(m)
        center_budget, boot_budget = pp.split_budget(total, self.share)
        p = inclusion_probability(n, m)
        details: dict[str, float] = {"B": float(B), "m": float(m), "p": p, "kappa": float(kappa)}
        # Both releases are planned from public inputs before a value is read: a noise scale beyond the
        # doubles (bounds near the largest double) is a refusal, the same on every dataset.
        try:
            center_event = ctx.plan(delta_n, center_budget, label="center")
            mu_0, event, per_release = self._plan_releases(ctx, boot_budget, delta_m, details)
        except BudgetError as exc:
            raise ConfigError(
                f"the bounds are so wide that the noise scale overflows a double ({exc.message}); rescale the "
                "data and bounds (an affine map is post-processing)",
                path="bounds",
            ) from exc

        everything = None
        if ctx.distributed is not None:  # a Dask array: partial sums on the workers (docs/cluster.md)
            everything = evaluate_distributed(ctx, resamples)
        theta_hat = ctx.evaluate() if everything is None else everything[0]
        if theta_hat.shape[0] != 1:
            raise ConfigError(
                f"dette-graw gives intervals for scalar statistics; '{ctx.statistic.name}' is not", path="statistic"
            )
        theta_star = (evaluate_resamples(ctx, resamples, 1) if everything is None else everything[1])[:, 0]
        center = ctx.release(theta_hat, center_event, rng=center_rng)
        releases = ctx.release(theta_star, event, rng=release_rng)

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
                "mu": None if gdp is None else gdp.mu,
                "per_release": str(per_release),
                "calibration": self.calibration,
                "share": self.share,
            },
            diagnostics={
                "delta_n": delta_n,
                "delta_m": delta_m,
                "tau_n": tau_n,
                "tau_m": tau_m,
                "p": p,
                "center_budget": str(center_budget),
                "mu_c": center_budget.mu if isinstance(center_budget, pp.GDP) else None,
                "mu_boot": boot_budget.mu if isinstance(boot_budget, pp.GDP) else None,
                "mu_0": mu_0,
                "center_noise": center_event.noise_scale,
                "release_noise": event.noise_scale,
                "asymptotic": self.calibration == "clt",
            },
        )
