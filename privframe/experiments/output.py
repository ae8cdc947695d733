"""Writers: the terminal table, a Markdown table, CSV and JSON."""

from __future__ import annotations

import csv
import io
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


def table_cells(rows: Sequence[CellSummary]) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted cells; a peak-memory column is added when any row measured it."""
    memory = any(r.peak_mib is not None for r in rows)
    oracle = any(r.oracle_ratio is not None for r in rows)
    headers = list(_HEADERS[:7]) + (["vs oracle"] if oracle else []) + [_HEADERS[7]]
    headers += (["peak MiB"] if memory else []) + list(_HEADERS[8:])
    body = []
    for r in rows:
        line = [
            r.budget,
            r.method,
            str(r.n),
            str(r.trials),
            _coverage(r),
            _g(r.mean_width),
            _g(r.rel_width, 3),
        ]
        if oracle:
            line.append(_g(r.oracle_ratio, 3))
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


def csv_text(rows: Sequence[CellSummary]) -> str:
    """Every field of every row as CSV (empty for undefined values)."""
    buffer = io.StringIO()
    fields = [a.name for a in attrs.fields(CellSummary)]
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_dict().items()})
    return buffer.getvalue()


def write_csv(rows: Sequence[CellSummary], path: Path) -> None:
    """Write :func:`csv_text` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(csv_text(rows), encoding="utf-8")
