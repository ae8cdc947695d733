"""The front door: ``confidence_interval`` and ``confidence_region``.

Both take the parameters of :func:`privframe.pipeline.request.request` (the one definition they share with
``Session`` and ``Pipeline.build``), build a pipeline from them, and run it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from privframe import _repeats
from privframe.errors import ConfigError, PTRFailed
from privframe.pipeline.build import Pipeline, assemble_request
from privframe.pipeline.request import Request, front_door, request
from privframe.results import IntervalResult, RegionResult

__all__ = ["as_interval", "as_region", "confidence_interval", "confidence_region"]

R = TypeVar("R")


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


def _counted(x: Any, req: Request, call: Callable[[], R]) -> R:
    """``call()``, counted as a plain call on ``x`` when it is private and spent its budget (it returned, or
    failed a propose-test-release test): many on the same data give a ``PrivacyWarning`` (:mod:`privframe._repeats`)."""
    if req.budget is None:
        return call()
    try:
        result = call()
    except PTRFailed:
        _repeats.note_plain_call(_repeats.fingerprint(x))
        raise
    # Fingerprinted only once the call has read the data: a call refused before it reads a value never does.
    _repeats.note_plain_call(_repeats.fingerprint(x))
    return result


def _interval(x: Any, req: Request) -> IntervalResult:
    """A (private) confidence interval for a scalar statistic.

    {parameters}

    Returns
    -------
    IntervalResult

    Notes
    -----
    {repeats}

    Examples
    --------
    >>> import numpy as np, privframe as pf
    >>> x = np.random.default_rng(0).binomial(1, 0.3, size=5000).astype(float)
    >>> res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=7)
    >>> res.low < res.high
    True
    """
    pipe = assemble_request(attrs.evolve(req, rng=None))
    return _counted(x, req, lambda: as_interval(pipe, pipe.run(x, rng=req.rng)))


def _region(x: Any, req: Request) -> RegionResult:
    """A (private) confidence region - a Euclidean ball - for a vector statistic.

    ``bounds`` is typically ``pf.L2Ball(radius)``. A scalar statistic gives a one-dimensional ball (an interval
    symmetric about its centre).

    {parameters}

    Returns
    -------
    RegionResult

    Notes
    -----
    {repeats}
    """
    pipe = assemble_request(attrs.evolve(req, rng=None))
    return _counted(x, req, lambda: as_region(pipe.run(x, rng=req.rng, region=True)))


confidence_interval = front_door(request, _interval, name="confidence_interval")
confidence_region = front_door(request, _region, name="confidence_region")
