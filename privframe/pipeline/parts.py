"""A part of a pipeline: a registered name with its options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs

from privframe._typing import frozen_mapping
from privframe.errors import ConfigError

__all__ = ["Part", "PartSpec"]


@attrs.frozen
class Part:
    """A registered part by name, with its options.

    Parameters
    ----------
    name : str
        The registered name (``"wor"``, ``"mean"``...).
    options : mapping
        Keyword options passed to the part's factory.
    """

    name: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=frozen_mapping, hash=False)

    @classmethod
    def coerce(cls, value: Part | str | Mapping[str, Any], path: str) -> Part:
        """Accept a ``Part``, a bare name, or a table ``{"name": ..., **options}``."""
        if isinstance(value, Part):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            if "name" not in value:
                raise ConfigError("missing (the registered name of the part)", path=f"{path}.name")
            name = value["name"]
            if not isinstance(name, str):
                raise ConfigError("expected a string", path=f"{path}.name")
            return cls(name, {k: v for k, v in value.items() if k != "name"})
        raise ConfigError("expected a name or a table with a 'name' key", path=path)

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., **options}``."""
        return {"name": self.name, **self.options}


PartSpec: TypeAlias = "Part | str | Mapping[str, Any]"
"""How a part is named: a ``Part``, a registered name, or a table ``{"name": ..., **options}``."""
