"""A Yes/No judge on a chat model: "Is this evidence enough to answer the question?".

A stand-in for ECoRAG's trained Flan-T5 evaluator that runs anywhere a small instruction-tuned
causal LM does (the offline configs use SmolLM2-135M-Instruct): P(Yes) / (P(Yes) + P(No)) after
the chat-templated prompt, from the Yes/No engine (:mod:`ragsift.lm`). With ``share_prefix`` the
engine shares the nested candidate sets' prefixes where the model can (docs/ecorag.md).
Assumptions: the prompt is ragsift's own; prompts are never cut (too long -> an error).
``backend = "llama-cpp"`` asks a GGUF model run in-process by llama.cpp instead (its own tokenizer
and chat template; with ``share_prefix`` each nested set runs after the previous one on the KV
cache, also across the sequential loop's calls): :mod:`ragsift.lm.backend`.

Trained readout: with ``readout = "path/readout.safetensors"`` (``weight`` [hidden], ``bias`` [1],
written by the ``judge-readout`` trainer) P(evidential) is ``sigmoid(weight . h + bias)`` of the last
hidden state ``h`` after the prompt, from the same forward pass, instead of the Yes/No probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ragsift.judges.base import Judge, JudgeParams
from ragsift.lm import EncodedPrompt, YesNoEngine, chat_prompt, encode_prompts
from ragsift.lm.backend import YesNoBackendParams, load_llama_cpp_model, yes_no_engine
from ragsift.lm.llamacpp_engine import LlamaCppYesNoEngine
from ragsift.model_plugins import CausalLMPlugin
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.plugin import OptionalName

__all__ = ["CausalJudge", "CausalJudgeParams", "DEFAULT_CAUSAL_TEMPLATE"]

DEFAULT_CAUSAL_TEMPLATE = (
    "Question:\n{question}\nEvidence:\n{evidence}\n"
    'Is this evidence enough to answer the question? Answer only "Yes" or "No".'
)


class CausalJudgeParams(JudgeParams, YesNoBackendParams):
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
    #: a trained readout of the last hidden state (safetensors: ``weight`` [hidden], ``bias`` [1]);
    #: None or "" (a config's way to switch off an included one): the zero-shot Yes/No probability
    readout: OptionalName = None


class CausalJudge(CausalLMPlugin, Judge):
    """P(Yes) vs P(No) for "is this evidence enough?" on a causal chat model."""

    Params = CausalJudgeParams
    label_params = ("positive_token", "negative_token")
    _readout: Any = None

    def load_model(self) -> tuple[Any, Any]:
        p = self.params
        if p.backend == "llama-cpp":
            return load_llama_cpp_model(p.model, p.max_length, p.n_threads, "CausalJudge")
        return super().load_model()

    def attach(self, model: Any, tokenizer: Any) -> None:
        p = self.params
        self._engine = yes_no_engine(p.backend, model, tokenizer, p.positive_token, p.negative_token,
                                     batch_size=p.batch_size, owner="CausalJudge")
        self.label_ids = (self._engine.positive_id, self._engine.negative_id)
        if self.params.readout is not None:
            from ragsift.lm.readout import load_readout

            self._readout = load_readout(self.params.readout, "CausalJudge")
        super().attach(model, tokenizer)

    @property
    def engine(self) -> YesNoEngine | LlamaCppYesNoEngine:
        """The Yes/No engine (after ``warm_up``)."""
        self.warm_up()
        return self._engine

    def prompt(self, question: str, evidence: Sequence[str]) -> str:
        """The full text the model continues for one evidence set."""
        self.warm_up()
        return chat_prompt(
            self._tokenizer, self.format_input(question, evidence), self.params.system_prompt,
            self.params.use_chat_template, "CausalJudge",
        )

    def encoded_prompts(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[EncodedPrompt]:
        """The token ids the model reads for each evidence set (what a readout trainer reads too)."""
        self.warm_up()
        prompts = [self.prompt(question, s) for s in evidence_sets]
        # the chat template writes its own begin-of-text marker; raw prompts get the tokenizer's
        return encode_prompts(self._tokenizer, prompts, max_length=self.params.max_length,
                              add_special_tokens=not self.params.use_chat_template, owner="CausalJudge")

    def probabilities(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[float]:
        if not evidence_sets:
            return []
        encoded = self.encoded_prompts(question, evidence_sets)
        layout = "auto" if self.params.share_prefix else "padded"
        return [float(p) for p in self._engine.probabilities(encoded, layout, readout=self._readout)]
