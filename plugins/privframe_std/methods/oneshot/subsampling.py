"""Non-private m-out-of-n subsampling region: the oracle the one-shot methods are compared with."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

import attrs
import numpy as np

import privframe as pf
from privframe_std._validation import choice
from privframe_std.methods._oneshot import ORDER_STATISTIC_RULES, compute_roots, fpc_factor, require

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
    uses: ClassVar[frozenset[str]] = frozenset({"sampler"})
    defaults: ClassVar[Mapping[str, str]] = MappingProxyType({"sampler": "wor"})
    sampler_defaults: ClassVar[Mapping[str, object]] = MappingProxyType({"m": "n/log(n)", "B": 1000})
    private: ClassVar[bool] = False

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
        """Compute the non-private region (the ledger is empty)."""
        if budget is not None:
            raise pf.BudgetError("budget: 'subsampling' is non-private; pass budget=None")
        sampler = require(parts.sampler, "sampler", self.name, pf.Sampler)
        assert isinstance(sampler, pf.Sampler)
        (sample_rng,) = pf.spawn_generators(rng, 1)
        roots = compute_roots(parts.statistic, data, sampler, confidence, sample_rng, self.order_statistic)
        factor = fpc_factor(self.fpc, parts.statistic, roots.n, roots.m, roots.replace)
        return pf.RegionResult(
            center=roots.theta_hat,
            radius=factor * roots.tau_m * roots.r / roots.tau_n,
            confidence=confidence,
            method=self.name,
            parameters={
                "statistic": parts.statistic.name,
                "sampler": sampler.name,
                "n": roots.n,
                "m": roots.m,
                "B": roots.B,
                "kappa": roots.kappa,
            },
            diagnostics={"tau_n": roots.tau_n, "tau_m": roots.tau_m, "fpc_factor": factor},
            privacy=pf.Ledger((), None),
        )
