"""Progress bars, drawn by tqdm (``tqdm.auto``: a line on standard error, or a widget in a notebook).

The experiment harness counts cells with one; a single call whose resamples are expected to take more than a
few seconds counts its blocks of resamples (:class:`privframe.resampling.blocks.RunOptions`, ``progress``).
By default a bar is drawn only when its stream is a terminal (tqdm's ``disable=None``), so nothing is written
when standard error is piped or a file; ``enabled=False`` never draws. tqdm is imported only when a bar is
drawn.
"""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """Cells done out of a total, elapsed time and an estimate of the time left (a ``tqdm.auto`` bar).

    Parameters
    ----------
    total : int
        Cells to run.
    label : str
        Shown before the bar (the experiment name).
    stream : text stream, optional
        Default ``sys.stderr``.
    enabled : bool, optional
        Default: whether ``stream`` is a terminal (``isatty()``; a notebook draws its widget). Never draws
        when False.
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
        unit: str = "cells",
    ) -> None:
        self.total = max(total, 0)
        self.label = label
        self.unit = unit
        self.stream = stream
        self.enabled = enabled
        self._bar: Any = None

    def start(self, skipped: int = 0) -> None:
        """Draw the initial bar; ``skipped`` cells were already finished (``--resume``)."""
        if self.enabled is False:
            return
        from tqdm.auto import tqdm  # a bar is drawn: load tqdm now (import privframe stays light)

        self._bar = tqdm(
            total=self.total,
            initial=min(skipped, self.total),
            desc=self.label or None,
            unit=f" {self.unit}",
            file=self.stream,
            disable=None if self.enabled is None else False,  # None: only on a terminal (tqdm checks isatty)
            leave=True,
            dynamic_ncols=True,
        )

    def advance(self, count: int = 1) -> None:
        """Mark ``count`` more cells finished."""
        if self._bar is not None:
            self._bar.update(min(count, self.total - self._bar.n))

    def close(self) -> None:
        """End the bar (nothing when it was never drawn)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
