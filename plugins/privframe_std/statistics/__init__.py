"""Standard statistics."""

from __future__ import annotations

import privframe as pf
from privframe_std.statistics.ks import KolmogorovSmirnov
from privframe_std.statistics.logistic_slope import LogisticSlope
from privframe_std.statistics.mean import Mean
from privframe_std.statistics.order import Median, Quantile
from privframe_std.statistics.ustat import UStatistic

__all__ = ["KolmogorovSmirnov", "LogisticSlope", "Mean", "Median", "Quantile", "UStatistic"]


@pf.hookimpl
def privframe_register_statistics(registry: pf.StatisticRegistry) -> None:
    """Register the standard statistics."""
    registry.add(Mean)
    registry.add(Median)
    registry.add(Quantile)
    registry.add(UStatistic)
    registry.add(KolmogorovSmirnov)
    registry.add(LogisticSlope)
