"""An on-disk cache of the private-variance split searches, so that a new process does not redo them.

A plan is public arithmetic on (n, the budget, the confidence, the spelling) and takes 0.2 to 1.1 s (the split
search's coarse calibrations and one precise one); the process keeps it in memory, and this module keeps
its three searched numbers - the share, the inflation k and the criterion - in
``$XDG_CACHE_HOME/privframe/plans`` (``~/.cache/privframe/plans``), beside the compiled-code cache. Set
``PRIVFRAME_PLAN_CACHE=0`` to neither read nor write it.

What is stored decides width only, never privacy: the releases' budgets are rebuilt from the caller's
budget and the stored share by the same exact split as a fresh search (``core._parameters``), so a share
read from a file composes to the budget like any other; a share outside the search's range, or a k or
criterion that is not a finite non-negative number, makes the entry unusable and the search runs again.
An entry is keyed by a digest of the calibration's source files (and of ``privframe.privacy.accounting``'s)
and of the numpy and scipy versions (their special functions set the numbers), so a change to any of them
invalidates it. Files are written to a temporary name and renamed into place; a folder that cannot be
written is left alone, and the search result is simply not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

import privframe.plugin as pp
from privframe_std._compiled import user_cache

__all__ = ["ENVIRONMENT", "Entry", "folder", "load", "store"]

ENVIRONMENT = "PRIVFRAME_PLAN_CACHE"
"""Set to ``0`` (or ``off``, ``false``, ``no``) to turn the cache off."""

_SOURCES = ("calibration.py", "core.py", "laws.py", "plan_cache.py")

Entry = tuple[float, float, float]
"""(share, inflation, criterion)."""


def folder() -> Path | None:
    """The cache folder, or None when :data:`ENVIRONMENT` turns the cache off."""
    if os.environ.get(ENVIRONMENT, "").strip().lower() in {"0", "off", "false", "no"}:
        return None
    return user_cache("plans")


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str | None:
    """A digest of the calibration's sources (with ``privframe.privacy.accounting``, whose ``gdp_mu_for`` sets
    the Gaussian spellings' noise) and of the numpy and scipy versions; None (no cache) where the sources
    cannot be read (a zipped or frozen install)."""
    import scipy

    from privframe.privacy import accounting

    digest = hashlib.sha256(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
    here = Path(__file__).resolve().parent
    try:
        for path in [*(here / name for name in _SOURCES), Path(accounting.__file__)]:
            digest.update(path.read_bytes())
    except (OSError, TypeError):
        return None
    return digest.hexdigest()


def _key(n: int, budget: pp.Budget, confidence: float, spelling: str) -> str | None:
    code = _fingerprint()
    return None if code is None else f"{code}|n={n}|{budget!r}|confidence={float(confidence).hex()}|{spelling}"


def _path(root: Path, key: str) -> Path:
    return root / f"{hashlib.sha256(key.encode()).hexdigest()}.json"


def load(n: int, budget: pp.Budget, confidence: float, spelling: str, shares: tuple[float, float]) -> Entry | None:
    """The stored (share, inflation, criterion) of this search, or None (no entry, unreadable, or unusable:
    a share outside ``shares`` = (lowest, highest) or a non-finite or negative number)."""
    root, key = folder(), _key(n, budget, confidence, spelling)
    if root is None or key is None:
        return None
    try:
        record = json.loads(_path(root, key).read_text(encoding="utf-8"))
        if record["key"] != key:
            return None
        share, inflation, criterion = (float.fromhex(record[name]) for name in ("share", "inflation", "criterion"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not (shares[0] <= share <= shares[1]) or not all(math.isfinite(v) and v >= 0 for v in (inflation, criterion)):
        return None
    return share, inflation, criterion


def store(n: int, budget: pp.Budget, confidence: float, spelling: str, entry: Entry) -> None:
    """Keep (share, inflation, criterion) for this search; a folder that cannot be written is skipped."""
    root, key = folder(), _key(n, budget, confidence, spelling)
    if root is None or key is None:
        return
    share, inflation, criterion = entry
    text = json.dumps({"key": key, "share": share.hex(), "inflation": inflation.hex(), "criterion": criterion.hex()})
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=root, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, _path(root, key))
    except OSError:
        Path(temporary).unlink(missing_ok=True)
