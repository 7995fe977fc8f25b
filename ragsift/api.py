"""A few entry points for using ragsift from Python without writing a config file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragsift.errors import ConfigError
from ragsift.types import Document, Example

__all__ = ["load_compressor", "make_example"]


def load_compressor(name: str, **overrides: Any) -> Any:
    """A compressor by config name (``"exit-offline"``, a path) or by registered compressor name
    (``"bm25"``), with stage overrides as keyword tables: ``load_compressor("bm25", selector={"k": 3})``."""
    from ragsift.config import build_plugin, find_config, load_config
    from ragsift.registry import get_registry

    if name in get_registry().names("compressor"):
        return build_plugin("compressor", {"name": name, **overrides}, f"compressor '{name}'")
    try:
        config = load_config(find_config(name))
    except ConfigError:
        raise ConfigError(
            f"'{name}' is neither a registered compressor ({', '.join(get_registry().names('compressor'))}) nor a config."
        ) from None
    specs = config.compressor_specs()
    if len(specs) != 1:
        raise ConfigError(f"{config.source} holds {len(specs)} compressors ({', '.join(specs)}); name one of them.")
    (spec,) = specs.values()
    merged = {**spec, **{k: {**spec.get(k, {}), **v} if isinstance(v, Mapping) else v for k, v in overrides.items()}}
    return build_plugin("compressor", merged, config.source)


def make_example(question: str, documents: Iterable[str | tuple[str, str] | Mapping[str, Any]], answers: Iterable[str] = (), id: str = "example") -> Example:
    """An example from plain values: documents as text, ``(title, text)`` pairs or
    ``{"title", "text", "score"}`` mappings."""
    docs = []
    for i, doc in enumerate(documents):
        if isinstance(doc, str):
            docs.append(Document(title="", text=doc, id=str(i)))
        elif isinstance(doc, tuple):
            title, text = doc
            docs.append(Document(title=title, text=text, id=str(i)))
        else:
            docs.append(Document(title=str(doc.get("title", "")), text=str(doc["text"]), id=str(doc.get("id", i)), score=doc.get("score")))
    return Example(id=id, question=question, answers=tuple(answers), documents=tuple(docs))
