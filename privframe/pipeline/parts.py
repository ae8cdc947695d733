"""A part of a pipeline: a registered name with its options; and the rules for options given twice."""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs
import numpy as np

from privframe._typing import frozen_mapping
from privframe.errors import ConfigError, join_path
from privframe.validators import as_int

__all__ = ["Part", "PartSpec", "load_json", "plain_options", "same_setting"]


def plain_options(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """``options`` as a read-only copy in which every integer (``np.int64(500)``) is the Python int of the same
    value, so a pipeline's options (and its JSON) hold plain ints; nothing else is changed.

    Parameters
    ----------
    options : mapping
        Option names to values, as given.

    Returns
    -------
    mapping
        A read-only copy.
    """
    return frozen_mapping({key: as_int(value) for key, value in options.items()})


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "integer"
    if isinstance(value, numbers.Real):
        return "real"
    return type(value).__qualname__


def same_setting(first: object, second: object) -> bool:
    """Whether two values given for one setting are the same setting: equal, and of the same kind.

    ``500`` and ``np.int64(500)`` are the same; ``500`` and ``500.0`` are not (a float is not a valid count), nor
    are ``1`` and ``True``. Values whose comparison is not a plain true or false (arrays) are never the same.

    Parameters
    ----------
    first, second : object
        The two values.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from privframe.pipeline.parts import same_setting
    >>> same_setting(500, np.int64(500)), same_setting(500, 500.0), same_setting("paper", "noise-aware")
    (True, False, False)
    """
    if first is second:
        return True
    if _kind(first) != _kind(second):
        return False
    try:
        equal = first == second
    except Exception:  # a comparison that fails is not an equality
        return False
    return isinstance(equal, (bool, np.bool_)) and bool(equal)


class _Pairs(dict[str, Any]):
    """A JSON object, with the keys it was given twice with different values."""

    twice: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Pairs:
    table = _Pairs()
    twice: list[str] = []
    for key, value in pairs:
        if key in table and not same_setting(table[key], value) and key not in twice:
            twice.append(key)
        table[key] = value
    table.twice = tuple(twice)
    return table


def _plain(value: Any, path: str | None) -> Any:
    """``value`` with every JSON object a plain dict; a ``ConfigError`` at the first key given twice."""
    if isinstance(value, _Pairs):
        if value.twice:
            raise ConfigError(
                "given twice in one table with different values; give it once", path=join_path(path, value.twice[0])
            )
        return {key: _plain(item, join_path(path, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, join_path(path, str(index))) for index, item in enumerate(value)]
    return value


def load_json(text: str) -> Any:
    """Parse a JSON config, refusing a key given twice in one object with different values.

    ``json.loads`` silently keeps the last of two equal keys; a config that sets ``"B"`` twice is a
    conflict the user must resolve, so it is a ``ConfigError`` whose path names the key (``sampler.B``). The
    same key twice with the same value is accepted. Invalid JSON raises ``json.JSONDecodeError``, as
    ``json.loads`` does.

    Parameters
    ----------
    text : str
        The JSON text.

    Returns
    -------
    object
        The parsed value, with plain dicts and lists.

    Examples
    --------
    >>> from privframe.pipeline.parts import load_json
    >>> load_json('{"sampler": {"name": "wor", "B": 500, "B": 500}}')
    {'sampler': {'name': 'wor', 'B': 500}}
    >>> load_json('{"sampler": {"name": "wor", "B": 500, "B": 1000}}')
    Traceback (most recent call last):
    ...
    privframe.errors.ConfigError: sampler.B: given twice in one table with different values; give it once
    """
    return _plain(json.loads(text, object_pairs_hook=_pairs), None)


@attrs.frozen
class Part:
    """A registered part by name, with its options.

    Parameters
    ----------
    name : str
        The registered name (``"wor"``, ``"mean"``...).
    options : mapping
        Keyword options passed to the part's factory (integers such as ``np.int64(500)`` are stored as ints).
    """

    name: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=plain_options, hash=False)

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
