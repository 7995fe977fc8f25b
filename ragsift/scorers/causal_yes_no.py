"""EXIT's sentence classifier: a causal LM asked whether a sentence helps answer the query.

The model reads the query, the sentence's OWN document and the sentence; the score is
P(Yes) / (P(Yes) + P(No)) from the Yes/No engine (:mod:`ragsift.lm`). ``mode``: ``prefix-shared``
(default; the engine's ``packed`` layout) or ``reference`` (``padded``, the EXIT authors'
batching); same scores, tested. Prompt, tokenization, overflow and modes: docs/exit.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ragsift.lm import (
    EXIT_TEMPLATE,
    EncodedPrompt,
    YesNoEngine,
    YesNoPromptEncoder,
    YesNoTemplate,
    resolve_max_length,
)
from ragsift.plugin import CausalLMParams
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["CausalYesNoScorer", "CausalYesNoParams", "EXIT_MODEL", "EXIT_ADAPTER"]

EXIT_MODEL = "google/gemma-2b-it"
EXIT_ADAPTER = "doubleyyh/exit-gemma-2b"

class CausalYesNoParams(CausalLMParams):
    #: the causal LM: Hub id, folder, GGUF file or package:PKG/PATH
    model: str = Field(EXIT_MODEL, min_length=1)
    adapter: str | None = EXIT_ADAPTER
    #: the prompt, with {query}, {context} and {sentence} once each, in that order
    template: str = EXIT_TEMPLATE
    mode: Literal["prefix-shared", "reference"] = "prefix-shared"
    #: sentences per forward pass (reference: complete prompts; prefix-shared: packed suffixes)
    batch_size: int = Field(8, ge=1, le=4096)
    #: what to do when a prompt is longer than max_length: raise, or cut the document context
    overflow: Literal["error", "head-tail"] = "error"
    #: cap on prompt tokens (default 4096); the model's and tokenizer's limits also apply
    max_length: int | None = Field(None, ge=8, le=1_000_000)

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        YesNoTemplate.parse(value)
        return value



class CausalYesNoScorer(Scorer):
    """Scores each sentence by a causal LM's normalised P("Yes") (EXIT's classifier)."""

    Params = CausalYesNoParams
    #: scoring loads a language model (the conformance kit checks only what needs none)
    needs_model: ClassVar[bool] = True

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._model: Any = None
        self._encoder: YesNoPromptEncoder | None = None
        self._engine: YesNoEngine | None = None
        #: counters of the last ``score`` call: prompts, forward passes, tokens run through the model
        self.stats: dict[str, Any] = {}

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, **params: Any) -> CausalYesNoScorer:
        """A scorer around a model already in memory (tests, notebooks); ``model`` names nothing then."""
        scorer = cls(**params)
        scorer._attach(model, tokenizer)
        return scorer

    def warm_up(self) -> None:
        if self._model is not None:
            return
        from ragsift.models import load_causal_lm

        p = self.params
        model, tokenizer = load_causal_lm(p.model, device=p.device, dtype=p.dtype, load_in_4bit=p.load_in_4bit, adapter=p.adapter)
        self._attach(model, tokenizer)

    def _attach(self, model: Any, tokenizer: Any) -> None:
        p, owner = self.params, type(self).__name__
        max_length = resolve_max_length(p.max_length, model.config, tokenizer)
        self._engine = YesNoEngine(model, tokenizer, "Yes", "No", batch_size=p.batch_size, owner=owner)
        self._encoder = YesNoPromptEncoder(tokenizer, p.template, max_length, p.overflow, owner=owner)
        self._model = model

    @property
    def encoder(self) -> YesNoPromptEncoder:
        """The prompt encoder (loads the model on first use)."""
        self.warm_up()
        assert self._encoder is not None
        return self._encoder

    @property
    def engine(self) -> YesNoEngine:
        """The Yes/No engine around the model (loads it on first use)."""
        self.warm_up()
        assert self._engine is not None
        return self._engine

    def prompts(self, example: Example, sentences: Sequence[Sentence]) -> list[EncodedPrompt]:
        """The encoded prompt of every sentence (what the model reads)."""
        return self.encoder.encode_example(example, sentences)

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # normalised P(Yes)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        prompts = self.prompts(example, sentences)
        layout = "padded" if self.params.mode == "reference" else "packed"
        scores = self.engine.probabilities(prompts, layout, hint='set mode = "reference" for this model')
        self.stats = {"prompts": len(prompts), "truncated": sum(p.truncated for p in prompts), **self.engine.stats}
        return scores
