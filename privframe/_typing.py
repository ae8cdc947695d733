"""Array aliases, the read-only mapping every frozen record uses for its dict fields, and a lazily imported module.

Loading the standard plugins imports every registered part's module; ``scipy.special`` alone costs about
0.2 s there, which a first interval that never calls it (cr-gs, the samplers) need not pay. A module that
uses ``special.expit`` in its functions writes ``special = LazyModule("scipy.special")`` instead of
``from scipy import special``; the import happens on the first call that reads an attribute.
"""

from __future__ import annotations

import importlib
import numbers
from collections.abc import Mapping
from types import MappingProxyType, ModuleType
from typing import Any, TypeAlias, TypeGuard

import numpy as np
import numpy.typing as npt

__all__ = ["Array", "IndexMatrix", "LazyModule", "frozen_mapping", "is_integer"]

Array: TypeAlias = npt.NDArray[np.float64]
"""A float64 array (data, statistic values)."""

IndexMatrix: TypeAlias = npt.NDArray[np.intp]
"""A ``(B, m)`` integer matrix: row i holds the indices of resample i."""


def is_integer(value: object) -> TypeGuard[numbers.Integral]:
    """Whether ``value`` is an integer: any ``numbers.Integral`` (``int``, ``np.int64``...) except a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ``MappingProxyType`` over a private copy, so later changes to ``value`` cannot leak in."""
    return MappingProxyType(dict(value))


class LazyModule:
    """Stands for the module ``name``; the first attribute read imports it, later reads go straight to it.

    Parameters
    ----------
    name : str
        The module's dotted name (``"scipy.special"``).
    """

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r}, {state}>"
