"""The closed vocabulary of component features that ragsift's own model files may name
(``learned-fusion``'s ``fusion.json``, ``bridge-documents``' ``bridge-documents.json``).

A model file is data that travels (a shared folder, a Hub repository): it holds weights and the
*names* of the component scorers its features come from, never plugin specs. Each name is looked
up in :data:`BUILTIN_COMPONENTS` (a fixed table in code) or in the scorer's ``components`` table
of the user's own config; anything else is refused, naming the file. So a model file cannot make
ragsift build a plugin of its choosing (a remote scorer posting an environment variable to its
server, a scorer naming the model itself): what a model may load is decided by the user's config
(docs/threat-model.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragsift.errors import ConfigError

__all__ = ["BUILTIN_COMPONENTS", "component_specs", "check_model_keys", "split_components", "MODEL_FILE_SCORERS"]

#: feature name -> the scorer spec it stands for; the only specs a model file may reach by itself
BUILTIN_COMPONENTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "bm25": MappingProxyType({"name": "bm25"}),
    # all-MiniLM-L6-v2 (the offline copy ragsift ships), cosine similarity
    "dual-encoder:minilm": MappingProxyType({"name": "dual-encoder", "similarity": "cosine"}),
})

#: scorers that read a model file of this kind: never a component (a model naming itself recurses)
MODEL_FILE_SCORERS = frozenset({"learned-fusion", "bridge-documents"})


def _check_user_spec(label: str, spec: Mapping[str, Any], where: str) -> None:
    if not isinstance(spec, Mapping) or spec.get("name") in MODEL_FILE_SCORERS:
        raise ConfigError(f"{where}: component '{label}' must be a scorer spec other than {sorted(MODEL_FILE_SCORERS)} "
                          f"(a model whose features read a model file could read itself); got {spec!r}.")
    if label in BUILTIN_COMPONENTS and dict(spec) != dict(BUILTIN_COMPONENTS[label]):
        raise ConfigError(f"{where}: '{label}' is ragsift's built-in feature {dict(BUILTIN_COMPONENTS[label])}; "
                          f"give your own spec {dict(spec)} another name, so a model file's '{label}' means one thing.")


def split_components(scorers: list[str] | Mapping[str, Mapping[str, Any]], extra: Mapping[str, Mapping[str, Any]],
                     where: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """A trainer's component scorers (feature names, or the older ``label -> spec`` table of the
    user's config) as ``(label -> spec, the user's own specs the model's scorer config must give)``."""
    own = {k: dict(v) for k, v in extra.items()}
    if not isinstance(scorers, Mapping):
        scorers = {name: own.get(name) or BUILTIN_COMPONENTS.get(name, {}) for name in scorers}
    specs: dict[str, dict[str, Any]] = {}
    for label, spec in scorers.items():
        if not spec:
            raise ConfigError(f"{where}: unknown feature '{label}'; known: {sorted({*BUILTIN_COMPONENTS, *own})} "
                              "(ragsift's table, or 'components = { NAME = SPEC }' of this config).")
        _check_user_spec(label, spec, where)
        specs[label] = dict(spec)
        if label not in BUILTIN_COMPONENTS:
            own[label] = dict(spec)
    for label, spec in own.items():
        _check_user_spec(label, spec, where)
    return specs, {k: v for k, v in own.items() if k in specs}


def component_specs(names: object, key: str, path: Path, components: Mapping[str, Mapping[str, Any]],
                    owner: str) -> dict[str, dict[str, Any]]:
    """``label -> scorer spec`` for the feature names a model file lists under ``key``, from
    ragsift's table and the user's ``components``; a ConfigError naming ``path`` for anything else
    (a plugin spec, an unknown name, a repeated one)."""
    for label, spec in components.items():
        _check_user_spec(label, spec, f"{owner} components")
    table = {**BUILTIN_COMPONENTS, **components}
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{path}: '{key}' must be a list of feature names (known: {sorted(table)}); a model file names "
                          f"its features, never plugin specs ({type(names).__name__} found). Refused: see docs/threat-model.md.")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ConfigError(f"{path}: '{key}' names feature '{unknown[0]}', which is neither ragsift's (known: "
                          f"{sorted(BUILTIN_COMPONENTS)}) nor in {owner}'s 'components' of your config; refused.")
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: '{key}' names a feature twice.")
    return {n: dict(table[n]) for n in names}


def check_model_keys(path: Path, data: Mapping[str, Any], allowed: set[str]) -> None:
    """Refuse a model file holding keys its format does not have (nothing is read that is not checked)."""
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigError(f"{path}: unexpected key(s) {extra} in a model file (expected {sorted(allowed)}); refused.")
