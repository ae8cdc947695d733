"""Standard statistics, and the helpers third-party order statistics reuse: ``order_log_smooth_sensitivity``
(the smooth bound of any order statistic, in logs, on the exact fixed-point grid ``log_grid``)."""

from __future__ import annotations

import privframe.plugin as pp
from privframe_std.statistics.ks import KolmogorovSmirnov
from privframe_std.statistics.logistic_slope import LogisticSlope
from privframe_std.statistics.mean import Mean
from privframe_std.statistics.order import Median, Quantile, log_grid, order_log_smooth_sensitivity
from privframe_std.statistics.ustat import UStatistic

__all__ = [
    "KolmogorovSmirnov",
    "LogisticSlope",
    "Mean",
    "Median",
    "Quantile",
    "UStatistic",
    "log_grid",
    "order_log_smooth_sensitivity",
]


@pp.hookimpl
def privframe_register_statistics(registry: pp.StatisticRegistry) -> None:
    """Register the standard statistics."""
    registry.add(Mean)
    registry.add(Median)
    registry.add(Quantile)
    registry.add(UStatistic)
    registry.add(KolmogorovSmirnov)
    registry.add(LogisticSlope)
