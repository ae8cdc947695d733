"""Resample-size rules: an int, or a rule in n such as ``"n/log(n)"``, ``"n^(2/3)"``, ``"n^0.7"``, ``"sqrt(n)"``."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from privframe.errors import ConfigError, DataError

__all__ = ["check_size_rule", "resolve_size", "size_rule"]

_POWER = re.compile(r"^n\s*\^\s*\(?\s*(\d+(?:\.\d+)?)(?:\s*/\s*(\d+))?\s*\)?$")
_LOG_RULES = {"n/log(n)", "n/ln(n)"}


def _rule_value(rule: str, n: int) -> float | None:
    text = rule.replace(" ", "").lower()
    if text in _LOG_RULES:
        return n / math.log(n)
    if text == "sqrt(n)":
        return math.sqrt(n)
    match = _POWER.match(text)
    if match:
        exponent = Fraction(match.group(1)) / (int(match.group(2)) if match.group(2) else 1)
        if 0 < exponent <= 1:
            return float(n ** float(exponent))
    return None


def check_size_rule(name: str, value: object) -> None:
    """Validate an int size or a rule string without knowing n (used by option validators)."""
    if isinstance(value, bool):
        raise ConfigError(f"{name}: expected an integer or a rule such as 'n/log(n)' or 'n^(2/3)'")
    if isinstance(value, int):
        if value < 2:
            raise ConfigError(f"{name}: must be >= 2")
        return
    if isinstance(value, str) and _rule_value(value, 100) is not None:
        return
    raise ConfigError(f"{name}: expected an integer or a rule such as 'n/log(n)', 'n^(2/3)', 'n^0.7', 'sqrt(n)'")


def resolve_size(name: str, value: int | str, n: int, *, low: int = 2, below_n: bool = True) -> int:
    """The size for population n (rules are rounded up) checked against ``low <= m < n``."""
    check_size_rule(name, value)
    if n < 3:
        raise DataError("x: resampling needs at least 3 records")
    m = value if isinstance(value, int) else math.ceil(_rule_value(value, n) or 0.0)
    if m < low:
        raise ConfigError(f"{name}: must be >= {low} (it resolves to {m} for this n)")
    if below_n and m >= n:
        raise ConfigError(f"{name}: must be smaller than n (it resolves to {m}, n = {n})")
    return m


def size_rule(_: object, attribute: Any, value: object) -> None:
    """attrs validator for a size option (an int or a rule in n)."""
    check_size_rule(attribute.name, value)
