"""A Yes/No judge on a chat model: "Is this evidence enough to answer the question?".

A stand-in for ECoRAG's trained Flan-T5 evaluator that runs anywhere a small instruction-tuned
causal LM does (the offline configs use SmolLM2-135M-Instruct): P(Yes) / (P(Yes) + P(No)) after
the chat-templated prompt, from the Yes/No engine (:mod:`ragsift.lm`). With ``share_prefix`` the
engine shares the nested candidate sets' prefixes where the model can (docs/ecorag.md).
Assumptions: the prompt is ragsift's own; prompts are never cut (too long -> an error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from ragsift.judges.base import Judge, JudgeParams
from ragsift.lm import YesNoEngine, chat_prompt, encode_prompts
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.plugin import CausalLMParams

__all__ = ["CausalJudge", "CausalJudgeParams", "DEFAULT_CAUSAL_TEMPLATE"]

DEFAULT_CAUSAL_TEMPLATE = (
    "Question:\n{question}\nEvidence:\n{evidence}\n"
    'Is this evidence enough to answer the question? Answer only "Yes" or "No".'
)


class CausalJudgeParams(JudgeParams, CausalLMParams):
    model: str = OFFLINE_SMOLLM2
    template: str = DEFAULT_CAUSAL_TEMPLATE
    system_prompt: str | None = None
    #: wrap the prompt in the tokenizer's chat template (with a generation prompt)
    use_chat_template: bool = True
    positive_token: str = "Yes"
    negative_token: str = "No"
    batch_size: int = Field(default=8, ge=1)
    max_length: int = Field(default=4096, ge=1)
    #: several sets in one call (batched reflection): let the engine share prefixes where the model
    #: can (the layout that runs the fewest tokens); off = padded batches of ``batch_size``
    share_prefix: bool = True


class CausalJudge(Judge):
    """P(Yes) vs P(No) for "is this evidence enough?" on a causal chat model."""

    Params = CausalJudgeParams
    needs_model: ClassVar[bool] = True
    label_params = ("positive_token", "negative_token")

    def warm_up(self) -> None:
        if self._model is not None:
            return
        from ragsift.models import load_causal_lm

        model, tokenizer = load_causal_lm(
            self.params.model, device=self.params.device, dtype=self.params.dtype,
            load_in_4bit=self.params.load_in_4bit, adapter=self.params.adapter,
        )
        self._engine = YesNoEngine(model, tokenizer, self.params.positive_token, self.params.negative_token,
                                   batch_size=self.params.batch_size, owner="CausalJudge")
        self.label_ids = (self._engine.positive_id, self._engine.negative_id)
        self._model, self._tokenizer = model, tokenizer

    def prompt(self, question: str, evidence: Sequence[str]) -> str:
        """The full text the model continues for one evidence set."""
        self.warm_up()
        return chat_prompt(
            self._tokenizer, self.format_input(question, evidence), self.params.system_prompt,
            self.params.use_chat_template, "CausalJudge",
        )

    def probabilities(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[float]:
        if not evidence_sets:
            return []
        self.warm_up()
        assert self.label_ids is not None
        prompts = [self.prompt(question, s) for s in evidence_sets]
        # the chat template writes its own begin-of-text marker; raw prompts get the tokenizer's
        encoded = encode_prompts(self._tokenizer, prompts, max_length=self.params.max_length,
                                 add_special_tokens=not self.params.use_chat_template, owner="CausalJudge")
        layout = "auto" if self.params.share_prefix else "padded"
        return [float(p) for p in self._engine.probabilities(encoded, layout)]
