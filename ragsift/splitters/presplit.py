"""Sentences a dataset already provides (HotpotQA's sentence arrays)."""

from __future__ import annotations

from ragsift.errors import ConfigError
from ragsift.plugin import Params, PluginSpec
from ragsift.registry import build_plugin
from ragsift.splitters.base import Splitter, sentences_from_spans
from ragsift.types import Document, Sentence

__all__ = ["PresplitSplitter"]


class PresplitParams(Params):
    #: splitter (a name or a table) for documents without sentence boundaries; None -> such a
    #: document is an error
    fallback: PluginSpec | None = None


class PresplitSplitter(Splitter):
    """Uses ``Document.sentence_spans``."""

    Params = PresplitParams

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        fallback = self.params.fallback
        self._fallback = None if fallback is None else build_plugin("splitter", fallback, "PresplitSplitter fallback")

    def spans(self, text: str) -> list[tuple[int, int]]:  # pragma: no cover - split() is overridden
        raise ConfigError("PresplitSplitter needs documents, not bare text.")

    def split(self, document: Document, doc_index: int = 0) -> list[Sentence]:
        if not document.text.strip():
            return []
        if document.sentence_spans is None:
            if self._fallback is None:
                raise ConfigError(
                    f"PresplitSplitter: document '{document.title or document.id}' has no sentence boundaries "
                    "(its dataset provides no sentence arrays). Set fallback = \"sentencizer\" or use another splitter."
                )
            return self._fallback.split(document, doc_index)
        return sentences_from_spans(document, doc_index, document.sentence_spans)
