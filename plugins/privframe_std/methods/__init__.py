"""Standard methods, one package per family: one-shot regions, PrivSub, BLBQuant, PrivBoot, the rank-based
quantile interval, the private-variance mean interval, and the single-module baselines Dette-Graw and the
percentile bootstrap."""

from __future__ import annotations

import privframe.plugin as pp
from privframe_std.methods.blbquant import BLBQuant
from privframe_std.methods.bootstrap import PercentileBootstrap
from privframe_std.methods.dette_graw import DetteGraw
from privframe_std.methods.oneshot import CRGS, CRSS, Subsampling
from privframe_std.methods.private_variance import PrivateVariance
from privframe_std.methods.privboot import PrivBoot
from privframe_std.methods.privsub import PrivSub
from privframe_std.methods.rank_quantile import RankQuantile

__all__ = [
    "BLBQuant",
    "CRGS",
    "CRSS",
    "DetteGraw",
    "PercentileBootstrap",
    "PrivateVariance",
    "PrivBoot",
    "PrivSub",
    "RankQuantile",
    "Subsampling",
]


@pp.hookimpl
def privframe_register_methods(registry: pp.MethodRegistry) -> None:
    """Register the standard methods."""
    registry.add(CRGS)
    registry.add(CRSS)
    registry.add(Subsampling)
    registry.add(DetteGraw)
    registry.add(PercentileBootstrap)
    registry.add(PrivBoot)
    registry.add(BLBQuant)
    registry.add(PrivSub)
    registry.add(RankQuantile)
    registry.add(PrivateVariance)
