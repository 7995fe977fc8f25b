"""A few entry points for using ragsift from Python without writing a config file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, cast

from ragsift.compressors.base import Compressor
from ragsift.config import find_config, load_config, split_label
from ragsift.errors import ConfigError, UsageError
from ragsift.plugin import merge_spec
from ragsift.registry import build_plugin, get_registry
from ragsift.types import Document, Example

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


def make_example(question: str, documents: Iterable[str | tuple[str, str] | Mapping[str, Any]],
                 answers: str | Iterable[str] = (), id: str = "example") -> Example:
    """An example from plain values: documents as text, ``(title, text)`` pairs or
    ``{"title", "text", "score"}`` mappings; ``answers`` as one string or several."""
    if not isinstance(question, str):
        raise UsageError(f"make_example: 'question' must be a string; got {type(question).__name__}.")
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise UsageError(f"make_example: 'documents' must be a list of documents (texts, (title, text) pairs or "
                         f"mappings); got {type(documents).__name__}. For one document write [text].")
    if isinstance(answers, str):
        answers = (answers,)
    elif not isinstance(answers, Iterable):
        raise UsageError(f"make_example: 'answers' must be a string or a list of strings; got {type(answers).__name__}.")
    answers = tuple(answers)
    if any(not isinstance(a, str) for a in answers):
        raise UsageError(f"make_example: every answer must be a string; got {answers!r}.")
    docs = []
    for i, doc in enumerate(documents):
        if isinstance(doc, str):
            docs.append(Document(title="", text=doc, id=str(i)))
        elif isinstance(doc, tuple) and len(doc) == 2 and all(isinstance(part, str) for part in doc):
            title, text = doc
            docs.append(Document(title=title, text=text, id=str(i)))
        elif isinstance(doc, Mapping) and isinstance(doc.get("text"), str):
            docs.append(Document(title=str(doc.get("title", "")), text=doc["text"], id=str(doc.get("id", i)), score=doc.get("score")))
        else:
            raise UsageError(f"make_example: document {i} must be a text, a (title, text) pair of strings or a mapping "
                             f"with a 'text' string; got {type(doc).__name__} {doc!r:.60}.")
    return Example(id=str(id), question=question, answers=answers, documents=tuple(docs))
