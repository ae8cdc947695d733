"""A module imported on its first attribute access.

Loading the standard plugins imports every registered part's module; ``scipy.special`` alone costs about
0.2 s there, which a first interval that never calls it (cr-gs, the samplers) need not pay. A module that
uses ``special.expit`` in its functions writes ``special = LazyModule("scipy.special")`` instead of
``from scipy import special``; the import happens on the first call that reads an attribute.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]


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
