"""Non-private n-out-of-n percentile bootstrap: a reference for the private methods (``docs/algorithms.md`` 8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs
import numpy as np

import privframe.plugin as pp
from privframe.errors import ConfigError

__all__ = ["PercentileBootstrap", "percentile_interval"]


def percentile_interval(values: pp.Array, confidence: float) -> tuple[float, float]:
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
    needs: ClassVar[pp.MethodNeeds] = pp.MethodNeeds(mechanism=None, private=False)

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """The n-out-of-n bootstrap with B = 1000."""
        return {"sampler": "bootstrap", "B": 1000}

    def run(self, ctx: pp.RunContext[None]) -> pp.IntervalResult:
        """Compute the non-private interval (the ledger is empty)."""
        (sample_rng,) = ctx.generators(1)
        resamples = ctx.resample(sample_rng)
        theta_hat = ctx.evaluate()
        if theta_hat.shape[0] != 1:
            raise ConfigError(
                f"the percentile bootstrap needs a scalar statistic; '{ctx.statistic.name}' is not", path="statistic"
            )
        theta_star = ctx.evaluate_resamples(resamples, 1)[:, 0]
        low, high = percentile_interval(theta_star, ctx.confidence)
        return ctx.interval(low, high, float(theta_hat[0]), parameters={"m": resamples.m, "B": resamples.B})
