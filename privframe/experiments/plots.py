"""PNG plots of coverage and width against n, one line per method and one column per budget level.

Needs the ``plot`` extra (matplotlib); :func:`matplotlib_available` says whether it is installed.
Non-private references are drawn dashed in every column.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privframe.experiments.cells import NON_PRIVATE
from privframe.experiments.metrics import CellSummary

__all__ = ["matplotlib_available", "plot_experiment"]


def matplotlib_available() -> bool:
    """Whether the ``plot`` extra (matplotlib) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _series(rows: Sequence[CellSummary], method: str, budget: str) -> list[CellSummary]:
    return sorted((r for r in rows if r.method == method and r.budget == budget), key=lambda r: r.n)


def plot_experiment(rows: Sequence[CellSummary], path: Path, *, title: str, nominal: float | None) -> bool:
    """Write the coverage/width figure to ``path``; False (nothing written) without matplotlib."""
    if not matplotlib_available() or not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = [b for b in dict.fromkeys(r.budget for r in rows) if b != NON_PRIVATE] or [NON_PRIVATE]
    methods = list(dict.fromkeys(r.method for r in rows))
    references = [m for m in methods if any(r.method == m and r.budget == NON_PRIVATE for r in rows)]
    colours: dict[str, Any] = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(methods)}
    fig, axes = plt.subplots(2, len(budgets), figsize=(4.2 * len(budgets) + 1.8, 7), squeeze=False, sharex=True)
    for col, budget in enumerate(budgets):
        cov_ax, width_ax = axes[0][col], axes[1][col]
        for method in methods:
            series = _series(rows, method, budget)
            dashed = method in references
            if not series and dashed:
                series = _series(rows, method, NON_PRIVATE)
            series = [r for r in series if r.coverage is not None]
            if not series:
                continue
            style: dict[str, Any] = {
                "color": colours[method],
                "marker": "o",
                "linestyle": "--" if dashed else "-",
                "label": method,
            }
            ns = [r.n for r in series]
            cov_ax.errorbar(ns, [r.coverage for r in series], yerr=[2 * (r.coverage_se or 0) for r in series], **style)
            width_ax.plot(ns, [r.mean_width for r in series], **style)
        if nominal is not None:
            cov_ax.axhline(nominal, color="grey", linewidth=0.8)
        cov_ax.set_title(budget)
        cov_ax.set_ylim(-0.02, 1.02)
        for ax in (cov_ax, width_ax):
            ax.set_xscale("log")
            ax.grid(True, which="both", alpha=0.3)
        width_ax.set_yscale("log")
        width_ax.set_xlabel("n")
    axes[0][0].set_ylabel("coverage (± 2 SE)")
    axes[1][0].set_ylabel("mean width")
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="center right", fontsize="small")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1 - 1.8 / (4.2 * len(budgets) + 1.8), 0.96))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
