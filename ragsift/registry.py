"""The registry: the only table of plugins, and the one place that builds them.

Plugins are found through pluggy hooks, one per stage (``ragsift.hookspecs``): ragsift's own
plugin packages and third-party modules announced under the entry-point group ``ragsift`` alike,
loaded on the first look-up. A class registered under another stage than its base class declares
is refused, naming it. ``RAGSIFT_PLUGINS`` restricts which installed third-party plugins load:
unset = all; empty (or ``none``) = none; a comma-separated list = only those entry points.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pluggy

from ragsift import hookspecs
from ragsift.errors import ConfigError, DuplicatePluginError, MissingDependencyError, UnknownPluginError
from ragsift.extras import check_extras
from ragsift.plugin import Plugin, merge_spec
from ragsift.suggestions import did_you_mean

__all__ = [
    "STAGES", "BUILTIN_PLUGIN_MODULES", "PluginInfo", "Registry", "get_registry", "reset_registry",
    "build_plugin", "split_spec", "register"
]

#: stage name -> name of its registration hook (``register_`` + the stage's plural)
STAGES: dict[str, str] = {
    stage: f"register_{stage}s"
    for stage in ("splitter", "scorer", "selector", "assembler", "compressor", "judge", "reader", "labeler", "trainer",
                  "dataset", "metric")
}

#: ragsift's own plugin modules, one package per stage (``ragsift.scorers``, ...); each implements
#: its stage's registration hook.
BUILTIN_PLUGIN_MODULES: tuple[str, ...] = tuple(f"ragsift.{stage}s" for stage in STAGES)

ENV_VAR = "RAGSIFT_PLUGINS"


@dataclass(frozen=True)
class PluginInfo:
    stage: str
    name: str
    cls: type
    source: str

    def description(self) -> str:
        """One line saying what the plugin does: its declared ``description``, else the first
        sentence of its class's own docstring (not a base class's), else ``""``."""
        declared = getattr(self.cls, "description", "")
        text = declared if isinstance(declared, str) and declared.strip() else self.cls.__dict__.get("__doc__") or ""
        paragraph = " ".join(text.strip().split("\n\n")[0].split())
        return re.split(r"(?<=[.!?])\s+(?=[A-Z])", paragraph, maxsplit=1)[0]

    def fields(self) -> dict[str, Any]:
        """Config fields of the plugin: name -> (type, default)."""
        model = getattr(self.cls, "Params", None)
        if model is None:
            return {}
        out = {}
        for key, field in model.model_fields.items():
            annotation = getattr(field.annotation, "__name__", None) or str(field.annotation)
            default = None if field.is_required() else field.get_default(call_default_factory=True)
            out[key] = {"type": annotation.replace("typing.", ""), "default": default, "required": field.is_required()}
        return out


class Registry:
    """Plugins of every stage, loaded once, on first use."""

    def __init__(self, modules: tuple[str, ...] = BUILTIN_PLUGIN_MODULES, *, entry_points: bool | None = None) -> None:
        self._modules = modules
        self._entry_points = entry_points
        self._plugins: dict[str, dict[str, PluginInfo]] | None = None
        self._extra: list[tuple[object, str]] = []
        self._lock = threading.Lock()
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)

    def add_plugin(self, plugin: object, source: str | None = None) -> None:
        """Register a plugin object (module or instance) as a third-party package would."""
        with self._lock:
            name = source or getattr(plugin, "__name__", None) or repr(plugin)
            self._extra.append((plugin, name))
            self._plugins = None

    def register(self, name: str, cls: type) -> None:
        """Add one plugin class under ``name`` through the hook of the stage its base declares."""
        hook = STAGES.get(getattr(cls, "stage", None) or "")
        if hook is None:
            raise ConfigError(f"register('{name}', {cls!r}): not a subclass of a ragsift stage base class.")
        self.add_plugin(SimpleNamespace(**{hook: hookspecs.hookimpl(lambda register: register(name, cls))}),
                        f"in-process ({name})")

    def _load_entry_points(self) -> None:
        if self._entry_points is False:
            return
        wanted = os.environ.get(ENV_VAR)
        if self._entry_points is None and wanted is not None:
            allowed = {w.strip() for w in wanted.split(",") if w.strip()} - {"none"}
        else:
            allowed = None
        for ep in importlib.metadata.entry_points(group=hookspecs.PROJECT):
            if allowed is not None and ep.name not in allowed:
                continue
            if self.pm.get_plugin(ep.name) is not None:
                continue
            dist = getattr(ep.dist, "name", None) or ep.value
            self.pm.register(ep.load(), name=f"{ep.name} ({dist})")

    def _load(self) -> dict[str, dict[str, PluginInfo]]:
        with self._lock:
            if self._plugins is not None:
                return self._plugins
            for module_name in self._modules:
                if self.pm.get_plugin(module_name) is None:
                    self.pm.register(importlib.import_module(module_name), name=module_name)
            self._load_entry_points()
            for plugin, name in self._extra:
                if not self.pm.is_registered(plugin):
                    self.pm.register(plugin, name=name)
            try:
                self.pm.check_pending()
            except pluggy.PluginValidationError as exc:  # a hook ragsift does not have (a typo, an old name)
                raise ConfigError(f"{exc}; ragsift's hooks are {', '.join(sorted(STAGES.values()))}.") from None
            table: dict[str, dict[str, PluginInfo]] = {stage: {} for stage in STAGES}
            for stage, hook_name in STAGES.items():
                hook = getattr(self.pm.hook, hook_name)
                for impl in hook.get_hookimpls():
                    source = impl.plugin_name
                    impl.function(register=self._registrar(table[stage], stage, source))
            self._plugins = table
            return table

    @staticmethod
    def _registrar(slot: dict[str, PluginInfo], stage: str, source: str) -> hookspecs.Register:
        def register(name: str, cls: type) -> None:
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{source}: a {stage} name must be a non-empty string; got {name!r}.")
            if not isinstance(cls, type):
                raise ConfigError(f"{source}: register('{name}', ...) expects a class; got {cls!r}.")
            declared = getattr(cls, "stage", None)
            if not issubclass(cls, Plugin) or declared != stage:
                what = f"a {declared}" if declared else "not a subclass of a ragsift stage base class"
                raise ConfigError(
                    f"{source}: {cls.__qualname__} was registered as {stage} '{name}' but is {what}; "
                    f"register it through register_{declared or stage}s, or subclass the {stage} base class."
                )
            if name in slot:
                other = slot[name]
                raise DuplicatePluginError(
                    f"{stage} '{name}' is registered twice: by {other.source} ({other.cls.__qualname__}) "
                    f"and by {source} ({cls.__qualname__}). Rename one of them."
                )
            slot[name] = PluginInfo(stage, name, cls, source)

        return register

    def _check_stage(self, stage: str) -> None:
        if stage not in STAGES:
            raise UnknownPluginError(f"Unknown stage '{stage}'. Stages: {', '.join(STAGES)}.{did_you_mean(stage, STAGES)}")

    def names(self, stage: str) -> list[str]:
        self._check_stage(stage)
        return sorted(self._load()[stage])

    def info(self, stage: str, name: str) -> PluginInfo:
        self._check_stage(stage)
        table = self._load()[stage]
        if name not in table:
            available = ", ".join(sorted(table)) or "(none)"
            raise UnknownPluginError(f"Unknown {stage} '{name}'. Available {stage}s: {available}.{did_you_mean(name, table)}")
        return table[name]

    def get(self, stage: str, name: str) -> type:
        return self.info(stage, name).cls

    def create(self, stage: str, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """Build a plugin from its name and params (validated by the plugin itself); an extra it
        needs that is not installed is an error naming the extra (:mod:`ragsift.extras`)."""
        cls = self.get(stage, name)
        instance = cls(**(params or {}))
        instance.registered_name = name
        check_extras(instance, f"{stage} '{name}'")
        return instance

    def build(self, stage: str, spec: Mapping[str, Any] | None, where: str = "",
              default: Mapping[str, Any] | None = None) -> Any:
        """Build a plugin from a spec table (``{"name": ..., **params}``) laid over ``default``
        (:func:`ragsift.plugin.merge_spec`), naming ``where`` the spec came from in any error."""
        name, params = split_spec(stage, merge_spec(default, spec), where)
        try:
            return self.create(stage, name, params)
        # the file and table that named it (e.g. [compressors.LABEL])
        except (ConfigError, UnknownPluginError, MissingDependencyError) as exc:
            raise type(exc)(f"{where}: {exc}" if where else str(exc)) from None

    def all(self) -> dict[str, list[PluginInfo]]:
        table = self._load()
        return {stage: [table[stage][n] for n in sorted(table[stage])] for stage in STAGES}

    def describe(self, stages: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Stage -> its plugins as JSON-ready dicts (name, description, class, source, config fields,
        the extras it needs with its default params): ``ragsift plugins --json`` and the service's
        ``GET /plugins``."""
        table = self.all()
        return {stage: [{"name": p.name, "description": p.description(), "class": p.cls.__qualname__,
                         "source": p.source, "fields": p.fields(), "extras": list(getattr(p.cls, "extras", ()))}
                        for p in table[stage]] for stage in (stages or list(table))}


def split_spec(stage: str, spec: Mapping[str, Any], where: str = "") -> tuple[str, dict[str, Any]]:
    """``{"name": n, **params}`` -> ``(n, params)``."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where or stage}: expected a table with 'name' and params; got {spec!r}.")
    params = dict(spec)
    name = params.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where or stage}: a {stage} table needs a 'name' (a registered {stage}); got {name!r}.")
    return name, params


_default: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry (built-ins plus installed third-party plugins)."""
    global _default
    if _default is None:
        _default = Registry()
    return _default


def reset_registry() -> None:
    """Forget the process-wide registry (tests; after installing a plugin)."""
    global _default
    _default = None


def build_plugin(stage: str, spec: Mapping[str, Any] | None, where: str = "",
                 default: Mapping[str, Any] | None = None) -> Any:
    """A plugin of the process-wide registry from a spec table (see :meth:`Registry.build`)."""
    return get_registry().build(stage, spec, where, default)


def register(name: str, cls: type) -> None:
    """Register a plugin class in this process (a notebook, a test) under ``name``, in the stage
    its base class declares: ``ragsift.register("acme-length", LengthScorer)``. Installed
    packages use the entry-point group ``ragsift`` instead (docs/plugins.md)."""
    get_registry().register(name, cls)
