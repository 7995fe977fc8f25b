"""Provence (Chirkova et al., ICLR 2025): a DeBERTa-v3 cross-encoder whose token head says which
context tokens to keep; a sentence is kept when the mean keep probability of its tokens passes a
threshold (the ``provence`` compressor: threshold 0.1).

The published model (``naver/provence-reranker-debertav3-v1``, CC BY-NC 4.0) ships its model
class as remote code. ragsift does not run it: :func:`provence_model_class` builds the same
architecture from ``transformers`` classes (``DebertaV2Model``, its ``ContextPooler``, a
ranking ``classifier`` and a ``token_classifier``, one logit per token) and loads the published
safetensors weights into it by name (a weight the checkpoint lacks is an error naming it). The
licence is printed (stderr) whenever the published model loads.

Input per document: ``[CLS] question [SEP] title sentences [SEP]``; each sentence is encoded with
the whitespace in front of it and owns its tokens; a document too long for ``max_length`` is
read in windows that restart at a sentence boundary, each with the question. Score = mean of
``sigmoid(token logit)`` over the sentence's tokens. Written up in docs/baselines.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.model_plugins import ModelParams, ModelPlugin
from ragsift.scorers.base import Scorer
from ragsift.scorers.token_classifier import right_padded, token_means
from ragsift.types import Example, Sentence

__all__ = ["ProvenceScorer", "ProvenceParams", "PROVENCE_MODEL", "PROVENCE_LICENCE", "provence_model_class"]

PROVENCE_MODEL = "naver/provence-reranker-debertav3-v1"
PROVENCE_LICENCE = (
    "naver/provence-reranker-debertav3-v1 is licensed CC BY-NC 4.0 (non-commercial use only); "
    "see https://huggingface.co/naver/provence-reranker-debertav3-v1"
)


@cache
def provence_model_class() -> Any:
    """Provence's architecture on transformers classes (built on first use: torch loads lazily)."""
    import torch
    from transformers.models.deberta_v2.modeling_deberta_v2 import (
        ContextPooler,
        DebertaV2Model,
        DebertaV2PreTrainedModel,
    )

    class ProvenceModel(DebertaV2PreTrainedModel):
        """DeBERTa-v2/v3 encoder + a ranking head on the pooled [CLS] + a keep head per token."""

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.deberta = DebertaV2Model(config)
            self.pooler = ContextPooler(config)
            self.classifier = torch.nn.Linear(self.pooler.output_dim, 1)
            self.token_classifier = torch.nn.Linear(config.hidden_size, 1)
            self.post_init()

        def forward(self, input_ids: Any, attention_mask: Any = None) -> tuple[Any, Any]:
            """(ranking score per row ``[batch]``, keep logit per token ``[batch, length]``)."""
            states = self.deberta(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            ranking = self.classifier(self.pooler(states)).squeeze(-1)
            return ranking, self.token_classifier(states).squeeze(-1)

    return ProvenceModel


class ProvenceParams(ModelParams):
    model: str = Field(PROVENCE_MODEL, min_length=1)
    #: tokens per input, special tokens and question included (Provence: 512)
    max_length: int = Field(512, ge=8, le=100_000)
    batch_size: int = Field(8, ge=1, le=4096)


class ProvenceScorer(ModelPlugin, Scorer):
    """Score = mean keep probability of the sentence's tokens under Provence's token head."""

    Params = ProvenceParams

    def load_model(self) -> tuple[Any, Any]:
        return load_provence(self.params.model, self.params.device, self.params.dtype)

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)

    def inputs(self, example: Example, sentences: Sequence[Sentence]) -> list[tuple[list[int], list[int]]]:
        """Per input: its ids and, per id, the index of the sentence that owns it (-1: question,
        title or special token)."""
        self.warm_up()
        tok = self._tokenizer
        cls_id, sep_id = tok.cls_token_id, tok.sep_token_id
        if cls_id is None or sep_id is None:
            raise ConfigError(f"ProvenceScorer: the tokenizer of '{self.params.model}' has no [CLS] / [SEP] token.")
        question = self._encode(example.question)
        by_doc: dict[int, list[int]] = {}
        for i, s in enumerate(sentences):
            by_doc.setdefault(s.doc_index, []).append(i)
        out = []
        for doc_index, members in by_doc.items():
            doc = example.documents[doc_index]
            head = [cls_id, *question, sep_id]
            title = self._encode(doc.title)
            room = self.params.max_length - len(head) - len(title) - 1
            ids: list[int] = []
            owner: list[int] = []
            end = 0
            for i in sorted(members, key=lambda j: sentences[j].start):
                s = sentences[i]
                mine = self._encode(doc.text[end : s.start] + s.text)
                end = s.end
                if len(mine) > room:
                    raise PromptTooLongError(f"ProvenceScorer: sentence {s.id} of example '{example.id}' has {len(mine)} "
                                             f"tokens; with the question and title that exceeds max_length "
                                             f"{self.params.max_length}.")
                if ids and len(ids) + len(mine) > room:
                    out.append(self._framed(head, title, ids, owner, sep_id))
                    ids, owner = [], []
                ids += mine
                owner += [i] * len(mine)
            out.append(self._framed(head, title, ids, owner, sep_id))
        return out

    @staticmethod
    def _framed(head: list[int], title: list[int], ids: list[int], owner: list[int], sep_id: int) -> tuple[list[int], list[int]]:
        return [*head, *title, *ids, sep_id], [-1] * (len(head) + len(title)) + owner + [-1]

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False)) if text else []

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        means = token_means(self.inputs(example, sentences), self._keep_probabilities, len(sentences), self.params.batch_size)
        return np.clip(means, 0.0, 1.0)

    def _keep_probabilities(self, id_lists: list[list[int]]) -> list[np.ndarray]:
        """The one model call: sigmoid of the token head's logit at every position (right-padded batch)."""
        import torch

        ids, mask = right_padded(self._tokenizer, self._model, id_lists)
        with torch.inference_mode():
            _, logits = self._model(input_ids=ids, attention_mask=mask)
        return [row.float().sigmoid().double().cpu().numpy() for row in logits]


def load_provence(spec: str, device: str, dtype: str) -> tuple[Any, Any]:
    """(model, tokenizer): the native Provence model with the weights of ``spec`` (safetensors,
    no remote code); every head weight must be in the checkpoint."""
    from transformers import AutoTokenizer, DebertaV2Config

    from ragsift.models import check_model, resolve_device, resolve_dtype, resolve_model

    location = resolve_model(spec)
    if location.kind == "gguf":
        raise ConfigError(f"ProvenceScorer: model '{spec}' is a GGUF file; Provence needs a DeBERTa folder or Hub id.")
    if "naver/provence" in spec:
        print(f"ragsift: note: {PROVENCE_LICENCE}", file=sys.stderr)
    check_model(spec)
    kwargs = location.revision_kwargs()
    try:
        config = DebertaV2Config.from_pretrained(location.path, **kwargs)
        model, info = provence_model_class().from_pretrained(location.path, config=config, dtype=resolve_dtype(dtype),
                                                             use_safetensors=True, output_loading_info=True, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(location.path, trust_remote_code=False, **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Model '{spec}': could not be loaded as Provence ({type(exc).__name__}: {str(exc)[:400]}).") from exc
    missing = sorted(info.get("missing_keys", []))
    if missing:
        raise ConfigError(f"Model '{spec}': the checkpoint lacks Provence weights {missing[:8]}; it is not a Provence "
                          "model (or its weights are named differently).")
    return model.to(resolve_device(device)).eval(), tokenizer
