"""The plugin registry: pluggy underneath, a typed facade on top.

Plugins are modules (or objects) exposing ``@pf.hookimpl`` registration hooks, found through the
``privframe`` entry-point group. Built-in parts use the same path as third-party ones. Names are unique
per kind; a duplicate is a :class:`~privframe.errors.PluginError` naming both plugins.
Set ``PRIVFRAME_DISABLE_PLUGINS=name1,name2`` to block plugins by their entry-point name.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeAlias, TypeVar, get_args

import attrs
import pluggy

from privframe import hookspecs
from privframe.errors import ConfigError, PluginError, PrivframeError
from privframe.protocols import (
    Accountant,
    Mechanism,
    Method,
    Sampler,
    SelectionMechanism,
    SmoothMechanism,
    Statistic,
)

__all__ = [
    "KINDS",
    "AccountantRegistry",
    "Kind",
    "MechanismRegistry",
    "MethodRegistry",
    "PluginEntry",
    "PluginRegistry",
    "SamplerRegistry",
    "StatisticRegistry",
    "registry",
]

Kind: TypeAlias = Literal["statistic", "sampler", "mechanism", "accountant", "method"]
KINDS: tuple[Kind, ...] = get_args(Kind)
DISABLE_ENV = "PRIVFRAME_DISABLE_PLUGINS"
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_PROTOCOLS: dict[Kind, tuple[type, ...]] = {
    "statistic": (Statistic,),
    "sampler": (Sampler,),
    # A mechanism implements at least one mechanism protocol: additive noise, a smooth-bound release, or a
    # selection from the data (the exponential mechanism).
    "mechanism": (Mechanism, SmoothMechanism, SelectionMechanism),
    "accountant": (Accountant,),
    "method": (Method,),
}

T = TypeVar("T")


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
        try:
            params = inspect.signature(self.factory).parameters.values()
        except (TypeError, ValueError):
            return ()
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return tuple(p.name for p in params if p.kind in kinds)

    def create(self, options: Mapping[str, object], path: str) -> Any:
        """Instantiate with ``options``; unknown or invalid options raise ``ConfigError`` naming ``path``."""
        declared = self.options()
        for key in options:
            if key not in declared:
                known = ", ".join(declared) or "none"
                raise ConfigError(f"{path}.{key}: unknown option for {self.kind} '{self.name}' (known: {known})")
        try:
            part = self.factory(**options)
        except PrivframeError as exc:
            raise ConfigError(_with_path(path, str(exc), declared)) from exc
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: invalid options for {self.kind} '{self.name}': {exc}") from exc
        protocols = _PROTOCOLS[self.kind]
        if not isinstance(part, protocols):
            raise PluginError(
                f"{self.kind} '{self.name}' from plugin '{self.plugin}' does not implement the "
                f"{' or '.join(p.__name__ for p in protocols)} protocol"
            )
        return part


def _with_path(path: str, message: str, declared: tuple[str, ...]) -> str:
    head = message.split(":", 1)[0]
    if head in declared:
        return f"{path}.{message}"
    return f"{path}: {message}"


class _KindRegistry(Generic[T]):
    """Handed to a registration hook; ``add`` records parts for one kind on behalf of one plugin."""

    kind: Kind

    def __init__(self, sink: _Collector) -> None:
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
                "asserts_privacy: a mechanism must be registered with asserts_privacy=True, stating that its "
                "author vouches for its privacy guarantee"
            )
        self._sink.add(self.kind, factory, name, asserts_privacy=True)


class _Collector:
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


_HOOKS: tuple[tuple[str, type[_KindRegistry[Any]]], ...] = (
    ("privframe_register_statistics", StatisticRegistry),
    ("privframe_register_samplers", SamplerRegistry),
    ("privframe_register_mechanisms", MechanismRegistry),
    ("privframe_register_accountants", AccountantRegistry),
    ("privframe_register_methods", MethodRegistry),
)


class _Hooks:
    """Typed facade over ``pm.hook``: each call is checked by mypy and attributed to its plugin."""

    def __init__(self, pm: pluggy.PluginManager, distributions: Mapping[str, str]) -> None:
        self._pm = pm
        self._distributions = distributions

    def register_all(self, collector: _Collector) -> None:
        for hook_name, registry_type in _HOOKS:
            hook: pluggy.HookCaller = getattr(self._pm.hook, hook_name)
            # Called one implementation at a time (pluggy's call order, newest registration first) so that
            # every part is attributed to the plugin that registered it and a failing plugin is named.
            for impl in reversed(hook.get_hookimpls()):
                collector.plugin = impl.plugin_name
                collector.distribution = self._distributions.get(impl.plugin_name, "-")
                kind_registry = registry_type(collector)
                try:
                    impl.function(**{arg: kind_registry for arg in impl.argnames})
                except PluginError:
                    raise
                except Exception as exc:
                    raise PluginError(
                        f"plugin '{impl.plugin_name}' raised {type(exc).__name__} in {hook_name}: {exc}"
                    ) from exc


class PluginRegistry:
    """Loads plugins and looks parts up by kind and name.

    The module-level instance is ``pf.registry``. Loading is lazy and thread-safe; ``register`` and
    ``unregister`` (for tests and interactive use) invalidate the cache.
    """

    def __init__(self, *, entry_points: bool = True) -> None:
        self._load_entry_points = entry_points
        self._lock = threading.RLock()
        self._manual: dict[str, object] = {}
        self._pm: pluggy.PluginManager | None = None
        self._entries: dict[tuple[Kind, str], PluginEntry] | None = None

    def _manager(self) -> pluggy.PluginManager:
        if self._pm is None:
            pm = pluggy.PluginManager(hookspecs.PROJECT)
            pm.add_hookspecs(hookspecs)
            for blocked in _disabled_plugins():
                pm.set_blocked(blocked)
            if self._load_entry_points:
                try:
                    pm.load_setuptools_entrypoints(hookspecs.PROJECT)
                except Exception as exc:
                    raise PluginError(f"loading entry-point plugins failed: {type(exc).__name__}: {exc}") from exc
            for name, plugin in self._manual.items():
                if not pm.is_blocked(name):
                    try:
                        pm.register(plugin, name=name)
                    except pluggy.PluginValidationError as exc:
                        raise PluginError(f"plugin '{name}': {exc}") from exc
            try:
                pm.check_pending()
            except pluggy.PluginValidationError as exc:
                bad = pm.get_name(exc.plugin) or repr(exc.plugin)
                raise PluginError(f"plugin '{bad}' implements an unknown hook: {exc}") from exc
            self._pm = pm
        return self._pm

    def _load(self) -> dict[tuple[Kind, str], PluginEntry]:
        with self._lock:
            if self._entries is None:
                pm = self._manager()
                distributions = {
                    str(pm.get_name(plugin)): f"{dist.project_name} {dist.version}"
                    for plugin, dist in pm.list_plugin_distinfo()
                }
                collector = _Collector()
                _Hooks(pm, distributions).register_all(collector)
                self._entries = collector.entries
            return self._entries

    def reload(self) -> None:
        """Forget everything loaded (re-reads entry points and ``PRIVFRAME_DISABLE_PLUGINS``)."""
        with self._lock:
            self._pm = None
            self._entries = None

    def register(self, plugin: object, name: str | None = None) -> str:
        """Register a plugin object (a module or any object with hook implementations) in code."""
        with self._lock:
            name = name or getattr(plugin, "__name__", None) or f"plugin-{id(plugin)}"
            if name in self._manual:
                raise PluginError(f"plugin '{name}' is already registered")
            self._manual[name] = plugin
            self.reload()
            try:
                self._load()
            except PrivframeError:
                del self._manual[name]
                self.reload()
                raise
            return name

    def unregister(self, name: str) -> None:
        """Remove a plugin registered with :meth:`register`."""
        with self._lock:
            if self._manual.pop(name, None) is None:
                raise PluginError(f"plugin '{name}' was not registered in code")
            self.reload()

    def names(self, kind: Kind) -> tuple[str, ...]:
        """Registered names of one kind, sorted."""
        _check_kind(kind)
        return tuple(sorted(name for (k, name) in self._load() if k == kind))

    def entries(self, kind: Kind | None = None) -> tuple[PluginEntry, ...]:
        """All entries (of one kind), sorted by kind then name."""
        if kind is not None:
            _check_kind(kind)
        entries = self._load().values()
        chosen = [e for e in entries if kind is None or e.kind == kind]
        return tuple(sorted(chosen, key=lambda e: (KINDS.index(e.kind), e.name)))

    def get(self, kind: Kind, name: str, *, path: str | None = None) -> PluginEntry:
        """The entry for ``name``; an unknown name raises ``ConfigError`` naming ``path`` with suggestions."""
        _check_kind(kind)
        entries = self._load()
        if not isinstance(name, str):
            raise ConfigError(f"{path or kind}: expected the name of a registered {kind}")
        entry = entries.get((kind, name))
        if entry is None:
            known = self.names(kind)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"{path or kind}: unknown {kind} '{name}'{hint} (registered: {', '.join(known) or 'none'})"
            )
        return entry

    def create(
        self, kind: Kind, name: str, options: Mapping[str, object] | None = None, *, path: str | None = None
    ) -> Any:
        """Look up and instantiate a part."""
        return self.get(kind, name, path=path).create(options or {}, path or kind)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"kind: expected one of {', '.join(KINDS)}")


def _disabled_plugins() -> list[str]:
    raw = os.environ.get(DISABLE_ENV, "")
    return [name.strip() for name in raw.split(",") if name.strip()]


registry = PluginRegistry()
"""The process-wide registry (``pf.registry``)."""
