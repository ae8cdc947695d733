"""Registration: the entries a registry holds, and the typed registries handed to plugin hooks.

A plugin's hook receives one typed registry per kind (tox style) and calls ``registry.add(factory)``; a
:class:`PluginEntry` records the factory with its provenance and instantiates it with validated options.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeAlias, TypeVar, get_args

import attrs

from privframe.errors import ConfigError, PluginError, PrivframeError, join_path
from privframe.plugin.method import Method
from privframe.plugin.protocols import (
    MECHANISM_PROTOCOLS,
    Accountant,
    Mechanism,
    Sampler,
    SelectionMechanism,
    SmoothMechanism,
    Statistic,
)

__all__ = [
    "HOOKS",
    "KINDS",
    "PROTOCOLS",
    "AccountantRegistry",
    "Collector",
    "Kind",
    "MechanismRegistry",
    "MethodRegistry",
    "PluginEntry",
    "SamplerRegistry",
    "StatisticRegistry",
    "check_protocol",
]

Kind: TypeAlias = Literal["statistic", "sampler", "mechanism", "accountant", "method"]
KINDS: tuple[Kind, ...] = get_args(Kind)
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
PROTOCOLS: dict[Kind, tuple[type[Any], ...]] = {
    "statistic": (Statistic,),
    "sampler": (Sampler,),
    # A mechanism implements at least one mechanism protocol: additive noise, a smooth-bound release, or a
    # selection from the data (the exponential mechanism).
    "mechanism": MECHANISM_PROTOCOLS,
    "accountant": (Accountant,),
    "method": (Method,),
}

T = TypeVar("T")


def protocol_members(protocol: type[Any]) -> tuple[str, ...]:
    """The public members a protocol requires (methods, properties and annotated attributes)."""
    names = {name for name in vars(protocol) if not name.startswith("_")}
    names.update(name for name in getattr(protocol, "__annotations__", {}) if not name.startswith("_"))
    return tuple(sorted(names))


def check_protocol(part: object, protocols: type[Any] | tuple[type[Any], ...], what: str) -> None:
    """Raise ``PluginError`` naming the missing members unless ``part`` implements one of ``protocols``."""
    candidates = protocols if isinstance(protocols, tuple) else (protocols,)
    if isinstance(part, candidates):
        return
    gaps = []
    for protocol in candidates:
        missing = [name for name in protocol_members(protocol) if not hasattr(part, name)]
        gaps.append(f"{protocol.__name__} (missing: {', '.join(missing) or 'none'})")
    raise PluginError(f"{what} does not implement the {' or '.join(gaps)} protocol")


@functools.lru_cache(maxsize=256)
def declared_options(factory: Callable[..., object]) -> tuple[str, ...]:
    """The keyword options ``factory`` declares (its signature, read once per factory: every call builds parts)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(p.name for p in params if p.kind in kinds)


@attrs.frozen
class PluginEntry:
    """One registered part: its kind, name, factory and provenance.

    Attributes
    ----------
    kind, name : str
        Where it is registered.
    factory : callable
        Called with the part's options (usually an attrs class).
    plugin : str
        The pluggy plugin (entry-point name) that registered it.
    distribution : str
        The installed distribution providing the plugin (``"-"`` for plugins registered in code).
    asserts_privacy : bool
        True for mechanisms whose author vouches for their privacy guarantee.
    """

    kind: Kind
    name: str
    factory: Callable[..., object] = attrs.field(repr=False)
    plugin: str
    distribution: str
    asserts_privacy: bool = False

    def options(self) -> tuple[str, ...]:
        """The option names the factory declares."""
        return declared_options(self.factory)

    def create(self, options: Mapping[str, object], path: str) -> Any:
        """Instantiate with ``options``; unknown or invalid options raise ``ConfigError`` naming ``path``."""
        declared = self.options()
        for key in options:
            if key not in declared:
                known = ", ".join(declared) or "none"
                raise ConfigError(
                    f"unknown option for {self.kind} '{self.name}' (known: {known})", path=f"{path}.{key}"
                )
        try:
            part = self.factory(**options)
        except PrivframeError as exc:
            raise ConfigError(exc.message, path=join_path(path, exc.path)) from exc
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"invalid options for {self.kind} '{self.name}': {exc}", path=path) from exc
        check_protocol(part, PROTOCOLS[self.kind], f"{self.kind} '{self.name}' from plugin '{self.plugin}'")
        return part


class _KindRegistry(Generic[T]):
    """Handed to a registration hook; ``add`` records parts for one kind on behalf of one plugin."""

    kind: Kind

    def __init__(self, sink: Collector) -> None:
        self._sink = sink

    def add(self, factory: Callable[..., T], *, name: str | None = None) -> None:
        """Register ``factory`` under ``name`` (default: its ``name`` attribute)."""
        self._sink.add(self.kind, factory, name, asserts_privacy=False)


class StatisticRegistry(_KindRegistry[Statistic]):
    """Registry of statistics, passed to ``privframe_register_statistics``."""

    kind: Kind = "statistic"


class SamplerRegistry(_KindRegistry[Sampler]):
    """Registry of samplers, passed to ``privframe_register_samplers``."""

    kind: Kind = "sampler"


class AccountantRegistry(_KindRegistry[Accountant]):
    """Registry of accountants, passed to ``privframe_register_accountants``."""

    kind: Kind = "accountant"


class MethodRegistry(_KindRegistry[Method]):
    """Registry of methods, passed to ``privframe_register_methods``."""

    kind: Kind = "method"


class MechanismRegistry(_KindRegistry[Mechanism]):
    """Registry of mechanisms, passed to ``privframe_register_mechanisms``.

    A mechanism's privacy guarantee cannot be checked by privframe; its plugin must opt in explicitly
    with ``asserts_privacy=True``, and ``privframe plugins`` shows who asserted it.
    """

    kind: Kind = "mechanism"

    def add(  # type: ignore[override]
        self,
        factory: Callable[..., Mechanism | SmoothMechanism | SelectionMechanism],
        *,
        asserts_privacy: bool,
        name: str | None = None,
    ) -> None:
        """Register a mechanism; ``asserts_privacy=True`` is required."""
        if asserts_privacy is not True:
            raise PluginError(
                "a mechanism must be registered with asserts_privacy=True, stating that its "
                "author vouches for its privacy guarantee",
                path="asserts_privacy",
            )
        self._sink.add(self.kind, factory, name, asserts_privacy=True)


class Collector:
    """Collects entries from hook calls, attributing each to the plugin being called."""

    def __init__(self) -> None:
        self.entries: dict[tuple[Kind, str], PluginEntry] = {}
        self.plugin = ""
        self.distribution = "-"

    def add(self, kind: Kind, factory: Callable[..., object], name: str | None, *, asserts_privacy: bool) -> None:
        if not callable(factory):
            raise PluginError(f"plugin '{self.plugin}': a {kind} factory must be callable")
        resolved = name if name is not None else getattr(factory, "name", None)
        if not isinstance(resolved, str) or not _NAME.match(resolved):
            raise PluginError(
                f"plugin '{self.plugin}': {kind} names must be lower-case words joined by hyphens (got a "
                f"missing or malformed name)"
            )
        previous = self.entries.get((kind, resolved))
        if previous is not None:
            raise PluginError(
                f"{kind} '{resolved}' is registered twice: by plugin '{previous.plugin}' "
                f"({previous.distribution}) and by plugin '{self.plugin}' ({self.distribution})"
            )
        self.entries[(kind, resolved)] = PluginEntry(
            kind, resolved, factory, self.plugin, self.distribution, asserts_privacy
        )


HOOKS: tuple[tuple[str, type[_KindRegistry[Any]]], ...] = (
    ("privframe_register_statistics", StatisticRegistry),
    ("privframe_register_samplers", SamplerRegistry),
    ("privframe_register_mechanisms", MechanismRegistry),
    ("privframe_register_accountants", AccountantRegistry),
    ("privframe_register_methods", MethodRegistry),
)
