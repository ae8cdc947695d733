"""Print each benchmark's median as a ratio to the numpy floor and to scipy.stats.bootstrap at the same n.

``--ratios-md FILE`` also writes the issue-15 ratios as Markdown; written to ``docs/results/performance.txt``
they become the "Performance" section of the reproduction report (``privframe experiment ... --report``).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--ratios-md", default=None, help="write the interleaved benchmark ratios to this Markdown file")


_N = re.compile(r"\bn=?(\d+)\b|[\[-](\d{4,})[\]-]")


def _n_of(bench: Any) -> int | None:
    params = getattr(bench, "params", None) or {}
    if "n" in params:
        return int(params["n"])
    match = _N.search(bench.name)
    return int(match.group(1) or match.group(2)) if match else None


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    session = getattr(terminalreporter.config, "_benchmarksession", None)
    benchmarks = [b for b in getattr(session, "benchmarks", []) if b]
    if not benchmarks:
        return
    by_n: dict[int, dict[str, float]] = defaultdict(dict)
    for bench in benchmarks:
        n = _n_of(bench)
        if n is not None:
            by_n[n][bench.name] = float(bench.stats.median)
    terminalreporter.write_sep("-", "median time as a ratio (same n)")
    for n in sorted(by_n):
        rows = by_n[n]
        floor = next((v for k, v in rows.items() if k.startswith("test_numpy_floor")), None)
        scipy = next((v for k, v in rows.items() if k.startswith("test_scipy_bootstrap")), None)
        for name, median in sorted(rows.items(), key=lambda kv: kv[1]):
            parts = [f"n={n:<6} {name:<48} {1000 * median:9.1f} ms"]
            if floor:
                parts.append(f"x floor {median / floor:6.2f}")
            if scipy:
                parts.append(f"scipy/this {scipy / median:6.1f}")
            terminalreporter.write_line("  ".join(parts))
    ratios = [b.extra_info["ratio"] for b in benchmarks if "ratio" in getattr(b, "extra_info", {})]
    if ratios:
        terminalreporter.write_sep("-", "issue 15 ratios (contenders interleaved, medians)")
        for line in ratios:
            terminalreporter.write_line(line)
        target = terminalreporter.config.getoption("--ratios-md")
        if target:
            _write_ratios(Path(target), ratios)


def _write_ratios(path: Path, ratios: list[str]) -> None:
    args, skip = [], False
    for arg in sys.argv[1:]:  # the command line without the --ratios-md option and its value
        if skip or arg.startswith("--ratios-md"):
            skip = arg == "--ratios-md"
            continue
        args.append(arg)
    command = "python -m pytest " + shlex.join(args)
    lines = [
        f"Benchmark ratios measured on {datetime.date.today().isoformat()} ({platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}), contenders interleaved within one run, "
        f"medians; command: `{command}`.",
        "",
        *[f"- {line}" for line in ratios],
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
