"""Option validators shared by the core and every plugin (attrs validators raising ``ConfigError``).

Each validator has the attrs signature ``validator(instance, attribute, value)`` and raises
:class:`~privframe.errors.ConfigError` with the option's name as its path, so a user sees
``method.share: must be a number in (0, 1)`` wherever the option was set.

Examples
--------
>>> import attrs
>>> import privframe.plugin as pp
>>> @attrs.frozen
... class Options:
...     share: float = attrs.field(default=0.5, validator=pp.validators.probability)
...     grid_size: int = attrs.field(default=300, validator=pp.validators.integer_at_least(10))
...     ci: str = attrs.field(default="basic", validator=pp.validators.choice("basic", "percentile"))
>>> Options(share=1.5)
Traceback (most recent call last):
...
privframe.errors.ConfigError: share: must be a number in (0, 1)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeAlias

from privframe._typing import is_integer
from privframe.errors import ConfigError
from privframe.resampling.sizes import check_size_rule

__all__ = [
    "Validator",
    "as_int",
    "boolean",
    "choice",
    "finite",
    "integer_at_least",
    "is_integer",
    "optional",
    "positive",
    "probability",
    "size",
]

Validator: TypeAlias = Callable[[Any, Any, Any], None]
"""``validator(instance, attribute, value)``, the attrs validator signature."""


def as_int(value: Any) -> Any:
    """An attrs converter: an integer (:func:`is_integer`, e.g. ``np.int64(500)``) becomes the Python int of the
    same value, so what is stored (and written to JSON) is a plain int; anything else is returned unchanged,
    for the field's validator to accept or refuse (a bool, a float such as ``500.0`` and a string are refused).

    Parameters
    ----------
    value : object
        The option as given.

    Returns
    -------
    object
        ``int(value)`` for an integer, else ``value`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> from privframe.validators import as_int
    >>> type(as_int(np.int64(500))).__name__, as_int(500.0), as_int(True)
    ('int', 500.0, True)
    """
    if is_integer(value):
        return int(value)
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, float) or is_integer(value)


def probability(_: Any, attribute: Any, value: Any) -> None:
    """A number strictly between 0 and 1."""
    if not _is_number(value) or not 0 < value < 1:
        raise ConfigError("must be a number in (0, 1)", path=attribute.name)


def positive(_: Any, attribute: Any, value: Any) -> None:
    """A finite number > 0."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise ConfigError("must be a finite number > 0", path=attribute.name)


def finite(_: Any, attribute: Any, value: Any) -> None:
    """A finite number."""
    if not _is_number(value) or not math.isfinite(value):
        raise ConfigError("must be a finite number", path=attribute.name)


def boolean(_: Any, attribute: Any, value: Any) -> None:
    """``True`` or ``False`` (not 0 or 1)."""
    if not isinstance(value, bool):
        raise ConfigError("must be true or false", path=attribute.name)


def size(_: Any, attribute: Any, value: Any) -> None:
    """A resample size: an int >= 2, a rule in n (``"n/log(n)"``) or a function of n
    (:mod:`privframe.resampling.sizes`)."""
    check_size_rule(attribute.name, value)


def integer_at_least(low: int) -> Validator:
    """An integer ``>= low``: an int or any ``numbers.Integral`` such as ``np.int64`` (not a bool, not a float
    such as ``500.0``). Pair it with ``converter=as_int`` so the stored value is a plain int."""

    def check(_: Any, attribute: Any, value: Any) -> None:
        if not is_integer(value) or value < low:
            raise ConfigError(f"must be an integer >= {low}", path=attribute.name)

    return check


def choice(*allowed: str) -> Validator:
    """One of ``allowed``."""

    def check(_: Any, attribute: Any, value: Any) -> None:
        if value not in allowed:
            raise ConfigError(f"must be one of {', '.join(repr(a) for a in allowed)}", path=attribute.name)

    return check


def optional(validator: Validator) -> Validator:
    """``None``, or a value ``validator`` accepts (its message then ends in "or omitted")."""

    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value is None:
            return
        try:
            validator(instance, attribute, value)
        except ConfigError as exc:
            raise ConfigError(f"{exc.message} or omitted", path=exc.path) from None

    return check
