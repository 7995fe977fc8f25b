"""Config files: found by name in ``configs/`` (or a sub-folder) or by path, and read as TOML
with one clear error. Shared by run configs (:mod:`ragsift.config`) and training configs
(:mod:`ragsift.training.config`)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError
from ragsift.suggestions import did_you_mean

__all__ = ["REPOSITORY", "config_dirs", "find_config_file", "read_toml", "read_toml_file"]

#: the repository that holds this package (editable installs ship their configs/ there)
REPOSITORY = Path(__file__).resolve().parent.parent


def config_dirs(sub: str = "") -> list[Path]:
    """Where config names are looked up: ./configs/SUB, then configs/SUB of :data:`REPOSITORY`."""
    seen: list[Path] = []
    for d in (Path.cwd() / "configs" / sub, REPOSITORY / "configs" / sub):
        if d not in seen:
            seen.append(d)
    return seen


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
    raise ConfigError(f"No {what} '{name_or_path}': not a file, and not a name in {folder} ({', '.join(names) or 'none'})."
                      f"{did_you_mean(stem, names)}")


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
        return tomllib.loads(data.decode("utf-8")), data
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from None
