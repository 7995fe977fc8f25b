"""Config files: found by name in ``configs/`` (or a sub-folder) or by path, and read as TOML
with one clear error. Shared by run configs (:mod:`ragsift.config`) and training configs
(:mod:`ragsift.training.config`).

**Shipped data.** ragsift ships its run configs (``configs/``), its small trained models
(``models/``) and the development pool its tuned configs were tuned on
(``data/training/hotpotqa-dev-pool.json``). In the source tree they sit beside the package (the
repository's root); a built wheel holds a copy as ``ragsift/_shipped/`` (``setup.py`` copies them at build time), so
names and paths resolve the same way in a clone, an editable install and an install from the
index (:func:`shipped_roots`). The wheel leaves out the development material (``configs/dev``,
``configs/tune``, an unshipped recipe, unused readouts: ``setup.py``'s ``NOT_SHIPPED``), which no
shipped config includes.

**Relative paths in a config file** (``include``, ``[dataset] path``, model locations: ``model``,
``adapter``, ``readout``, ``head``, ``*_model``; a training config's ``[data]`` files) are read
relative to the config file's folder; one that is not there is read as any other relative path:
from the working directory, else from the shipped data (``models/fusion-trained`` names the shipped
model wherever ragsift is installed). :func:`anchor_paths` applies the first rule when the file is
read; :func:`ragsift.models.resolve_local_path` the others.

**Includes.** ``include = "other.toml"`` (or a list) starts a config from other files, this file's
tables laid over theirs key by key (:func:`read_with_includes`); run and training configs both
read it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError
from ragsift.suggestions import did_you_mean

__all__ = ["REPOSITORY", "PACKAGE_DATA", "shipped_roots", "config_dirs", "find_config_file", "read_toml",
           "read_toml_file", "loads_toml", "MAX_TOML_DEPTH",
           "TomlSyntaxError", "anchor_paths", "PATH_KEYS", "include_target", "read_with_includes"]

#: the repository that holds this package (a clone or an editable install: configs/ and models/ are there)
REPOSITORY = Path(__file__).resolve().parent.parent
#: the copy of configs/ and models/ inside an installed wheel (written by setup.py's build_py)
PACKAGE_DATA = Path(__file__).resolve().parent / "_shipped"
#: config keys whose relative values are file or folder paths (see the module docstring)
PATH_KEYS = frozenset({"model", "adapter", "readout", "head", "path", "train", "dev"})


def shipped_roots() -> list[Path]:
    """The folders that hold ragsift's shipped ``configs/`` and ``models/``: the source tree's root
    (when this package runs from a clone: it has ragsift's ``pyproject.toml``), then the copy
    inside the installed package."""
    roots = []
    if (REPOSITORY / "pyproject.toml").is_file() and (REPOSITORY / "configs").is_dir():
        roots.append(REPOSITORY)
    if (PACKAGE_DATA / "configs").is_dir():
        roots.append(PACKAGE_DATA)
    return roots


def config_dirs(sub: str = "") -> list[Path]:
    """Where config names are looked up: ./configs/SUB, then configs/SUB of each shipped root."""
    return list(dict.fromkeys((Path.cwd() / "configs" / sub, *(root / "configs" / sub for root in shipped_roots()))))


def _is_path_key(key: str) -> bool:
    return key in PATH_KEYS or key.endswith("_model")


def anchor_paths(table: Any, folder: Path) -> Any:
    """``table`` (one config file's TOML, before includes merge) with every relative path value of a
    path key (:data:`PATH_KEYS`, ``*_model``) that names an existing file or folder relative to
    ``folder`` (the config file's) made absolute; other values as they are (a Hub id, ``package:``,
    or a path read later from the working directory or the shipped data)."""
    if isinstance(table, dict):
        return {key: (_anchor(value, folder) if _is_path_key(key) and isinstance(value, str) else anchor_paths(value, folder))
                for key, value in table.items()}
    if isinstance(table, list):
        return [anchor_paths(item, folder) for item in table]
    return table


def _anchor(value: str, folder: Path) -> str:
    if not value.strip() or ":" in value.split("/", 1)[0] or Path(value).expanduser().is_absolute():
        return value  # empty, a scheme (hub:, package:, split:, https:), or absolute already
    candidate = folder / value
    return str(candidate.resolve()) if candidate.exists() else value


def find_config_file(name_or_path: str | Path, sub: str = "", what: str = "config") -> Path:
    """A config file from a path, or a name in ``configs/SUB`` (with or without ``.toml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    for d in config_dirs(sub):
        if (d / f"{stem}.toml").is_file():
            return d / f"{stem}.toml"
    names = sorted({p.stem for d in config_dirs(sub) if d.is_dir() for p in d.glob("*.toml")})
    folder = f"configs/{sub}/" if sub else "configs/"
    raise ConfigError(f"No {what} '{name_or_path}': not a file, and not a name in {folder} ({', '.join(names) or 'none'}; "
                      f"looked in {', '.join(str(d) for d in config_dirs(sub))}).{did_you_mean(stem, names)}")


#: deeper arrays or tables than this are refused: no config needs them, and code that walks a
#: table (merging includes, --set, the manifest) recurses once per level
MAX_TOML_DEPTH = 64


def _depth(value: Any) -> int:
    """How deeply ``value`` nests arrays and tables (iteratively: the value may be deep)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


class TomlSyntaxError(ConfigError):
    """Text that is not TOML at all (as opposed to TOML with values too long or too deep)."""


def loads_toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads``, every way it can fail a :class:`ConfigError` naming ``where``: invalid
    TOML, an integer too long for Python to read (over ``sys.get_int_max_str_digits()``, 4300 by
    default), or arrays or tables nested deeper than :data:`MAX_TOML_DEPTH`."""
    import sys

    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlSyntaxError(f"{where}: not valid TOML: {exc}.") from None
    except RecursionError:
        raise ConfigError(f"{where}: not valid TOML here: arrays or tables nested too deeply (a config has at most "
                          f"{MAX_TOML_DEPTH} levels).") from None
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        if "digits" not in str(exc):
            raise
        raise ConfigError(f"{where}: not valid TOML here: an integer with more than {sys.get_int_max_str_digits()} "
                          "digits.") from None
    if _depth(table) > MAX_TOML_DEPTH + 1:  # the file's own table is one level
        raise ConfigError(f"{where}: arrays or tables nested more than {MAX_TOML_DEPTH} levels deep; a config has "
                          "no such values.")
    return table


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML table of ``path``; invalid TOML or an unreadable file is a :class:`ConfigError`."""
    return read_toml_file(path)[0]


def read_toml_file(path: Path) -> tuple[dict[str, Any], bytes]:
    """The TOML table of ``path`` and the bytes it was read from (read once)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    return loads_toml(text, str(path)), data


Table = dict[str, Any]
Files = list[tuple[Path, bytes]]


def include_target(at: str, name: str, here: Path, chain: tuple[Path, ...]) -> Path:
    """The file ``include = NAME`` of ``here`` names (``at``: where, for errors): no cycle, and there."""
    target = (here.parent / Path(name).expanduser()).resolve()
    if target in chain or target == here:
        raise ConfigError(f"{at}: include '{name}' makes a cycle: {' -> '.join(str(p) for p in (*chain, here, target))}.")
    if not target.is_file():
        raise ConfigError(f"{at}: include '{name}': no such file ({target}; include paths are relative to "
                          "the including file).")
    return target


def read_with_includes(path: Path, merge: Callable[[Table, Table], Table], read: Files, chain: tuple[Path, ...] = (),
                       finish: Callable[[Path, Path, Table, tuple[Path, ...], Files], Table] | None = None) -> Table:
    """The table of the config file ``path`` merged (by ``merge``: the override rule of
    :func:`ragsift.plugin.merge_spec`) over the files its ``include = NAME`` (or a list) names, relative
    paths anchored in each file's folder. ``read`` gets (path, bytes) of every file read, in reading
    order; ``chain``: the files including this one (cycle check); ``finish(path, resolved path,
    merged table, chain, read)``, when given, completes each file's table (run configs resolve their
    compressor tables' own includes there)."""
    here = path.resolve()
    raw, data = read_toml_file(path)
    raw = anchor_paths(raw, here.parent)  # relative paths: this file's folder first
    read.append((here if chain else path, data))
    includes = raw.pop("include", [])
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) and i.strip() for i in includes):
        raise ConfigError(f"{path}: include must be a file name or a list of file names (relative to this file); "
                          f"got {includes!r}.")
    merged: Table = {}
    for name in includes:
        target = include_target(str(path), name, here, chain)
        merged = merge(merged, read_with_includes(target, merge, read, (*chain, here), finish))
    merged = merge(merged, raw)
    return merged if finish is None else finish(path, here, merged, chain, read)
