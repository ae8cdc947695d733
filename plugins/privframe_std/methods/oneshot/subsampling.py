"""Non-private m-out-of-n subsampling region: the oracle the one-shot methods are compared with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

import privframe.plugin as pp
from privframe_std.methods.oneshot.roots import DEFAULT_SIZES, ORDER_STATISTIC_RULES, compute_roots, fpc_factor

__all__ = ["Subsampling"]


@attrs.frozen
class Subsampling:
    """The non-private version of the one-shot skeleton: centre theta(D), radius ``tau_m r / tau_n``.

    Uses the same sampler, m, B and order statistic as CR-GS/CR-SS, so widths are directly comparable.
    ``budget`` must be None: this is never a release of private data.

    Parameters
    ----------
    fpc : bool, default True
        The finite-population correction ``1 / sqrt(1 - m/n)`` for without-replacement subsamples of
        sqrt(k)-rate statistics, as in CR-GS/CR-SS (so widths stay comparable).
    order_statistic : str, default "inverted_cdf"
        Which root is the radius: a numpy quantile method that returns one of the roots
        ("inverted_cdf": the ``ceil((1 - alpha) B)``-th smallest [choice]; or "closest_observation", "lower",
        "higher", "nearest"). Each fixes the rank from B and alpha alone, so privacy is unaffected.
    """

    name: ClassVar[str] = "subsampling"
    needs: ClassVar[pp.MethodNeeds] = pp.MethodNeeds(mechanism=None, private=False)

    fpc: bool = attrs.field(default=True, validator=pp.validators.boolean)
    order_statistic: str = attrs.field(default="inverted_cdf", validator=pp.validators.choice(*ORDER_STATISTIC_RULES))

    def defaults(self, budget: pp.Budget | None, confidence: float) -> Mapping[str, object]:
        """The one-shot methods' WOR resamples (m = n / ln n, B = 1000)."""
        return {"sampler": "wor", **DEFAULT_SIZES}

    def run(self, ctx: pp.RunContext[None]) -> pp.IntervalResult | pp.RegionResult:
        """Compute the non-private region (the ledger is empty)."""
        (sample_rng,) = ctx.generators(1)
        roots = compute_roots(ctx, sample_rng, self.order_statistic)
        factor = fpc_factor(self.fpc, ctx, roots)
        return ctx.ball(
            roots.theta_hat,
            factor * roots.tau_m * roots.r / roots.tau_n,
            parameters={"m": roots.m, "B": roots.B, "kappa": roots.kappa},
            diagnostics={"tau_n": roots.tau_n, "tau_m": roots.tau_m, "fpc_factor": factor},
        )
