"""The plugin registry: pluggy underneath, a typed facade on top.

Plugins are modules (or objects) exposing ``@pp.hookimpl`` registration hooks, found through the
``privframe`` entry-point group. Built-in parts use the same path as third-party ones. Names are unique
per kind; a duplicate is a :class:`~privframe.errors.PluginError` naming both plugins.
Set ``PRIVFRAME_DISABLE_PLUGINS=name1,name2`` to block plugins by their entry-point name.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Mapping
from typing import Any

import pluggy

from privframe.errors import ConfigError, PluginError, PrivframeError
from privframe.plugin import hookspecs
from privframe.plugin.registration import (
    HOOKS,
    KINDS,
    AccountantRegistry,
    Collector,
    Kind,
    MechanismRegistry,
    MethodRegistry,
    PluginEntry,
    SamplerRegistry,
    StatisticRegistry,
)

__all__ = [
    "DISABLE_ENV",
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

DISABLE_ENV = "PRIVFRAME_DISABLE_PLUGINS"


class _Hooks:
    """Calls the registration hooks through pluggy's hook callers, one plugin at a time.

    Each plugin's implementations run through ``pm.subset_hook_caller`` with every other plugin left out, so
    pluggy's ordering, tracing (``pm.trace``, ``pm.enable_tracing()``) and hook-call monitoring see each call,
    and every part is attributed to the plugin that registered it (a failing plugin is named). Plugins are
    called in pluggy's order (the last registered first).
    """

    def __init__(self, pm: pluggy.PluginManager, distributions: Mapping[str, str]) -> None:
        self._pm = pm
        self._distributions = distributions

    def register_all(self, collector: Collector) -> None:
        for hook_name, registry_type in HOOKS:
            hook: pluggy.HookCaller = getattr(self._pm.hook, hook_name)
            plugins = [impl.plugin for impl in reversed(hook.get_hookimpls())]
            for plugin in plugins:
                name = str(self._pm.get_name(plugin))
                collector.plugin = name
                collector.distribution = self._distributions.get(name, "-")
                others = [other for other in plugins if other is not plugin]
                caller = self._pm.subset_hook_caller(hook_name, remove_plugins=others)
                try:
                    caller(registry=registry_type(collector))
                except PluginError:
                    raise
                except Exception as exc:
                    raise PluginError(f"plugin '{name}' raised {type(exc).__name__} in {hook_name}: {exc}") from exc


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
                collector = Collector()
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
            raise ConfigError(f"expected the name of a registered {kind}", path=path or kind)
        entry = entries.get((kind, name))
        if entry is None:
            known = self.names(kind)
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"unknown {kind} '{name}'{hint} (registered: {', '.join(known) or 'none'})", path=path or kind
            )
        return entry

    def create(
        self,
        kind: Kind,
        name: str,
        options: Mapping[str, object] | None = None,
        *,
        path: str | None = None,
        **keyword_options: object,
    ) -> Any:
        """Look up and instantiate a part, with options as a mapping and/or keywords.

        >>> import privframe as pf
        >>> pf.registry.create("sampler", "wor", B=200).B
        200
        """
        return self.get(kind, name, path=path).create({**(options or {}), **keyword_options}, path or kind)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"expected one of {', '.join(KINDS)}", path="kind")


def _disabled_plugins() -> list[str]:
    raw = os.environ.get(DISABLE_ENV, "")
    return [name.strip() for name in raw.split(",") if name.strip()]


registry = PluginRegistry()
"""The process-wide registry (``pf.registry``)."""
