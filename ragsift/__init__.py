"""ragsift: evidence selection for retrieval-augmented generation."""

from __future__ import annotations

from ragsift.types import CompressionResult, Document, EvidenceSpan, Example, Selection, Sentence

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "CompressionResult",
    "Document",
    "EvidenceSpan",
    "Example",
    "Selection",
    "Sentence",
    "get_registry",
    "load_config",
    "build_plugin",
    "load_compressor",
    "make_example",
]


def __getattr__(name: str):  # lazy: importing ragsift loads no plugin
    if name == "get_registry":
        from ragsift.registry import get_registry

        return get_registry
    if name in ("load_config", "build_plugin"):
        from ragsift import config

        return getattr(config, name)
    if name in ("load_compressor", "make_example"):
        from ragsift import api

        return getattr(api, name)
    raise AttributeError(name)
