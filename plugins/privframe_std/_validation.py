"""Option validators shared by the standard plugins; messages start with the option name."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from privframe.errors import ConfigError

__all__ = ["choice", "int_at_least", "positive_float", "probability_or_none"]


def int_at_least(low: int) -> Callable[[Any, Any, Any], None]:
    """attrs validator: an int (not bool) ``>= low``."""

    def check(_: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{attribute.name}: must be an integer >= {low}")

    return check


def positive_float(_: Any, attribute: Any, value: Any) -> None:
    """attrs validator: a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{attribute.name}: must be a finite number > 0")


def probability_or_none(_: Any, attribute: Any, value: Any) -> None:
    """attrs validator: None or a number in (0, 1)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < 1):
        raise ConfigError(f"{attribute.name}: must be a number in (0, 1) or omitted")


def choice(*allowed: str) -> Callable[[Any, Any, Any], None]:
    """attrs validator: one of ``allowed``."""

    def check(_: Any, attribute: Any, value: Any) -> None:
        if value not in allowed:
            raise ConfigError(f"{attribute.name}: must be one of {', '.join(repr(a) for a in allowed)}")

    return check
