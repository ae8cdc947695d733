"""The front door: ``confidence_interval`` and ``confidence_region``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy.typing as npt

from privframe._rng import RngLike
from privframe.data.tables import select_columns
from privframe.errors import ConfigError
from privframe.pipeline.build import Part, Pipeline
from privframe.privacy.budgets import Budget
from privframe.results import IntervalResult, RegionResult

__all__ = ["confidence_interval", "confidence_region"]

PartSpec = Part | str | Mapping[str, Any] | None


def confidence_interval(
    x: npt.ArrayLike,
    statistic: Part | str | Mapping[str, Any],
    *,
    method: Part | str | Mapping[str, Any],
    budget: Budget | None,
    bounds: object = None,
    confidence: float = 0.9,
    sampler: PartSpec = None,
    mechanism: PartSpec = None,
    accountant: PartSpec = None,
    rng: RngLike = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> IntervalResult:
    """A (private) confidence interval for a scalar statistic.

    Parameters
    ----------
    x : array_like, pandas DataFrame, numpy structured array or Dask array
        The data, shape ``(n,)`` (or ``(n, d)`` for statistics of multivariate records); from a table, the
        columns ``columns`` in order (all of them by default). A Dask array is never gathered: a
        decomposable statistic (the mean) is computed on its workers by a method that accepts distributed
        data (``cr-gs``, ``dette-graw``); anything else is a ``ConfigError`` (``docs/cluster.md``).
    statistic : str
        A registered statistic (``"mean"``, ...).
    method : str
        A registered method (``"cr-gs"``, ``"subsampling"``, ...), or ``"auto"``: the method the method map
        expects to give the narrowest valid interval for this statistic, n, budget and confidence (public
        information only, never the data values; :mod:`privframe.auto`). ``res.method`` is then the method
        that ran and ``res.diagnostics["auto"]`` says why.
    budget : GDP, ApproxDP, PureDP or None
        The total privacy budget; ``None`` only for non-private references.
    bounds : (low, high), Bounds or L2Ball, optional
        Public data bounds, never computed from the data. Values outside are clipped.
    confidence : float, default 0.9
        Nominal coverage ``1 - alpha``, in (0, 1).
    sampler, mechanism, accountant : str, optional
        Override the method's default parts (not with ``method="auto"``, which runs the chosen method's
        defaults).
    rng : None, int, SeedSequence or Generator
        ``None`` (fresh OS entropy) for a real release; a seed makes runs reproducible and voids
        privacy for anyone who knows it.
    columns : list of str, optional
        The columns of a table ``x`` to use, in order (:func:`privframe.tables.select_columns`).
    **options
        Options for the parts (``m``, ``B``, ``rho``, ``on_reject``, method options...). Each goes to every
        part that declares it; an option no part declares raises ``ConfigError``. ``memory_budget`` (bytes),
        ``workers`` (threads) and ``progress`` (a bar on a terminal) are run options: they never change the
        result.

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
    pipe = Pipeline.build(
        statistic,
        method=method,
        budget=budget,
        bounds=bounds,
        confidence=confidence,
        sampler=sampler,
        mechanism=mechanism,
        accountant=accountant,
        **options,
    )
    return as_interval(pipe, pipe.run(select_columns(x, columns), rng=rng))


def as_interval(pipe: Pipeline, result: IntervalResult | RegionResult) -> IntervalResult:
    """``result`` as an interval, or a ``ConfigError`` pointing a vector statistic to ``confidence_region``."""
    if isinstance(result, RegionResult):
        raise ConfigError(
            f"'{pipe.statistic.name}' is vector-valued here (d = {result.dimension}); use pf.confidence_region",
            path="statistic",
        )
    return result


def confidence_region(
    x: npt.ArrayLike,
    statistic: Part | str | Mapping[str, Any],
    *,
    method: Part | str | Mapping[str, Any],
    budget: Budget | None,
    bounds: object = None,
    confidence: float = 0.9,
    sampler: PartSpec = None,
    mechanism: PartSpec = None,
    accountant: PartSpec = None,
    rng: RngLike = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> RegionResult:
    """A (private) confidence region - a Euclidean ball - for a vector statistic.

    Parameters are those of :func:`confidence_interval`; ``bounds`` is typically ``pf.L2Ball(radius)``.
    A scalar statistic gives a one-dimensional ball (an interval symmetric about its centre).

    Returns
    -------
    RegionResult
    """
    pipe = Pipeline.build(
        statistic,
        method=method,
        budget=budget,
        bounds=bounds,
        confidence=confidence,
        sampler=sampler,
        mechanism=mechanism,
        accountant=accountant,
        **options,
    )
    result = pipe.run_raw(select_columns(x, columns), rng=rng)
    return result.to_region() if isinstance(result, IntervalResult) else result
