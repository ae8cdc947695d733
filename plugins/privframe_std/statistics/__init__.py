"""Standard statistics."""

from __future__ import annotations

import privframe as pf
from privframe_std.statistics.mean import Mean

__all__ = ["Mean"]


@pf.hookimpl
def privframe_register_statistics(registry: pf.StatisticRegistry) -> None:
    """Register the standard statistics."""
    registry.add(Mean)
