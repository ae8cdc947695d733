"""Checking the population laws experiments hand to ``population_value``."""

from __future__ import annotations

from typing import Any

from privframe.errors import ConfigError

__all__ = ["population_law"]


def population_law(population: Any, member: str, statistic: str) -> Any:
    """``population`` if it offers ``member`` (``mean``, ``ppf``, ``cdf``), else a ``ConfigError``."""
    if not callable(getattr(population, member, None)):
        raise ConfigError(
            f"statistic '{statistic}' has no population value for this data generator (it needs the law's "
            f"{member}); give the method's truth explicitly",
            path="truth",
        )
    return population
