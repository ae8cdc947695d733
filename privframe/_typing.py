"""Array aliases, and the read-only mapping every frozen record uses for its dict fields."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["Array", "IndexMatrix", "frozen_mapping"]

Array: TypeAlias = npt.NDArray[np.float64]
"""A float64 array (data, statistic values)."""

IndexMatrix: TypeAlias = npt.NDArray[np.intp]
"""A ``(B, m)`` integer matrix: row i holds the indices of resample i."""


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ``MappingProxyType`` over a private copy, so later changes to ``value`` cannot leak in."""
    return MappingProxyType(dict(value))
