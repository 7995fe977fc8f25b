"""ECoRAG's evaluator as a judge: a T5-family model whose first decoded token is ``<EVI>`` or ``<NOT>``.

The paper fine-tunes Flan-T5-large with two added tokens, ``<EVI>`` (the evidence suffices) and
``<NOT>``; P(evidential) = softmax over the logits of those two tokens at the first decoder
step. The trained checkpoint is not public, so the default ``google/flan-t5-large`` carries the
added tokens with untrained embeddings: its judgements are not ECoRAG's until it is fine-tuned.

Documented assumptions:

- Input template (not published): see :class:`Seq2SeqJudgeParams.template`.
- ``add_tokens = true`` adds the two label tokens to the tokenizer as special tokens when it
  lacks them, and grows the embedding matrix only if the new ids fall outside it (T5 checkpoints
  keep spare rows: Flan-T5's tokenizer has 32,100 entries, its embeddings 32,128). A trained
  checkpoint that already has the tokens is used as is.
- Any two labels that are single tokens work (e.g. ``"yes"`` / ``"no"`` for a zero-shot
  Flan-T5 with ``add_tokens = false``).
- An input longer than ``max_length`` tokens is refused, never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.judges.base import Judge, JudgeParams
from ragsift.lm import single_token_id, two_way_probability

__all__ = ["Seq2SeqJudge", "Seq2SeqJudgeParams", "PAPER_EVALUATOR_MODEL", "DEFAULT_SEQ2SEQ_TEMPLATE"]

PAPER_EVALUATOR_MODEL = "google/flan-t5-large"
DEFAULT_SEQ2SEQ_TEMPLATE = (
    "Is the evidence sufficient to answer the question?\nQuestion: {question}\nEvidence:\n{evidence}"
)


class Seq2SeqJudgeParams(JudgeParams):
    model: str = PAPER_EVALUATOR_MODEL
    template: str = DEFAULT_SEQ2SEQ_TEMPLATE
    evidential_token: str = "<EVI>"
    not_evidential_token: str = "<NOT>"
    #: add the two label tokens to the tokenizer (and grow the embeddings if needed) when missing
    add_tokens: bool = True
    device: str = "auto"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    batch_size: int = Field(default=8, ge=1)
    max_length: int = Field(default=2048, ge=1)


class Seq2SeqJudge(Judge):
    """P(``<EVI>``) vs P(``<NOT>``) at the first decoder step of a T5-family model."""

    Params = Seq2SeqJudgeParams
    needs_model: ClassVar[bool] = True
    label_params = ("evidential_token", "not_evidential_token")

    def warm_up(self) -> None:
        if self._model is not None:
            return
        from ragsift.models import load_seq2seq_lm

        model, tokenizer = load_seq2seq_lm(self.params.model, device=self.params.device, dtype=self.params.dtype)
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
        self._model, self._tokenizer = model, tokenizer
        self.label_ids = (ids[0], ids[1])

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = [self._tokenizer.encode(t, add_special_tokens=True) for t in texts]
        for i, ids in enumerate(encoded):
            if len(ids) > self.params.max_length:
                raise PromptTooLongError(
                    f"Seq2SeqJudge: input {i} has {len(ids)} tokens but max_length is {self.params.max_length}; "
                    f"raise max_length or judge fewer sentences (the reflection selector's max_sentences)."
                )
        return encoded

    def probabilities(self, question: str, evidence_sets: Sequence[Sequence[str]]) -> list[float]:
        if not evidence_sets:
            return []
        import torch

        self.warm_up()
        assert self.label_ids is not None
        encoded = self._encode([self.format_input(question, s) for s in evidence_sets])
        pad_id = self._tokenizer.pad_token_id if self._tokenizer.pad_token_id is not None else 0
        start_id = int(self._model.config.decoder_start_token_id)
        device = next(self._model.parameters()).device
        evi, not_evi = self.label_ids
        out: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(encoded), self.params.batch_size):
                chunk = encoded[start : start + self.params.batch_size]
                width = max(len(ids) for ids in chunk)
                input_ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, ids in enumerate(chunk):  # right padding: the encoder is bidirectional
                    input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                    mask[row, : len(ids)] = 1
                decoder_input_ids = torch.full((len(chunk), 1), start_id, dtype=torch.long)
                logits = self._model(
                    input_ids=input_ids.to(device), attention_mask=mask.to(device),
                    decoder_input_ids=decoder_input_ids.to(device),
                ).logits[:, 0, :]
                out.extend(float(p) for p in two_way_probability(logits[:, evi], logits[:, not_evi]).cpu())
        return out
