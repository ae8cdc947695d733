"""PrivSub: black-box private subsampling intervals with amplification-aware calibration (algorithms.md 4)."""

from __future__ import annotations

import warnings
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
from privframe_std.methods._privsub_budget import plan_budgets
from privframe_std.methods._privsub_ecdf import QUANTILE_METHODS, SubsampleECDF

__all__ = ["PrivSub"]


def _share(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise ConfigError(f"{attribute.name}: must be a number in (0, 1)")


def _count_or_none(_: Any, attribute: Any, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ConfigError(f"{attribute.name}: must be an integer >= 2 or omitted")


def _estimator_or_none(_: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, pf.PrivateEstimator):
        raise ConfigError(
            f"{attribute.name}: expected a private estimator (pf.CallableEstimator, pf.MechanismEstimator)"
        )


@attrs.frozen
class PrivSub:
    """Private subsampling interval around any private estimator (algorithms.md section 4).

    Runs the private estimator once on the full data (``theta_n``) and once on each of T subsamples of size
    m drawn without replacement (``theta_{m,t}``), rescales ``Z_t = theta_n + (tau_m / tau_n)(theta_{m,t} -
    theta_n)``, and reads the interval from the empirical CDF of the ``Z_t`` (kept in
    ``diagnostics["ecdf"]``). The user's total budget is split and calibrated: see
    :func:`privframe.accounting.calibrate_subsampled`.

    Parameters
    ----------
    T : int, optional
        Number of subsamples (default: the sampler's ``B``, 60 under privsub).
    share : float, default 0.5
        Share of epsilon (of mu^2 under a GDP budget) spent on the full-data call ([choice]).
    slack_share : float, default 0.5
        Share of delta spent as the composition slack; the rest pays per-call deltas of mechanisms that need
        one (Gaussian). Pure mechanisms leave it unspent.
    interval : {"percentile", "basic"}, default "percentile"
        How the interval is read from the ECDF ([choice]).
    composition : {"best", "optimal", "advanced", "basic"}, default "best"
        Composition of the T amplified calls; "best" uses whichever allows the largest per-call epsilon.
    quantile_method : str, default "weibull"
        numpy quantile method for the end points ([choice]): "weibull" reads ``Z`` at plotting positions
        ``p (T + 1)``, so that with T = 60 the 90% end points are ``Z_(3.05)`` and ``Z_(57.95)``, which contain
        a new draw with probability 0.90 (numpy's default "linear" gives 0.87 at T = 60).
    estimator : PrivateEstimator, optional
        A user-supplied private estimator (e.g. ``pf.CallableEstimator``) instead of statistic + mechanism;
        the statistic then only supplies the rate and the data preparation.
    """

    name: ClassVar[str] = "privsub"
    uses: ClassVar[frozenset[str]] = frozenset({"sampler", "mechanism"})
    optional: ClassVar[frozenset[str]] = frozenset({"mechanism"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType({"sampler": "wor"})
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({"m": "n^(2/3)", "B": 60})
    private: ClassVar[bool] = True

    T: int | None = attrs.field(default=None, validator=_count_or_none)
    share: float = attrs.field(default=0.5, validator=_share)
    slack_share: float = attrs.field(default=0.5, validator=_share)
    interval: str = attrs.field(default="percentile", validator=choice("percentile", "basic"))
    composition: str = attrs.field(default="best", validator=choice("best", "optimal", "advanced", "basic"))
    quantile_method: str = attrs.field(default="weibull", validator=choice(*QUANTILE_METHODS))
    estimator: Any = attrs.field(default=None, validator=_estimator_or_none)

    def _estimator(self, parts: pf.Parts, budget: pf.Budget) -> pf.PrivateEstimator:
        if self.estimator is not None:
            if parts.mechanism is not None:
                raise ConfigError("estimator: give either estimator= or mechanism=, not both")
            estimator: pf.PrivateEstimator = self.estimator
            return estimator
        mechanism: object = parts.mechanism
        if mechanism is None:
            name = pf.estimators.default_mechanism(parts.statistic, budget)
            mechanism = pf.registry.create("mechanism", name, path="mechanism")
        if not isinstance(mechanism, (pf.Mechanism, pf.SelectionMechanism)):
            raise ConfigError(
                "mechanism: privsub needs an additive-noise mechanism (laplace, gaussian) or a selection mechanism "
                "(exponential)"
            )
        return pf.MechanismEstimator(parts.statistic, mechanism, parts.bounds)

    def _sampler(self, sampler: pf.Sampler) -> pf.Sampler:
        current = getattr(sampler, "B", None)
        if self.T is None or current == self.T:
            return sampler
        if current is None or not attrs.has(type(sampler)):
            raise ConfigError(f"T: sampler '{sampler.name}' has no option B to set the number of subsamples")
        if current != self.sampler_defaults["B"]:
            raise ConfigError("T: conflicts with the sampler's B; give only one of them")
        resized: pf.Sampler = attrs.evolve(sampler, B=self.T)  # type: ignore[misc]
        return resized

    def run(
        self,
        data: pf.Array,
        parts: pf.Parts,
        budget: pf.Budget | None,
        confidence: float,
        rng: np.random.SeedSequence,
    ) -> pf.IntervalResult:
        """Compute the interval, its ECDF and its ledger."""
        if budget is None:
            raise pf.BudgetError("budget: privsub is private and needs a budget")
        sampler = require(parts.sampler, "sampler", self.name, pf.Sampler)
        assert isinstance(sampler, pf.Sampler)
        sampler = self._sampler(sampler)
        statistic = parts.statistic
        estimator = self._estimator(parts, budget)
        sample_rng, full_rng, sub_rng = pf.spawn_generators(rng, 3)

        n = data.shape[0]
        resamples = engine.draw_resamples(sampler, n, sample_rng)
        if resamples.replace:
            raise ConfigError("sampler: privsub needs subsamples drawn without replacement ('wor')")
        m, count = resamples.m, resamples.B
        if count < 2:
            raise ConfigError("T: privsub needs at least 2 subsamples")
        if m * count < n:
            warnings.warn(
                f"T: m * T = {m * count} < n = {n}; the subsamples do not cover the data (PrivSub wants m T >~ n)",
                UserWarning,
                stacklevel=2,
            )
        plan = plan_budgets(
            budget,
            estimator,
            n=n,
            m=m,
            count=count,
            share=self.share,
            slack_share=self.slack_share,
            composition=self.composition,
        )
        full_event = estimator.plan(n, plan.full_budget, label="full")
        sub_event = estimator.plan(m, plan.sub_budget, label="subsample")
        ledger = plan.ledger(full_event, sub_event)  # refuses (BudgetError) before anything is released

        full_index = np.arange(n, dtype=np.intp)[np.newaxis, :]
        theta_n = float(estimator.release_batch(data, full_index, plan.full_budget, full_rng)[0][0])
        theta_sub, _ = estimator.release_batch(data, resamples.matrix(), plan.sub_budget, sub_rng)
        tau_n, tau_m = engine.rate(statistic, n), engine.rate(statistic, m)
        ecdf = SubsampleECDF(theta_n + (tau_m / tau_n) * (theta_sub - theta_n), theta_n, self.quantile_method)
        low, high = ecdf.interval(confidence, self.interval)
        return pf.IntervalResult(
            low=low,
            high=high,
            center=theta_n,
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": statistic.name,
                "sampler": sampler.name,
                "estimator": estimator.name,
                "n": n,
                "m": m,
                "T": count,
                "share": self.share,
                "slack_share": self.slack_share,
                "interval": self.interval,
                "composition": self.composition,
                "quantile_method": self.quantile_method,
                "budget": str(budget),
            },
            diagnostics={
                **plan.diagnostics,
                "ecdf": ecdf,
                "tau_n": tau_n,
                "tau_m": tau_m,
                "sensitivity_full": full_event.sensitivity,
                "sensitivity_sub": sub_event.sensitivity,
                "noise_scale_full": full_event.noise_scale,
                "noise_scale_sub": sub_event.noise_scale,
            },
            privacy=ledger,
        )
