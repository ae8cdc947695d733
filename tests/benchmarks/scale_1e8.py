"""Opt-in scale check (issue 15): CR-GS (wor) mean at n = 10^8, B = 1000; prints wall time and peak RSS.

Not collected by pytest. Run alone (it takes minutes and 1-2 GiB), e.g.::

    nice python tests/benchmarks/scale_1e8.py --workers 2

Target on the 2-core reference machine: at most 120 s and a peak RSS of at most 2.5 GiB. The data are
uniform on (0, 1) (800 MB at n = 10^8); the time counts the ``confidence_interval`` call only, the peak RSS
the whole process (data included).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

import privframe as pf


def _peak_rss_gib() -> float:
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**30


def main(argv: list[str] | None = None) -> None:
    """Draw the data, time one CR-GS call, print time, peak RSS and the interval."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e8, help="records (default 1e8)")
    parser.add_argument("--B", type=int, default=1000, help="resamples (default 1000)")
    parser.add_argument("--workers", type=int, default=1, help="threads (results do not depend on it)")
    parser.add_argument("--append-md", default=None, help="also append the result as a Markdown bullet to this file")
    args = parser.parse_args(argv)
    n = int(args.n)
    x = np.random.default_rng(0).random(n)
    start = time.perf_counter()
    result = pf.confidence_interval(
        x, "mean", method="cr-gs", budget=pf.GDP(1.0), bounds=(0, 1), B=args.B, rng=1, workers=args.workers
    )
    seconds = time.perf_counter() - start
    print(f"cr-gs wor mean: n={n:.3g} B={args.B} workers={args.workers}")
    print(f"time {seconds:.1f} s, peak RSS {_peak_rss_gib():.2f} GiB, interval ({result.low:.6f}, {result.high:.6f})")
    if args.append_md:
        size = f"{float(n):.3g}".replace("e+0", "e").replace("e+", "e")
        command = f"python tests/benchmarks/scale_1e8.py --n {size} --B {args.B} --workers {args.workers}"
        with open(args.append_md, "a", encoding="utf-8") as out:
            out.write(
                f"- cr-gs wor mean at n = {size}, B = {args.B}, workers = {args.workers}: {seconds:.1f} s, peak RSS "
                f"{_peak_rss_gib():.2f} GiB (`{command}`)\n"
            )


if __name__ == "__main__":
    main()
