"""How the plugins compile their hot loops: numba, with its on-disk cache in a per-user folder.

numba caches compiled code next to the source file by default. Inside an installed package that leaves
files pip does not know about, and the folder they sit in survives ``pip uninstall``: a later editable
install is then shadowed by an empty namespace package (``privframe_std.samplers`` found with no modules).
So the cache goes to ``$XDG_CACHE_HOME/privframe/numba`` (``~/.cache/privframe/numba``), unless numba's own
``NUMBA_CACHE_DIR`` is set or that folder cannot be written, when numba's default applies.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

__all__ = ["cache_root", "compiled", "user_cache"]

F = TypeVar("F", bound=Callable[..., Any])


def user_cache(name: str) -> Path:
    """``$XDG_CACHE_HOME/privframe/<name>`` (``~/.cache/privframe/<name>``): privframe's per-user caches."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "privframe" / name


def cache_root() -> Path:
    """The per-user folder for privframe's compiled-code cache."""
    return user_cache("numba")


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def compiled(function: F) -> F:
    """``numba.njit(cache=True, nogil=True)(function)``, its cache under :func:`cache_root`.

    numba picks a function's cache folder when it is decorated, so ``CACHE_DIR`` is set for this decoration
    only and restored after: other numba code in the process keeps its own setting.
    """
    import numba
    from numba.core import config as numba_config

    config: Any = numba_config  # CACHE_DIR is set at runtime from NUMBA_CACHE_DIR: no static attribute
    previous = config.CACHE_DIR
    root = cache_root()
    if not previous and _writable(root):
        config.CACHE_DIR = str(root)
    try:
        return cast(F, numba.njit(cache=True, nogil=True)(function))
    finally:
        config.CACHE_DIR = previous
