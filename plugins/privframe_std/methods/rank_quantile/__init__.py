"""The rank-based private confidence interval for any quantile (``docs/methods/rank-quantile.md``).

:mod:`~privframe_std.methods.rank_quantile.core` holds the pure functions (plan, histogram, select,
interval); :class:`RankQuantile` is the registered method ``rank-quantile``.
"""

from privframe_std.methods.rank_quantile.method import RankQuantile

__all__ = ["RankQuantile"]
