"""Finished cells on disk: one JSON file per cell, written atomically as soon as the cell finishes.

Layout under an output root: ``ROOT/<experiment>/cells/<cell>.json``. A file holds the cell's
fingerprint (every setting that determines its trials, plus the privframe version) and its trial
records. ``--resume`` reuses a file only when its fingerprint matches the cell about to run, so
changing the seed, the trials or a method option reruns the affected cells.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from privframe.experiments.cells import CellTask
from privframe.experiments.trial import CellOutcome

__all__ = ["CellStore", "write_json_atomic"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` through a temporary file and a rename (never a half-written file).

    Non-finite floats, which JSON lacks, are written as the strings ``"inf"``, ``"-inf"``, ``"nan"``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(_finite(payload), handle, indent=1, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CellStore:
    """The cell files of one experiment under ``root/<experiment>/cells``.

    Parameters
    ----------
    directory : Path
        The experiment's output directory (``ROOT/<experiment>``).
    version : str
        The privframe version (part of every fingerprint).
    """

    def __init__(self, directory: Path, version: str) -> None:
        self.directory = directory
        self.version = version

    def path(self, task: CellTask) -> Path:
        """The file of a cell: a readable name plus a short hash (labels may contain any character)."""
        key = task.cell.key
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
        readable = _UNSAFE.sub("_", key.replace("|", "__"))
        return self.directory / "cells" / f"{readable}-{digest}.json"

    def load(self, task: CellTask) -> CellOutcome | None:
        """The saved outcome of this exact cell, or None (missing, unreadable, or other settings)."""
        path = self.path(task)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(payload, dict) or payload.get("fingerprint") != task.fingerprint(self.version):
            return None
        try:
            return CellOutcome.from_dict(payload["outcome"])
        except (KeyError, TypeError, ValueError):
            return None

    def save(self, task: CellTask, outcome: CellOutcome) -> None:
        """Persist a finished cell."""
        payload = {
            "fingerprint": task.fingerprint(self.version),
            "experiment": task.experiment,
            "cell": task.cell.key,
            "seed": task.seed,
            "trials": task.trials,
            "outcome": outcome.to_dict(),
        }
        write_json_atomic(self.path(task), payload)


def _finite(value: Any) -> Any:
    """Replace non-finite floats (JSON has none) by strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
