"""Rank-based private confidence interval for any quantile: the math core (``docs/methods/rank-quantile.md``).

Not registered as a method yet: :mod:`~privframe_std.methods.rank_quantile.core` holds pure functions
(plan, histogram, select, interval) that a method wrapper calls.
"""
