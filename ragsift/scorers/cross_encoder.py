"""Cross-encoder scorer: one encoder reads the query, the sentence and the sentence's own document
together and gives one logit (a sequence-classification model with ``num_labels = 1``); the
score is its sigmoid, P(the sentence is evidence).

Input, with EXIT's context rule (the sentence's OWN document, ``"{title}\\n{text}"``, never other
documents): first segment ``query + " " + SEP + " " + sentence``, second segment the document, as a
BERT-style pair (``[CLS] query [SEP] sentence [SEP] document [SEP]``). Truncation is
``longest_first`` to ``max_length`` tokens: the document, almost always the longer segment, is cut
first. Train one with ``ragsift train`` (trainer ``cross-encoder``); the scorer and the trainer score
through the same function, :func:`cross_encoder_scores`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ragsift.lm.sentence_prompt import document_context
from ragsift.model_plugins import ModelPlugin
from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["CrossEncoderScorer", "CrossEncoderParams", "cross_encoder_inputs", "cross_encoder_scores"]


def cross_encoder_inputs(tokenizer: Any, queries: Sequence[str], sentences: Sequence[str], contexts: Sequence[str],
                         max_length: int) -> Any:
    """Tokenized (query + sentence, own document) pairs, padded, as PyTorch tensors."""
    sep = tokenizer.sep_token or "\n"
    first = [f"{q} {sep} {s}" for q, s in zip(queries, sentences, strict=True)]
    return tokenizer(first, list(contexts), truncation="longest_first", max_length=max_length, padding=True,
                     return_tensors="pt")


def cross_encoder_scores(model: Any, tokenizer: Any, queries: Sequence[str], sentences: Sequence[str],
                         contexts: Sequence[str], max_length: int, batch_size: int) -> np.ndarray:
    """The model's logit for each (query, sentence, context), in eval mode, without gradients."""
    import torch

    device = next(model.parameters()).device
    out = []
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(sentences), batch_size):
                batch = cross_encoder_inputs(tokenizer, queries[start : start + batch_size], sentences[start : start + batch_size],
                                             contexts[start : start + batch_size], max_length).to(device)
                out.append(model(**batch).logits[:, 0].float().cpu().numpy())
    finally:
        model.train(was_training)
    return np.concatenate(out).astype(np.float64) if out else np.zeros(0)


class CrossEncoderParams(Params):
    #: a folder with a trained sequence-classification model (safetensors) and its tokenizer
    model: str
    batch_size: int = Field(32, ge=1)
    max_length: int = Field(256, ge=8)
    device: str = "auto"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"


class CrossEncoderScorer(ModelPlugin, Scorer):
    """sigmoid(logit) of a cross-encoder over (query, sentence, own document)."""

    Params = CrossEncoderParams
    conformance_params = {"model": "models/cross-encoder-minilm"}

    def load_model(self) -> tuple[Any, Any]:
        from ragsift.models import load_sequence_classifier, resolve_local_path

        path = resolve_local_path(self.params.model)
        spec = str(path) if path.exists() else self.params.model
        return load_sequence_classifier(spec, device=self.params.device, dtype=self.params.dtype)

    def logits(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        self.warm_up()
        contexts = [document_context(example.documents[s.doc_index]) for s in sentences]
        return cross_encoder_scores(self._model, self._tokenizer, [example.question] * len(sentences), [s.text for s in sentences],
                                    contexts, self.params.max_length, self.params.batch_size)

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # sigmoid of the logit

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-self.logits(example, sentences)))
