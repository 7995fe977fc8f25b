"""ECoRAG's evaluator as a judge: a T5-family model whose first decoded token is ``<EVI>`` or ``<NOT>``.

P(evidential) = softmax over the logits of those two tokens at the first decoder step. The
paper's fine-tuned Flan-T5-large is not public: the default ``google/flan-t5-large`` gets the two
tokens added with untrained embeddings (``add_tokens``), so its judgements are not ECoRAG's until
it is fine-tuned. Any two single-token labels work. Inputs over ``max_length`` are refused, never
cut. Every assumption is listed in docs/ecorag.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.judges.base import Judge, JudgeParams
from ragsift.lm import encode_prompts, single_token_id, two_way_probability
from ragsift.lm.layouts import chunks, padded_batch
from ragsift.model_plugins import ModelParams, ModelPlugin

__all__ = ["Seq2SeqJudge", "Seq2SeqJudgeParams", "PAPER_EVALUATOR_MODEL", "DEFAULT_SEQ2SEQ_TEMPLATE"]

PAPER_EVALUATOR_MODEL = "google/flan-t5-large"
DEFAULT_SEQ2SEQ_TEMPLATE = (
    "Is the evidence sufficient to answer the question?\nQuestion: {question}\nEvidence:\n{evidence}"
)


class Seq2SeqJudgeParams(JudgeParams, ModelParams):
    model: str = PAPER_EVALUATOR_MODEL
    template: str = DEFAULT_SEQ2SEQ_TEMPLATE
    evidential_token: str = "<EVI>"
    not_evidential_token: str = "<NOT>"
    #: add the two label tokens to the tokenizer (and grow the embeddings if needed) when missing
    add_tokens: bool = True
    batch_size: int = Field(default=8, ge=1)
    max_length: int = Field(default=2048, ge=1)


class Seq2SeqJudge(ModelPlugin, Judge):
    """P(``<EVI>``) vs P(``<NOT>``) at the first decoder step of a T5-family model."""

    Params = Seq2SeqJudgeParams
    label_params = ("evidential_token", "not_evidential_token")

    def load_model(self) -> tuple[Any, Any]:
        from ragsift.models import load_seq2seq_lm

        return load_seq2seq_lm(self.params.model, device=self.params.device, dtype=self.params.dtype)

    def attach(self, model: Any, tokenizer: Any) -> None:
        labels = [self.params.evidential_token, self.params.not_evidential_token]
        if self.params.add_tokens:
            vocab = tokenizer.get_vocab()
            missing = [t for t in labels if t not in vocab]
            if missing:
                tokenizer.add_tokens(missing, special_tokens=True)
        ids = tuple(single_token_id(tokenizer, t, "Seq2SeqJudge") for t in labels)
        rows = model.get_input_embeddings().weight.shape[0]
        if max(ids) >= rows:
            model.resize_token_embeddings(len(tokenizer))
        if model.config.decoder_start_token_id is None:
            raise ConfigError(
                f"Seq2SeqJudge: model '{self.params.model}' has no decoder_start_token_id; "
                f"use an encoder-decoder model of the T5 family."
            )
        self.label_ids = (ids[0], ids[1])
        super().attach(model, tokenizer)

    def probabilities(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[float]:
        if not evidence_sets:
            return []
        import torch

        self.warm_up()
        assert self.label_ids is not None
        texts = [self.format_input(question, s) for s in evidence_sets]
        encoded = encode_prompts(self._tokenizer, texts, max_length=self.params.max_length, add_special_tokens=True,
                                 owner="Seq2SeqJudge")
        pad_id = self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else 0
        start_id = int(self._model.config.decoder_start_token_id)
        device = next(self._model.parameters()).device
        evi, not_evi = self.label_ids
        out: list[float] = []
        with torch.inference_mode():
            for rows in chunks(len(encoded), self.params.batch_size):
                # right padding: the encoder is bidirectional
                ids, mask, _ = padded_batch([encoded[i].ids for i in rows], pad_id, device, side="right")
                decoder_input_ids = torch.full((len(rows), 1), start_id, dtype=torch.long, device=device)
                logits = self._model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits[:, 0]
                out.extend(float(p) for p in two_way_probability(logits[:, evi], logits[:, not_evi]).cpu())
        return out
