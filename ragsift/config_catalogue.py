"""The catalogue of run configs: every config that can be named (``-c NAME``), with a one-line
description and its compressors' labels (``ragsift config list``)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragsift.config_files import config_dirs
from ragsift.errors import RagsiftError

__all__ = ["ConfigEntry", "config_catalogue", "first_sentence"]


@dataclass(frozen=True)
class ConfigEntry:
    """One config of the catalogue: its name, file, first sentence of its description and the
    labels of its compressors (``problem``: why it could not be read, when it could not)."""

    name: str
    path: str
    description: str
    compressors: list[str] = field(default_factory=list)
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` on one line: up to the first '.', '!' or '?' that ends a
    sentence outside parentheses (followed by white space or the end), else the whole text."""
    flat = " ".join(text.split())
    depth = 0
    for i, ch in enumerate(flat):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif (ch in ".!?" and depth == 0 and (i + 1 == len(flat) or flat[i + 1] == " ")
              and not re.search(r"(\be\.g|\bi\.e|\bvs)$", flat[:i])):  # an abbreviation is not a sentence's end
            return flat[: i + 1]
    return flat


def config_catalogue() -> list[ConfigEntry]:
    """Every run config a name finds, in name order: ``./configs/*.toml`` first, then the configs
    ragsift ships (a name found in both is the working directory's, as ``-c NAME`` reads it). A
    config that does not load is listed with its problem, not dropped."""
    from ragsift.config import load_config

    found: dict[str, Path] = {}
    for folder in config_dirs():
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                found.setdefault(path.stem, path)
    entries = []
    for name in sorted(found):
        path = found[name]
        try:
            config = load_config(path)
            entries.append(ConfigEntry(name, str(path), first_sentence(config.description), list(config.compressor_specs())))
        except RagsiftError as exc:
            entries.append(ConfigEntry(name, str(path), "", [], str(exc)))
    return entries
