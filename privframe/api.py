"""The front door: ``confidence_interval`` and ``confidence_region``.

Both take the parameters of :func:`privframe.pipeline.request.request` (the one definition they share with
``Session`` and ``Pipeline.build``), build a pipeline from them, and run it.
"""

from __future__ import annotations

from typing import Any

import attrs

from privframe.errors import ConfigError
from privframe.pipeline.build import Pipeline, assemble_request
from privframe.pipeline.request import Request, front_door, request
from privframe.results import IntervalResult, RegionResult

__all__ = ["as_interval", "as_region", "confidence_interval", "confidence_region"]


def as_interval(pipe: Pipeline, result: IntervalResult | RegionResult) -> IntervalResult:
    """``result`` as an interval, or a ``ConfigError`` pointing a vector statistic to ``confidence_region``."""
    if isinstance(result, RegionResult):
        raise ConfigError(
            f"'{pipe.statistic.name}' is vector-valued here (d = {result.dimension}); use pf.confidence_region",
            path="statistic",
        )
    return result


def as_region(result: IntervalResult | RegionResult) -> RegionResult:
    """``result`` as a ball (an interval only if it is symmetric about its centre)."""
    return result.to_region() if isinstance(result, IntervalResult) else result


def _interval(x: Any, req: Request) -> IntervalResult:
    """A (private) confidence interval for a scalar statistic.

    {parameters}

    Returns
    -------
    IntervalResult

    Examples
    --------
    >>> import numpy as np, privframe as pf
    >>> x = np.random.default_rng(0).binomial(1, 0.3, size=5000).astype(float)
    >>> res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=7)
    >>> res.low < res.high
    True
    """
    pipe = assemble_request(attrs.evolve(req, rng=None))
    return as_interval(pipe, pipe.run(x, rng=req.rng))


def _region(x: Any, req: Request) -> RegionResult:
    """A (private) confidence region - a Euclidean ball - for a vector statistic.

    ``bounds`` is typically ``pf.L2Ball(radius)``. A scalar statistic gives a one-dimensional ball (an interval
    symmetric about its centre).

    {parameters}

    Returns
    -------
    RegionResult
    """
    pipe = assemble_request(attrs.evolve(req, rng=None))
    return as_region(pipe.run(x, rng=req.rng, region=True))


confidence_interval = front_door(request, _interval)
confidence_region = front_door(request, _region)
