"""A few entry points for using ragsift from Python without writing a config file."""

from __future__ import annotations

import os
from typing import Any, cast

from ragsift.compressors.base import Compressor
from ragsift.config import find_config, load_config, split_label
from ragsift.errors import ConfigError, UsageError
from ragsift.plugin import merge_spec
from ragsift.registry import build_plugin, get_registry
from ragsift.types import make_example

__all__ = ["load_compressor", "make_example"]


def load_compressor(name: str | os.PathLike[str], **overrides: Any) -> Compressor:
    """A compressor by config name (``"exit-offline"``, a path), one compressor of a config with
    several (``"cascades#bm25-docs3"``: CONFIG#LABEL) or a registered compressor name (``"bm25"``),
    with stage overrides as keyword tables: ``load_compressor("bm25", selector={"k": 3})``."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"load_compressor: expected a config name, a config path or a registered compressor name "
                         f"(e.g. 'bm25'); got {type(name).__name__} {name!r}.")
    if name in get_registry().names("compressor"):
        return cast(Compressor, build_plugin("compressor", {"name": name, **overrides}, f"compressor '{name}'"))
    base, label = split_label(name)
    try:
        config = load_config(find_config(base))
    except ConfigError:
        raise ConfigError(
            f"'{base}' is neither a registered compressor ({', '.join(get_registry().names('compressor'))}) nor a config."
        ) from None
    label, spec = config.only_compressor_spec("load_compressor", label)
    where = f"{config.source} [compressors.{label}]" if config.compressors else config.source
    return cast(Compressor, build_plugin("compressor", merge_spec(spec, overrides, deep=True), where))

