"""Checks shared by the noise mechanisms."""

from __future__ import annotations

import math

from privframe.errors import BudgetError

__all__ = ["check_sensitivity"]


def check_sensitivity(sensitivity: float) -> float:
    """A finite, non-negative sensitivity."""
    value = float(sensitivity)
    if not math.isfinite(value) or value < 0:
        raise BudgetError("must be a finite number >= 0", path="sensitivity")
    return value
