"""Non-private n-out-of-n percentile bootstrap: a reference for the private methods (algorithms.md section 8)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe import engine
from privframe.errors import ConfigError
from privframe_std.methods._oneshot import require

__all__ = ["PercentileBootstrap", "percentile_interval"]


def percentile_interval(values: pf.Array, confidence: float) -> tuple[float, float]:
    """``(q_{alpha/2}, q_{1 - alpha/2})`` of ``values`` with numpy's ``inverted_cdf`` quantiles."""
    alpha = 1.0 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
    return float(low), float(high)


@attrs.frozen
class PercentileBootstrap:
    """The non-private percentile bootstrap: ``[q_{alpha/2}, q_{1 - alpha/2}]`` of B bootstrap values.

    The centre is ``theta(D)``. Scalar statistics only. ``budget`` must be None: this is an oracle for
    experiments, never a release of private data. The sampler is ``bootstrap`` with ``B = 1000`` by default.
    """

    name: ClassVar[str] = "bootstrap"
    uses: ClassVar[frozenset[str]] = frozenset({"sampler"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType({"sampler": "bootstrap"})
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({"B": 1000})
    private: ClassVar[bool] = False

    def run(
        self,
        data: pf.Array,
        parts: pf.Parts,
        budget: pf.Budget | None,
        confidence: float,
        rng: np.random.SeedSequence,
    ) -> pf.IntervalResult:
        """Compute the non-private interval (the ledger is empty)."""
        if budget is not None:
            raise pf.BudgetError("budget: 'bootstrap' is non-private; pass budget=None")
        sampler = require(parts.sampler, "sampler", self.name, pf.Sampler)
        assert isinstance(sampler, pf.Sampler)
        statistic = parts.statistic
        (sample_rng,) = pf.spawn_generators(rng, 1)
        n = data.shape[0]
        resamples = engine.draw_resamples(sampler, n, sample_rng)
        theta_hat = engine.evaluate_full(statistic, data)
        if theta_hat.shape[0] != 1:
            raise ConfigError(
                f"statistic: the percentile bootstrap needs a scalar statistic; '{statistic.name}' is not"
            )
        theta_star = engine.evaluate_resamples(statistic, data, resamples, 1)[:, 0]
        low, high = percentile_interval(theta_star, confidence)
        return pf.IntervalResult(
            low=low,
            high=high,
            center=float(theta_hat[0]),
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": statistic.name,
                "sampler": sampler.name,
                "n": n,
                "m": resamples.m,
                "B": resamples.B,
            },
            diagnostics={},
            privacy=pf.Ledger((), None),
        )
