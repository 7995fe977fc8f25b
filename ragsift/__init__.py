"""ragsift: evidence selection for retrieval-augmented generation.

The plugin author's surface is importable from here (docs/plugins.md): ``hookimpl``, ``Params``,
``PluginSpec``, the stage base classes, ``Selection``, ``register`` (in-process registration) and
``check_plugin`` (the conformance kit). Importing ragsift loads no plugin.
"""

from __future__ import annotations

from typing import Any

from ragsift.assemblers.base import Assembler
from ragsift.compressors.base import Compressor
from ragsift.datasets.base import DatasetLoader
from ragsift.hookspecs import hookimpl
from ragsift.judges.base import Judge
from ragsift.labelers.base import Labeler
from ragsift.metrics.base import Metric
from ragsift.plugin import Params, Plugin, PluginSpec
from ragsift.readers.base import Reader
from ragsift.registry import build_plugin, get_registry, register
from ragsift.scorers.base import Scorer
from ragsift.selectors.base import Selector
from ragsift.splitters.base import Splitter
from ragsift.types import CompressionResult, Document, EvidenceSpan, Example, Selection, Sentence
from ragsift.version import __version__

# A library does not change its host process on import: OpenMP's wait policy (ragsift/openmp.py)
# is set by ragsift's CLI and benchmarks, which own their process, or by the user.

__all__ = [
    "__version__",
    # data
    "CompressionResult", "Document", "EvidenceSpan", "Example", "Selection", "Sentence",
    # writing plugins
    "hookimpl", "Params", "Plugin", "PluginSpec", "register", "check_plugin",
    "Splitter", "Scorer", "Selector", "Assembler", "Compressor", "Judge", "Reader", "DatasetLoader",
    "Metric", "Labeler",
    # using ragsift
    "get_registry", "build_plugin", "load_config", "load_compressor", "make_example",
]

_LAZY = {"check_plugin": "ragsift.testing", "load_config": "ragsift.config", "load_compressor": "ragsift.api",
         "make_example": "ragsift.api"}


def __dir__() -> list[str]:  # the lazy names too (tab completion, dir(ragsift))
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name: str) -> Any:  # modules that import every stage load on first use
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
