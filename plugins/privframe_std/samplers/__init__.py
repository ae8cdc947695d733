"""Standard samplers."""

from __future__ import annotations

import privframe.plugin as pp
from privframe_std.samplers.bootstrap import Bootstrap, multinomial_counts
from privframe_std.samplers.partition import Partition
from privframe_std.samplers.wor import WithoutReplacement
from privframe_std.samplers.wr import MultiplicityConstrained, kappa_star

__all__ = [
    "Bootstrap",
    "MultiplicityConstrained",
    "Partition",
    "WithoutReplacement",
    "kappa_star",
    "multinomial_counts",
]


@pp.hookimpl
def privframe_register_samplers(registry: pp.SamplerRegistry) -> None:
    """Register the standard samplers."""
    registry.add(WithoutReplacement)
    registry.add(MultiplicityConstrained)
    registry.add(Bootstrap)
    registry.add(Partition)
