"""pluggy hook specifications: one registration hook per plugin kind.

Each hook receives a typed registry (tox style) and calls ``registry.add(...)``. Implement them with
``@pp.hookimpl`` in a module named by an entry point in the ``privframe`` group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from privframe.plugin.registration import (
        AccountantRegistry,
        MechanismRegistry,
        MethodRegistry,
        SamplerRegistry,
        StatisticRegistry,
    )

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "privframe"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def privframe_register_statistics(registry: StatisticRegistry) -> None:
    """Register statistics with ``registry.add(factory)``."""


@hookspec
def privframe_register_samplers(registry: SamplerRegistry) -> None:
    """Register samplers with ``registry.add(factory)``."""


@hookspec
def privframe_register_mechanisms(registry: MechanismRegistry) -> None:
    """Register mechanisms with ``registry.add(factory, asserts_privacy=True)``.

    The explicit opt-in records that the plugin's author, not privframe, vouches for the mechanism's
    privacy guarantee.
    """


@hookspec
def privframe_register_accountants(registry: AccountantRegistry) -> None:
    """Register accountants with ``registry.add(factory)``."""


@hookspec
def privframe_register_methods(registry: MethodRegistry) -> None:
    """Register methods with ``registry.add(factory)``."""
