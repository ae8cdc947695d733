"""A one-line progress bar on standard error, drawn only when it is a terminal (silent when piped).

The experiment harness counts cells with it; a single call whose resamples are expected to take more than a
few seconds counts its blocks of resamples (:class:`privframe.resampling.blocks.RunOptions`, ``progress``).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """Cells done out of a total, elapsed time and a naive time-left estimate.

    Parameters
    ----------
    total : int
        Cells to run.
    label : str
        Shown before the bar (the experiment name).
    stream : text stream, optional
        Default ``sys.stderr``.
    enabled : bool, optional
        Default: whether ``stream`` is a terminal (``isatty()``). Never draws when False.
    width : int
        Characters of the bar itself.
    unit : str
        What is counted (``"cells"``, ``"blocks"``).
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        width: int = 30,
        unit: str = "cells",
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self.total = max(total, 0)
        self.label = label
        self.width = width
        self.unit = unit
        self.done = 0
        self.skipped = 0
        self._start = time.monotonic()
        self._drawn = False

    def start(self, skipped: int = 0) -> None:
        """Draw the initial bar; ``skipped`` cells were already finished (``--resume``)."""
        self.skipped = skipped
        self.done = skipped
        self._draw()

    def advance(self, count: int = 1) -> None:
        """Mark ``count`` more cells finished and redraw."""
        self.done = min(self.total, self.done + count)
        self._draw()

    def close(self) -> None:
        """End the line (nothing when disabled)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def render(self) -> str:
        """The current line (without the carriage return)."""
        fraction = self.done / self.total if self.total else 1.0
        filled = round(fraction * self.width)
        elapsed = time.monotonic() - self._start
        ran = self.done - self.skipped
        left = ""
        if ran > 0 and self.done < self.total:
            left = f", ~{_clock(elapsed / ran * (self.total - self.done))} left"
        head = f"{self.label} " if self.label else ""
        bar = "#" * filled + "." * (self.width - filled)
        return f"{head}[{bar}] {self.done}/{self.total} {self.unit}, {_clock(elapsed)} elapsed{left}"

    def _draw(self) -> None:
        if not self.enabled:
            return
        self.stream.write("\r" + self.render() + "\x1b[K")
        self.stream.flush()
        self._drawn = True
