"""Resample sizes: an int, a rule in n such as ``"n/log(n)"``, ``"n^(2/3)"``, ``"n^0.7"``, ``"sqrt(n)"``, or a
function of n.

Samplers take their sizes (``m``, ``B``, ``s``) in this form so that a size can be fixed before the data
arrive. A method that implies a size from public quantities (BLBQuant's number of blocks depends on n and
epsilon) gives the sampler a function of n as its default.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import TypeAlias

from privframe._typing import is_integer
from privframe.errors import ConfigError, DataError

__all__ = ["SizeRule", "check_size_rule", "resolve_size"]

SizeRule: TypeAlias = "int | str | Callable[[int], int]"
"""A size: an int (or any ``numbers.Integral`` but a bool, e.g. ``np.int64``), a rule string in n, or a function
of n returning an integer."""

_POWER = re.compile(r"^n\s*\^\s*\(?\s*(\d+(?:\.\d+)?)(?:\s*/\s*(\d+))?\s*\)?$")
_LOG_RULES = {"n/log(n)", "n/ln(n)"}
_RULES_HINT = "an integer or a rule such as 'n/log(n)', 'n^(2/3)', 'n^0.7', 'sqrt(n)'"


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
    """Validate a size without knowing n; raises ``ConfigError`` with path ``name``."""
    if isinstance(value, bool):
        raise ConfigError(f"expected {_RULES_HINT}", path=name)
    if is_integer(value):
        if int(value) < 2:
            raise ConfigError("must be >= 2", path=name)
        return
    if isinstance(value, str) and _rule_value(value, 100) is not None:
        return
    if callable(value) and not isinstance(value, str):
        return
    raise ConfigError(f"expected {_RULES_HINT}, or a function of n", path=name)


def resolve_size(name: str, value: SizeRule, n: int, *, low: int = 2, below_n: bool = True) -> int:
    """The size for population n (rules are rounded up), checked against ``low <= size < n``."""
    check_size_rule(name, value)
    if n < 3:
        raise DataError("resampling needs at least 3 records", path="x")
    if isinstance(value, str):
        size = math.ceil(_rule_value(value, n) or 0.0)
    elif callable(value):
        returned: object = value(n)
        if not is_integer(returned):
            raise ConfigError("a size rule must return an integer", path=name)
        size = int(returned)
    else:
        size = int(value)
    if size < low:
        raise ConfigError(f"must be >= {low} (it resolves to {size} for this n)", path=name)
    if below_n and size >= n:
        raise ConfigError(f"must be smaller than n (it resolves to {size}, n = {n})", path=name)
    return size
