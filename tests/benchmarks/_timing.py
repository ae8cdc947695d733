"""Timing helpers shared by the ratio benchmarks: contenders interleaved, medians compared in one run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per contender over ``rounds`` rounds, each round running every contender once.

    Interleaving spreads any drift of the machine's load over all contenders alike, so their ratio is
    meaningful even on a shared machine; each contender runs once first as a warm-up (plugin loading,
    first-use imports).
    """
    for run in contenders.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}
