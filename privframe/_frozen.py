"""A read-only copy of a mapping: the attrs converter every frozen record uses for its dict fields."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["frozen_mapping"]


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ``MappingProxyType`` over a private copy, so later changes to ``value`` cannot leak in."""
    return MappingProxyType(dict(value))
