"""Helpers shared by several test modules (not tests themselves)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest


class Untouchable:
    """A numeric array of ``n`` records whose length is public and whose values raise if anything reads them:
    a refusal that comes before the data are read never touches it."""

    dtype = np.dtype(float)

    def __init__(self, n: int) -> None:
        self.shape = (n,)

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError("the data were read")


class OptionalModule:
    """A module of the ``accounting`` extra (dp-accounting), imported when a test first uses it: a test that
    needs it is skipped where it is not installed (CI installs it with the README's test line)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's collection looks for its own markers: not a use of the module
            raise AttributeError(attr)
        return getattr(pytest.importorskip(self._name), attr)


def load_file(path: Path, name: str | None = None) -> ModuleType:
    """The module in ``path`` (a script or tool, not a package module), registered as ``name`` (default: the
    file's stem) so that dataclasses and pickling inside it find their module."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
