"""spaCy's rule-based ``sentencizer``: EXIT's splitter; needs no model download."""

from __future__ import annotations

from typing import Any

from ragsift.splitters.base import Splitter

__all__ = ["SentencizerSplitter"]


class SentencizerSplitter(Splitter):
    """``spacy.blank("en")`` + the ``sentencizer`` component (punctuation rules only)."""

    _nlp: Any = None

    def warm_up(self) -> None:
        if SentencizerSplitter._nlp is None:
            import spacy

            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            nlp.max_length = 10_000_000
            SentencizerSplitter._nlp = nlp

    def spans(self, text: str) -> list[tuple[int, int]]:
        self.warm_up()
        return [(s.start_char, s.end_char) for s in self._nlp(text).sents]
