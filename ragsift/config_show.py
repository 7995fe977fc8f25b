"""``ragsift config show``: a config with every default filled in, as a TOML table that reloads to
the same config.

TOML has no null. A param whose value is None is left out when leaving it out reloads to None (the
plugin's default is None too); where the default is something else (EXIT's scorer has a default
LoRA adapter, which ``adapter = ""`` switches off) it is written as ``""``, the configs' way to
say "none" (:data:`ragsift.plugin.OptionalName`). Which way is chosen by reloading, one value at a
time; the table is reloaded and compared before it is shown, and a config that no TOML table
reproduces is an error rather than a table that means another config.
"""

from __future__ import annotations

import copy
from typing import Any

from ragsift.config import RunConfig
from ragsift.errors import ConfigError, RagsiftError

__all__ = ["reloadable_table", "reloaded"]

KeyPath = tuple[str, ...]


def reloaded(table: dict[str, Any], source: str) -> dict[str, Any]:
    """The resolved config (:meth:`RunConfig.resolved`) that ``table`` would load to."""
    return RunConfig.from_table(table, source).resolved()


def reloadable_table(config: RunConfig) -> dict[str, Any]:
    """``config.resolved()`` without None values, each None that a reload would not bring back
    written as ``""``; a :class:`ConfigError` when the table does not reload to the config."""
    resolved = config.resolved()
    if config.tuned is not None:  # the record of 'ragsift tune' (read by nothing, kept as the file has it)
        resolved["tuned"] = config.tuned
    # each None on its own: left out (every other value as it is), does it load back as None?
    blank = {path for path in _none_paths(resolved) if not _comes_back_as_none(resolved, path, config.source)}
    table = _without(resolved, blank)
    try:
        again = reloaded(table, config.source)
    except RagsiftError as exc:
        raise ConfigError(f"{config.source}: 'config show' cannot write this config as TOML that loads ({exc}); "
                          "use --json.") from None
    if _comparable(again) != _comparable(resolved):
        raise ConfigError(f"{config.source}: 'config show' cannot write this config as TOML that reloads to it "
                          "(TOML has no null; a value that is None comes back otherwise); use --json.")
    return table


def _comes_back_as_none(resolved: dict[str, Any], path: KeyPath, source: str) -> bool:
    trial = copy.deepcopy(resolved)
    parent = trial
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    try:
        return _get(reloaded(trial, source), path) is None
    except RagsiftError:
        return False


def _comparable(resolved: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in resolved.items() if k != "tuned"}


def _none_paths(value: Any, path: KeyPath = ()) -> list[KeyPath]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _none_paths(v, (*path, str(k)))]
    return [path] if value is None else []


def _get(value: Any, path: KeyPath) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _without(value: Any, as_blank: set[KeyPath], path: KeyPath = ()) -> Any:
    """``value`` without None entries, except those at ``as_blank``, written as ``""``."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            here = (*path, str(k))
            if v is None and here not in as_blank:
                continue
            out[k] = "" if v is None else _without(v, as_blank, here)
        return out
    if isinstance(value, list):
        return [_without(v, as_blank, path) for v in value if v is not None]
    return value
