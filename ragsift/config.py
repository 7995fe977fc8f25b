"""Configs by name: TOML files that name plugins and their params.

A run config holds one ``[compressor]`` or several labelled ``[compressors.LABEL]`` tables, an
optional ``[dataset]``, ``[reader]`` and ``[evaluation]`` table. A plugin table has ``name`` and
the plugin's params; a stage table under a named compressor overrides that stage's params, or
swaps the plugin when it names another (``[compressor.selector]`` ``name = "top-k"``). Plugins
are built by the registry (:func:`ragsift.registry.build_plugin`).

``include = ["reader-qwen1.5b.toml"]`` (top level; paths relative to the including file) reads
other config files first, in order, and merges this file over them: tables merge key by key,
any other value replaces, and a plugin table that names another plugin (``name`` differs)
replaces the included table whole. Included files may include others; a cycle is an error.
A compressor table may include one compressor of another config: ``[compressors.exit-trained]``
``include = "exit-trained.toml"`` takes that file's ``[compressors.exit-trained]`` (or its only
compressor) and merges the table's other keys over it.

Other relative paths (model folders, readouts, ``[dataset] path``) are read relative to the config
file's folder, else from the working directory, else from ragsift's shipped data
(:mod:`ragsift.config_files`): ``model = "models/fusion-trained"`` names the shipped model from any
working directory, in a clone or an installed wheel.
"""

from __future__ import annotations

import json
import os
import tomllib
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from ragsift import config_files
from ragsift.compressors.base import Compressor
from ragsift.config_files import config_dirs
from ragsift.config_files import find_config_file as find_config
from ragsift.datasets import DataSource, resolve_data
from ragsift.errors import ConfigError, UnknownPluginError
from ragsift.plugin import format_validation_error, merge_spec
from ragsift.readers.base import Reader
from ragsift.registry import build_plugin
from ragsift.suggestions import did_you_mean

__all__ = ["RunConfig", "load_config", "find_config", "config_dirs", "merge_tables", "check_label", "parse_override",
           "split_label", "load_labelled_config"]


def check_label(label: str, where: str) -> str:
    """``label`` when it can name a compressor: not empty, and no control or format character
    (NUL, a line break, a bidirectional override), which would corrupt or disguise the run's
    files, tables and logs; a :class:`ConfigError` naming ``where`` otherwise."""
    bad = [ch for ch in label if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp")]
    if not label.strip() or bad:
        what = f"contains the control character {bad[0]!r}" if bad else "is blank"
        raise ConfigError(f"{where}: the compressor label {label!r} {what}; use letters, digits and "
                          "punctuation such as '-', '_', '.' or '@'.")
    return label


class RunConfig(BaseModel):
    """A config file: what to compress, with which compressor(s), and how to evaluate."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    dataset: dict[str, Any] | None = None
    compressor: dict[str, Any] | None = None
    compressors: dict[str, dict[str, Any]] = {}
    reader: dict[str, Any] | None = None
    evaluation: dict[str, Any] = {}
    #: the record of ``ragsift tune`` in a frozen config (rule, development questions, the sweep's
    #: table); evaluation reads nothing from it (:mod:`ragsift.evaluation.run.tune`)
    tuned: dict[str, Any] | None = None
    calibrated: dict[str, Any] | None = None  # the record of 'ragsift calibrate' (ragsift.calibration.calibrate)
    source: str = ""
    #: (path, bytes) of every file read to make this config: the file itself, then each included
    #: one in reading order (empty for a config made from a table)
    _files: list[tuple[Path, bytes]] = PrivateAttr(default_factory=list)
    #: the ``--set KEY=VALUE`` overrides laid over the file, as given (the run manifest records them)
    _overrides: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def from_table(cls, table: dict[str, Any], source: str, files: list[tuple[Path, bytes]] | None = None,
                   overrides: Sequence[str] = ()) -> RunConfig:
        """A config from its include-resolved table (:meth:`table`), checked as a file's is;
        ``overrides``: the ``--set`` overrides already laid over ``table`` (recorded only)."""
        try:
            config = cls(**table, source=source)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(source, exc, sorted(cls.model_fields))) from None
        config._files = list(files or [])
        config._overrides = list(overrides)
        return config

    def table(self) -> dict[str, Any]:
        """The include-resolved config as one plain table, resolved once when the file was read:
        what a run's plan carries, what Ray actors and ``ragsift merge`` rebuild the config from
        (:meth:`from_table`) and what the run manifest records."""
        return self.model_dump(exclude={"source"}, exclude_defaults=True)

    @property
    def files(self) -> list[tuple[Path, bytes]]:
        """(path, bytes) of the config file and of every file it includes, as read."""
        return list(self._files)

    @property
    def overrides(self) -> list[str]:
        """The ``KEY=VALUE`` overrides laid over the file (:meth:`with_overrides`), in order."""
        return list(self._overrides)

    def with_overrides(self, overrides: Sequence[str]) -> RunConfig:
        """This config with ``--set KEY=VALUE`` overrides laid over it, in order, by the one
        override rule (:func:`merge_tables`): ``compressor.selector.k=3`` sets one param, a stage
        given by name (``compressor.selector="threshold"``) swaps the plugin. The result is checked
        as a file is (the config's structure, then every plugin it names); a problem is a
        :class:`ConfigError` naming the override."""
        if not overrides:
            return self
        table = self.table()
        for text in overrides:
            table = merge_tables(table, parse_override(text))
        where = f"{self.source} with --set {' --set '.join(overrides)}"
        config = RunConfig.from_table(table, where, self._files)
        config.source = self.source
        try:
            config.validate_all()
        except (ConfigError, UnknownPluginError) as exc:
            raise type(exc)(f"--set {' --set '.join(overrides)}: {exc.args[0] if exc.args else exc}") from None
        config._overrides = [*self._overrides, *overrides]
        return config

    @property
    def included_files(self) -> list[Path]:
        """The files ``include`` read (recursively, in reading order), without this one."""
        return [path for path, _ in self._files[1:]]

    def compressor_specs(self) -> dict[str, dict[str, Any]]:
        """Label -> compressor spec. A single ``[compressor]`` is labelled by its name."""
        if self.compressor is not None and self.compressors:
            raise ConfigError(f"{self.source}: give either [compressor] or [compressors.LABEL] tables, not both.")
        if self.compressor is not None:
            label = str(self.compressor.get("name", "compressor"))
            return {check_label(label, f"{self.source} [compressor]"): self.compressor}
        if not self.compressors:
            raise ConfigError(f"{self.source}: no compressor: add a [compressor] table with a 'name'.")
        return {check_label(label, f"{self.source} [compressors]"): spec for label, spec in self.compressors.items()}

    def _where(self, label: str) -> str:
        return f"{self.source} [compressors.{label}]" if self.compressors else f"{self.source} [compressor]"

    def build_compressors(self) -> dict[str, Compressor]:
        return {label: build_plugin("compressor", spec, self._where(label)) for label, spec in self.compressor_specs().items()}

    def only_compressor_spec(self, use: str, label: str | None = None) -> tuple[str, dict[str, Any]]:
        """(label, spec) of the compressor labelled ``label`` (``CONFIG#LABEL``), or of a config
        with exactly one compressor, or else of the one labelled as the config file is named
        (``fusion-trained.toml``'s ``fusion-trained``), for ``use`` (a command such as 'serve', or
        'load_compressor'); an unknown label or, without one, any other count is a :class:`ConfigError`."""
        specs = self.compressor_specs()
        if label is not None:
            if label not in specs:
                raise ConfigError(f"{self.source}: no compressor labelled '{label}' (it has: {', '.join(specs)})."
                                  f"{did_you_mean(label, specs)}")
            return label, specs[label]
        named = Path(self.source).stem  # 'compress -c fusion-trained': the compressor the config is named after
        if len(specs) > 1 and named in specs:
            return named, specs[named]
        if len(specs) != 1:
            first = next(iter(specs))
            raise ConfigError(f"{self.source}: '{use}' needs a config with one compressor; it has {len(specs)} "
                              f"({', '.join(specs)}): pick one as CONFIG#LABEL (e.g. '{self.source}#{first}'), "
                              "or give a config with one.")
        ((only, spec),) = specs.items()
        return only, spec

    def only_compressor(self, use: str, label: str | None = None) -> tuple[str, Compressor]:
        """(label, compressor) of :meth:`only_compressor_spec`, built."""
        label, spec = self.only_compressor_spec(use, label)
        return label, build_plugin("compressor", spec, self._where(label))

    def build_reader(self) -> Reader | None:
        return None if self.reader is None else build_plugin("reader", self.reader, f"{self.source} [reader]")

    def build_dataset(self) -> Any | None:
        return None if self.dataset is None else build_plugin("dataset", self.dataset, f"{self.source} [dataset]")

    def data(self, source: str | Path | None = None, format: str | None = None) -> DataSource:
        """What to read: ``source`` and ``format`` over the ``[dataset]`` table
        (:func:`ragsift.datasets.resolve_data`)."""
        return resolve_data(self.dataset, source, format)

    def validate_all(self) -> None:
        """Build every plugin the config names (no weights load), raising the first problem."""
        self.build_compressors()
        self.build_reader()
        self.build_dataset()

    def resolved(self) -> dict[str, Any]:
        """The config with every default filled in, as the plugins report it (built without checking
        their extras: a config can be shown before they are installed)."""
        from ragsift.extras import unchecked

        out: dict[str, Any] = {"description": self.description}
        with unchecked():
            dataset = self.build_dataset()
            compressors = self.build_compressors()
            reader = self.build_reader()
        if dataset is not None:
            out["dataset"] = {"name": self.dataset["name"], **dataset.config()}  # type: ignore[index]
        out["compressors"] = {label: {"name": comp.registered_name, **comp.config()} for label, comp in compressors.items()}
        if reader is not None:
            out["reader"] = {"name": reader.registered_name, **reader.config()}
        if self.evaluation:
            out["evaluation"] = dict(self.evaluation)
        return out


def merge_tables(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` merged over ``base`` by the one override rule (:func:`ragsift.plugin.merge_spec`,
    deep): tables key by key, a stage given by name as ``{"name": ...}``, a table naming another
    plugin than ``base``'s replaces it whole; any other value replaced."""
    return merge_spec(base, over, deep=True)


def _read_with_includes(path: Path, chain: tuple[Path, ...], read: list[tuple[Path, bytes]]) -> dict[str, Any]:
    """The table of ``path`` merged over its includes' (:func:`ragsift.config_files.read_with_includes`),
    with the compressor tables' own includes resolved."""
    return config_files.read_with_includes(path, merge_tables, read, chain, finish=_compressor_includes)


def _compressor_includes(path: Path, here: Path, merged: dict[str, Any], chain: tuple[Path, ...],
                         read: list[tuple[Path, bytes]]) -> dict[str, Any]:
    if isinstance(merged.get("compressor"), dict):
        merged["compressor"] = _compressor_include(path, here, None, merged["compressor"], chain, read)
    if isinstance(merged.get("compressors"), dict):
        merged["compressors"] = {label: _compressor_include(path, here, label, spec, chain, read)
                                 if isinstance(spec, dict) else spec for label, spec in merged["compressors"].items()}
    return merged


def _compressor_include(path: Path, here: Path, label: str | None, spec: dict[str, Any],
                        chain: tuple[Path, ...], read: list[tuple[Path, bytes]]) -> dict[str, Any]:
    """A compressor table with ``include = "FILE"``: FILE's compressor of the same label (its
    ``[compressors.LABEL]``, else its one compressor), with this table's other keys merged over it;
    ``include = "FILE#OTHER"`` takes FILE's ``[compressors.OTHER]`` instead (a variant under a new label)."""
    if "include" not in spec:
        return spec
    spec = dict(spec)
    name = spec.pop("include")
    where = f"[compressors.{label}]" if label is not None else "[compressor]"
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{path} {where}: include must be one config file name (relative to this file); got {name!r}.")
    name, hash_sign, wanted = name.partition("#")
    if hash_sign and not wanted.strip():
        raise ConfigError(f"{path} {where}: include '{name}#': name the compressor after '#' (FILE#LABEL).")
    target = config_files.include_target(f"{path} {where}", name, here, chain)
    other = _read_with_includes(target, (*chain, here), read)
    tables = other.get("compressors") or {}
    if hash_sign:
        if wanted not in tables:
            raise ConfigError(f"{path} {where}: include '{name}#{wanted}': {target} has no [compressors.{wanted}] table "
                              f"(it has: {', '.join(tables) or 'none'}).")
        found = tables[wanted]
    elif label is not None and label in tables:
        found = tables[label]
    elif other.get("compressor") is not None and not tables:
        found = other["compressor"]
    elif len(tables) == 1 and other.get("compressor") is None:
        found = next(iter(tables.values()))
    else:
        raise ConfigError(f"{path} {where}: include '{name}': {target} has no [compressors.{label}] table and not "
                          f"exactly one compressor (it has: {', '.join(tables) or 'none'}).")
    return merge_tables(found, spec)


def parse_override(text: str) -> dict[str, Any]:
    """The table of one ``KEY=VALUE`` override: KEY a TOML dotted key (``compressor.selector.k``;
    quote a part that holds dots: ``compressors."exit@0.5".selector.k``), VALUE a TOML value
    (``3``, ``0.5``, ``true``, ``"top-k"``, ``[1, 2]``, ``{name = "top-k", k = 2}``), and any other
    text a string (``compressor.selector=threshold``)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, such as compressor.selector.k=3.")
    try:
        template = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        raise ConfigError(f"--set {text!r}: '{key}' is not a dotted key such as compressor.selector.k (quote a part "
                          'that holds dots or spaces: compressors."exit@0.5".selector.k).') from None
    where = f"--set {key}=..."  # not the value: it may be 5,000 digits
    try:
        table = config_files.loads_toml(f"{key} = {value.strip()}", where)
    except config_files.TomlSyntaxError:  # not a TOML value: a string (too deep or too long: refused)
        return config_files.loads_toml(f"{key} = {json.dumps(value.strip())}", where)
    # VALUE is one TOML value: a line break followed by "[reader]" or "other.key = ..." would set
    # tables the user never named on the command line (README: one KEY, one value)
    node, shape = table, template
    while isinstance(shape, dict):
        if not isinstance(node, dict) or node.keys() != shape.keys():
            raise ConfigError(f"{where}: VALUE must be one TOML value, but it also sets other keys or tables (a line "
                              "break followed by 'KEY = ...' or '[TABLE]'); give one --set per key.")
        (part,) = shape
        node, shape = node[part], shape[part]
    return table


def split_label(name_or_path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``CONFIG#LABEL`` -> (CONFIG, LABEL), split at the last ``#`` after which CONFIG names a
    config (a label or a path may hold ``#``); a name without ``#``, or an existing file whose name
    holds one, -> (name, None)."""
    text = os.fspath(name_or_path)
    if "#" not in text or Path(text).is_file():
        return text, None
    # a label may hold '#' itself (compressors."a#b"), and so may a config's path: the config is
    # the text before the last '#' that names a config, tried from the last '#' back (else the
    # last '#', whose missing config the error names)
    base, _, label = text.rpartition("#")
    cut = len(base)
    while cut > 0:
        try:
            find_config(text[:cut])
        except ConfigError:
            cut = text.rfind("#", 0, cut)
            continue
        base, label = text[:cut], text[cut + 1 :]
        break
    if not base.strip() or not label.strip():
        raise ConfigError(f"'{text}': give CONFIG#LABEL, a config and the label of one of its compressors "
                          "(e.g. 'baselines#bm25').")
    return base, label


def load_labelled_config(name: str | os.PathLike[str], overrides: Sequence[str] = ()) -> tuple[RunConfig, str | None]:
    """The config named by ``name`` (``CONFIG`` or ``CONFIG#LABEL``, :func:`split_label`) with
    ``overrides`` laid over it (:meth:`RunConfig.with_overrides`), and the label (None: none given);
    an unknown label is a :class:`ConfigError` with a did-you-mean hint."""
    base, label = split_label(name)
    config = load_config(base).with_overrides(overrides)
    if label is not None:
        config.only_compressor_spec("select", label)  # an unknown label is refused now
    return config, label


def load_config(name_or_path: str | Path) -> RunConfig:
    """Read and check the structure of a config file, with the files it includes (plugins are
    checked by ``validate_all``)."""
    path = find_config(name_or_path)
    files: list[tuple[Path, bytes]] = []
    return RunConfig.from_table(_read_with_includes(path, (), files), str(path), files)
