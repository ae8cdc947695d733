"""Writers: the terminal table, a Markdown table, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

import attrs

from privframe.experiments.metrics import CellSummary

__all__ = ["csv_text", "format_table", "markdown_table", "table_cells", "write_csv"]

_HEADERS = (
    "budget",
    "method",
    "n",
    "trials",
    "coverage",
    "width",
    "sd(width)",
    "rel.width",
    "ms/call",
    "fail",
    "guarantee",
    "(eps, delta)",
)


def _g(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _coverage(row: CellSummary) -> str:
    if row.coverage is None or row.coverage_se is None:
        return "-"
    return f"{row.coverage:.3f} ± {row.coverage_se:.3f}"


def _approx(row: CellSummary) -> str:
    if row.epsilon is None or row.delta is None:
        return "-"
    return f"({row.epsilon:.4g}, {row.delta:.3g})"


def _diff(value: float | None, se: float | None, digits: int) -> str:
    if value is None:
        return "-"
    text = f"{value:+.{digits}g}"
    return text if se is None else f"{text} ± {se:.2g}"


def table_cells(rows: Sequence[CellSummary]) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells.

    A peak-memory column is added when any row measured it, a ``vs oracle`` column when the experiment
    states an oracle width, and ``Δwidth`` and ``Δcov`` (paired differences against the ``compare``
    baseline, ± 1 SE) when any row has them. With variants the method column reads ``label @ variant``, and a
    cell stopped early shows its trials as ``37 (stopped)``.
    """
    memory = any(r.peak_mib is not None for r in rows)
    oracle = any(r.oracle_ratio is not None for r in rows)
    compared = any(r.compare is not None for r in rows)
    headers = list(_HEADERS[:8]) + (["vs oracle"] if oracle else []) + (["Δwidth", "Δcov"] if compared else [])
    headers += [_HEADERS[8]] + (["peak MiB"] if memory else []) + list(_HEADERS[9:])
    body = []
    for r in rows:
        line = [
            r.budget,
            r.method if r.variant is None else f"{r.method} @ {r.variant}",
            str(r.n),
            str(r.trials) if r.stopped is None else f"{r.trials} (stopped)",
            _coverage(r),
            _g(r.mean_width),
            _g(r.width_sd, 3),
            _g(r.rel_width, 3),
        ]
        if oracle:
            line.append(_g(r.oracle_ratio, 3))
        if compared:
            line += [_diff(r.width_diff, r.width_diff_se, 3), _diff(r.coverage_diff, r.coverage_diff_se, 2)]
        line.append(_ms(r.median_ms))
        if memory:
            line.append(_ms(r.peak_mib))
        line += [f"{r.failure_rate:.1%}" if r.failure_rate else "0", r.guarantee, _approx(r)]
        body.append(line)
    return headers, body


def format_table(rows: Sequence[CellSummary]) -> str:
    """An aligned plain-text table (numbers right-aligned)."""
    headers, body = table_cells(rows)
    widths = [max(len(h), *(len(line[i]) for line in body)) if body else len(h) for i, h in enumerate(headers)]
    left = {0, 1, len(headers) - 2}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(line) for line in body)]
    return "\n".join(lines)


def markdown_table(rows: Sequence[CellSummary]) -> str:
    """A GitHub-flavoured Markdown table."""
    headers, body = table_cells(rows)
    align = ["---" if h in ("budget", "method", "guarantee") else "---:" for h in headers]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in body]
    return "\n".join(lines)


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, allow_nan=False, default=str) if value else ""
    return value


def csv_text(rows: Sequence[CellSummary]) -> str:
    """Every field of every row as CSV (empty for undefined values; ``pipeline`` and ``parameters`` as JSON)."""
    buffer = io.StringIO()
    fields = [a.name for a in attrs.fields(CellSummary)]
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(v) for k, v in row.to_dict().items()})
    return buffer.getvalue()


def write_csv(rows: Sequence[CellSummary], path: Path) -> None:
    """Write :func:`csv_text` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(csv_text(rows), encoding="utf-8")
