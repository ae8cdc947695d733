"""Intervals inside the parameter space: post-processing of a release by the statistic's value range."""

from __future__ import annotations

import math

import attrs

from privframe.bounds import Bounds, L2Ball
from privframe.plugin.evaluation import guarded
from privframe.plugin.protocols import RangedStatistic, Statistic
from privframe.results import IntervalResult

__all__ = ["within_range"]


def within_range(result: IntervalResult, statistic: Statistic, bounds: Bounds | L2Ball | None) -> IntervalResult:
    """``result`` intersected with the statistic's value range (post-processing: the guarantee is unchanged).

    A NaN end (a release that carried no information) becomes the range's end, or an infinite one, and a NaN
    centre the range's midpoint (``diagnostics["uninformative"]``); a result that is the whole range is
    flagged ``diagnostics["whole_range"]``; an
    interval entirely outside the range becomes the whole range (``diagnostics["disjoint_from_range"]``),
    never a point. The unclipped ends stay in the diagnostics as ``unclipped``.
    """
    value_range = None
    if isinstance(statistic, RangedStatistic):  # a statistic without bounds (ks) may still have a range
        with guarded("statistic", statistic.name, "value_range"):
            value_range = statistic.value_range(bounds)
    low_end, high_end = value_range if value_range is not None else (-math.inf, math.inf)
    low = low_end if math.isnan(result.low) else min(max(result.low, low_end), high_end)
    high = high_end if math.isnan(result.high) else max(min(result.high, high_end), low_end)
    disjoint = result.high < low_end or result.low > high_end
    if disjoint:
        # The released interval misses the parameter space entirely: its intersection is empty, and a point
        # at the nearest end would be a silently degenerate interval. Report the whole range instead: still
        # post-processing of the release, and it says plainly that this release carried no information.
        low, high = low_end, high_end
    uninformative = math.isnan(result.center)
    if uninformative:
        # A release that carried no information (an infinite noise scale): the centre of the range, a public
        # number, never NaN; the interval is the whole range, and the result says so.
        middle = (low_end + high_end) / 2.0
        center = middle if math.isfinite(middle) else 0.0
    else:
        center = min(max(result.center, low_end), high_end)
    whole = math.isfinite(low_end) and math.isfinite(high_end) and (low, high) == (low_end, high_end)
    if (low, high, center) == (result.low, result.high, result.center) and not whole:
        return result
    diagnostics = dict(result.diagnostics)
    if (low, high, center) != (result.low, result.high, result.center):
        diagnostics["unclipped"] = (result.low, result.high, result.center)
    if whole:
        # The whole parameter space: valid, but it carries no information; flagged so it is never mistaken
        # for a narrow result (str() says so too).
        diagnostics["whole_range"] = True
    if uninformative:
        diagnostics["uninformative"] = True
    if disjoint:
        diagnostics["disjoint_from_range"] = True
    if value_range is not None:
        diagnostics["value_range"] = (low_end, high_end)
    return attrs.evolve(result, low=low, high=high, center=center, diagnostics=diagnostics)
