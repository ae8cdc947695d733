"""How this machine scales a loop over two threads: the reference for ``workers=2`` targets.

Runs the same compiled loop (numba, the GIL released) once on one thread and once on each of two threads,
interleaved, for a sorted gather-sum of n / 2 of 1e7 records (cr-gs wor's memory pattern), a streamed sum and
a loop that touches no memory. A ratio near 0.5 means two threads do twice the work in the same time: a
``workers=2 / workers=1`` ratio of privframe above it is privframe's, not the machine's.

Run::

    python tests/benchmarks/two_threads_probe.py
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np


@numba.njit(nogil=True)
def gather_sum(x: Any, index: Any, repeats: int) -> float:
    """Sum ``x[index]`` ``repeats`` times, four accumulators."""
    total = 0.0
    whole = index.shape[0] - index.shape[0] % 4
    for _ in range(repeats):
        s0 = s1 = s2 = s3 = 0.0
        for i in range(0, whole, 4):
            s0 += x[index[i]]
            s1 += x[index[i + 1]]
            s2 += x[index[i + 2]]
            s3 += x[index[i + 3]]
        total += (s0 + s1) + (s2 + s3)
    return total


@numba.njit(nogil=True)
def stream_sum(x: Any, repeats: int) -> float:
    """Sum ``x`` ``repeats`` times, four accumulators."""
    total = 0.0
    whole = x.shape[0] - x.shape[0] % 4
    for _ in range(repeats):
        s0 = s1 = s2 = s3 = 0.0
        for i in range(0, whole, 4):
            s0 += x[i]
            s1 += x[i + 1]
            s2 += x[i + 2]
            s3 += x[i + 3]
        total += (s0 + s1) + (s2 + s3)
    return total


@numba.njit(nogil=True)
def registers_only(steps: int) -> float:
    """A dependent chain of multiply-adds that touches no memory."""
    value = 1.0
    for _ in range(steps):
        value = value * 1.0000001 + 1e-9
    return value


def two_over_one(function: Any, arguments: tuple[Any, ...], rounds: int = 3) -> list[float]:
    """Seconds of two copies of the work on two threads over two copies on one thread, per round."""
    ratios = []
    for _ in range(rounds):
        began = time.perf_counter()
        function(*arguments)
        function(*arguments)
        one = time.perf_counter() - began
        began = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _: function(*arguments), range(2)))
        ratios.append((time.perf_counter() - began) / one)
    return ratios


def main() -> None:
    n = 10**7
    rng = np.random.default_rng(0)
    x = rng.random(n)
    index = np.sort(rng.choice(n, n // 2, replace=False)).astype(np.int64)
    gather_sum(x, index[:8], 1)
    stream_sum(x[:8], 1)
    registers_only(8)
    cases = [
        ("sorted gather-sum of n/2 of 1e7 records", gather_sum, (x, index, 20)),
        ("streamed sum of 1e7 records", stream_sum, (x, 20)),
        ("registers only", registers_only, (10**8,)),
    ]
    for label, function, arguments in cases:
        ratios = two_over_one(function, arguments)
        rounds = ", ".join(f"{r:.3f}" for r in ratios)
        print(f"{label}: two threads / one thread, same work: {float(np.median(ratios)):.3f} (rounds {rounds})")


if __name__ == "__main__":
    main()
