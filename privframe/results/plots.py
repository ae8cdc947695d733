"""Plots of results: one interval against a reference (:func:`plot_result`), several side by side (:func:`forest_plot`).

Needs the ``plot`` extra (matplotlib: ``pip install "privframe[plot]"``); matplotlib is imported when a
function is called, never by ``import privframe``, and a missing extra raises
:class:`~privframe.errors.MissingExtraError` naming it. Both functions draw on ``ax`` when given (and
return it), else on a new figure's axes; save the figure with ``ax.figure.savefig(path)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from privframe.errors import ConfigError, MissingExtraError
from privframe.results import IntervalResult, RegionResult, Result, _level, _result_list

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["forest_plot", "plot_result"]


def _axes(ax: Axes | None, *, rows: int, name: str) -> Axes:
    """``ax``, or the axes of a new figure sized for ``rows`` rows; a missing matplotlib is a typed error."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtraError(f"{name} needs matplotlib", extra="plot") from None
    if ax is not None:
        from matplotlib.axes import Axes as MplAxes

        if not isinstance(ax, MplAxes):
            raise ConfigError(f"expected matplotlib axes (or None), got {type(ax).__name__}", path="ax")
        return ax
    _, new = plt.subplots(figsize=(6.4, 1.2 + 0.45 * rows), layout="constrained")
    return new


def _reference(reference: npt.ArrayLike | None, size: int) -> npt.NDArray[np.float64] | None:
    """The reference as ``size`` finite numbers (one, or one per coordinate), or None."""
    if reference is None:
        return None
    try:
        values = np.asarray(reference, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ConfigError("expected a number (or one per coordinate of a region)", path="reference") from None
    if values.shape[0] == 1 and size > 1:
        values = np.full(size, values[0])
    if values.shape[0] != size:
        raise ConfigError(f"expected 1 or {size} numbers, one per row", path="reference")
    if not np.all(np.isfinite(values)):
        raise ConfigError("expected finite numbers", path="reference")
    return values


def _rows(result: Result) -> list[tuple[float, float, float]]:
    """``(low, centre, high)`` per row: the interval, or the ball's shadow ``c_j +- r`` on each coordinate."""
    if isinstance(result, IntervalResult):
        return [(result.low, result.center, result.high)]
    return [(float(c) - result.radius, float(c), float(c) + result.radius) for c in result.center]


def _draw(ax: Axes, rows: list[tuple[float, float, float]], labels: list[str], reference: Any) -> None:
    ys = np.arange(len(rows))[::-1]  # the first row on top
    for y, (low, centre, high) in zip(ys, rows, strict=True):
        ax.plot([low, high], [y, y], color="C0", linewidth=2.5, solid_capstyle="butt")
        ax.plot([low, high], [y, y], linestyle="none", marker="|", markersize=12, color="C0")
        ax.plot([centre], [y], marker="o", color="C1", linestyle="none")
    if reference is not None:
        for y, value in zip(ys, reference, strict=True):
            ax.plot([value], [y], marker="x", color="black", linestyle="none", markersize=9)
        if np.all(reference == reference[0]):
            ax.axvline(float(reference[0]), color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(ys, labels)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.grid(True, axis="x", alpha=0.3)


def plot_result(result: Result, reference: npt.ArrayLike | None = None, ax: Axes | None = None) -> Axes:
    """Draw one result: its interval as a bar, its centre as a dot, a non-private ``reference`` as a cross.

    A region of dimension d is drawn as d rows, the ball's shadow ``[c_j - r, c_j + r]`` on each
    coordinate j (each row holds the ball's projection, not a confidence interval for that coordinate at
    the nominal level of a coordinate-wise method). The title names the method and the guarantee.

    Parameters
    ----------
    result : IntervalResult or RegionResult
        What to draw.
    reference : float or array_like, optional
        A value to mark, e.g. the non-private estimate or the known truth (one per coordinate of a region,
        or one for all).
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default the axes of a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    MissingExtraError
        matplotlib (the ``plot`` extra) is not installed.
    ConfigError
        ``result`` is not a result, ``reference`` is not a finite number per row, or ``ax`` is not
        matplotlib axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import privframe as pf
    >>> x = np.random.default_rng(0).beta(2, 5, size=2000)
    >>> res = pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), rng=7)
    >>> ax = pf.plot_result(res, reference=float(x.mean()))
    >>> ax.get_title()
    'cr-gs: 1-GDP = (4.887, 1e-06)-DP'
    """
    if not isinstance(result, IntervalResult | RegionResult):
        raise ConfigError(f"expected an IntervalResult or a RegionResult, got {type(result).__name__}", path="result")
    rows = _rows(result)
    values = _reference(reference, len(rows))
    axes = _axes(ax, rows=len(rows), name="plot_result")
    if isinstance(result, IntervalResult):
        labels = [_level(result.confidence) + " CI"]
    else:
        labels = [f"coordinate {j}" for j in range(result.dimension)]
    _draw(axes, rows, labels, values)
    axes.set_title(f"{result.method}: {result.privacy.summary() if result.privacy.private else 'non-private'}")
    return axes


def forest_plot(
    results: Sequence[Result],
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    *,
    reference: npt.ArrayLike | None = None,
) -> Axes:
    """Draw several results one above the other (groups, methods or budgets), first on top.

    Each row is an interval with its centre; a region of dimension 1 counts as its interval. The row label
    is ``labels[i]`` (default ``"<statistic>, <method>"``) followed by the guarantee.

    Parameters
    ----------
    results : sequence of IntervalResult or RegionResult
        The results to compare (regions only of dimension 1).
    labels : sequence of str, optional
        One label per result.
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default the axes of a new figure.
    reference : float or array_like, optional
        A value to mark on every row (one number), or one per row.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    MissingExtraError
        matplotlib (the ``plot`` extra) is not installed.
    ConfigError
        ``results`` is empty, holds something else or a region of dimension > 1 (names ``results[i]``), or
        ``labels`` or ``reference`` has the wrong length, or ``ax`` is not matplotlib axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import privframe as pf
    >>> x = np.random.default_rng(0).beta(2, 5, size=2000)
    >>> runs = [pf.confidence_interval(x, "mean", method="cr-gs", budget=pf.GDP(mu), bounds=(0, 1), rng=7)
    ...         for mu in (0.5, 1.0, 2.0)]
    >>> ax = pf.forest_plot(runs, labels=["mu=0.5", "mu=1", "mu=2"], reference=float(x.mean()))
    >>> [tick.get_text().split(" (")[0] for tick in ax.get_yticklabels()]
    ['mu=0.5', 'mu=1', 'mu=2']
    """
    pairs = _result_list(results, labels)
    rows: list[tuple[float, float, float]] = []
    names: list[str] = []
    for i, (label, result) in enumerate(pairs):
        if isinstance(result, RegionResult):
            if result.dimension != 1:
                raise ConfigError(
                    "a region of dimension > 1 has no single row; draw it with plot_result", path=f"results[{i}]"
                )
            result = result.to_interval()
        rows.append((result.low, result.center, result.high))
        names.append(f"{label} ({result.privacy.total if result.privacy.total is not None else 'non-private'})")
    values = _reference(reference, len(rows))
    axes = _axes(ax, rows=len(rows), name="forest_plot")
    _draw(axes, rows, names, values)
    levels = {result.confidence for _, result in pairs}
    axes.set_title(f"{_level(next(iter(levels)))} confidence intervals" if len(levels) == 1 else "confidence intervals")
    return axes
