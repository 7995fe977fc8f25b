"""What the scorers that read token log-probabilities of a causal LM share: their params, model
loading on first use, and the engine (:class:`ragsift.lm.token_logprobs.TokenLogProbEngine`).
Selective-Context (``self-information``) and LongLLMLingua's coarse ranking
(``question-likelihood``) are built on it."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from ragsift.lm.prompts import resolve_max_length
from ragsift.lm.token_logprobs import TokenLogProbEngine, start_token_id
from ragsift.model_plugins import CausalLMParams, CausalLMPlugin
from ragsift.scorers.base import Scorer

__all__ = ["LogProbParams", "LogProbScorer"]


class LogProbParams(CausalLMParams):
    #: the token that opens every sequence: None = the tokenizer's BOS, else its EOS
    start_token: str | None = None
    #: ``packed`` (several sequences per row, no padding) or ``padded`` (left-padded batches); same values
    layout: Literal["packed", "padded"] = "packed"
    #: sequences per forward pass (padded layout)
    batch_size: int = Field(8, ge=1, le=4096)
    #: tokens per packed row (a longer sequence runs alone)
    row_tokens: int = Field(2048, ge=8, le=1_000_000)
    #: cap on a sequence's tokens (default 4096); the model's and tokenizer's limits also apply
    max_length: int | None = Field(None, ge=8, le=1_000_000)


class LogProbScorer(CausalLMPlugin, Scorer):
    """A scorer over a causal LM's token log-probabilities; the model loads on first use."""

    Params: ClassVar[type[LogProbParams]] = LogProbParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._engine: TokenLogProbEngine | None = None
        self.tokenizer: Any = None
        self.start_id = 0
        self.max_length = 0
        #: counters of the last ``score`` call (sequences, forward passes, tokens run)
        self.stats: dict[str, Any] = {}

    def attach(self, model: Any, tokenizer: Any) -> None:
        p, owner = self.params, type(self).__name__
        self.start_id = start_token_id(tokenizer, p.start_token, owner)
        self.max_length = resolve_max_length(p.max_length, model.config, tokenizer)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.start_id
        self.tokenizer = tokenizer
        self._engine = TokenLogProbEngine(model, batch_size=p.batch_size, row_tokens=p.row_tokens, pad_id=int(pad),
                                          owner=owner)
        super().attach(model, tokenizer)

    @property
    def engine(self) -> TokenLogProbEngine:
        """The log-probability engine around the model (loads it on first use)."""
        self.warm_up()
        assert self._engine is not None
        return self._engine

    def encode(self, text: str) -> list[int]:
        """``text``'s ids without special tokens."""
        self.warm_up()
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []
