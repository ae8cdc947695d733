"""Intervals inside the parameter space: post-processing of a release by the statistic's value range."""

from __future__ import annotations

import math

import attrs
import numpy as np

from privframe.bounds import Bounds, L2Ball, euclidean_norm
from privframe.plugin.evaluation import guarded
from privframe.plugin.protocols import RangedStatistic, Statistic
from privframe.plugin.traits import traits_of
from privframe.results import IntervalResult, RegionResult

__all__ = ["within_ball", "within_range"]


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


def within_ball(result: RegionResult, statistic: Statistic, bounds: Bounds | L2Ball | None) -> RegionResult:
    """A mean's region that holds the whole public ball, or misses it, reported as the ball itself.

    The mean of records clipped into ``L2Ball(R)`` lies in that ball, so a released ball around c of radius
    r with ``r >= ||c|| + R`` contains every possible mean: its intersection with the parameter space is the
    ball, reported as it is (centre 0, radius R, a hair wider so the sphere is inside the open ball) and
    flagged ``diagnostics["whole_range"]``, not as a radius that may be infinite. A region that misses the
    ball (``||c|| > r + R``) or carries no information (a NaN or infinite centre, a NaN radius) is reported
    the same way (``disjoint_from_range``, ``uninformative``). Any other region is returned as it is. All of
    it post-processing of the release; the unclipped centre and radius stay in ``unclipped``.
    """
    if not isinstance(bounds, L2Ball) or not traits_of(statistic).mean:
        return result
    center, radius = result.center, result.radius
    uninformative = not bool(np.all(np.isfinite(center))) or math.isnan(radius)
    distance = euclidean_norm(center) if not uninformative else math.inf
    disjoint = not uninformative and distance > radius + bounds.radius
    whole = uninformative or disjoint or radius >= distance + bounds.radius
    if not whole:
        return result
    diagnostics = dict(result.diagnostics)
    diagnostics["unclipped"] = ([float(c) for c in center], float(radius))
    diagnostics["whole_range"] = True
    if uninformative:
        diagnostics["uninformative"] = True
    if disjoint:
        diagnostics["disjoint_from_range"] = True
    return attrs.evolve(
        result,
        center=np.zeros_like(center),
        radius=float(np.nextafter(bounds.radius, math.inf)),
        diagnostics=diagnostics,
    )
