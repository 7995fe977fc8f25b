"""LLMLingua-2's compressor (Pan et al., 2024): a token classifier's probability that a token is
preserved, averaged over the tokens of each unit.

Units are whatever the splitter gives (the ``llmlingua2`` compressor splits documents into
whitespace words, the units LLMLingua-2 keeps or drops). Each document's units are tokenized as
pre-split words (``is_split_into_words``: an XLM-RoBERTa tokenizer then marks each as the start
of a word, as in running text) and classified in chunks of at most ``max_length`` tokens that end
at a unit boundary; a unit's score is the mean over its tokens of ``softmax(logits)[label]``
(``label = 1``: "preserve" in the published models). A unit containing one of ``force`` (LLMLingua-2's
``force_tokens``) scores 1. Written up in docs/baselines.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from ragsift.errors import PromptTooLongError
from ragsift.model_plugins import ModelParams, ModelPlugin
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["TokenClassifierScorer", "TokenClassifierParams", "LLMLINGUA2_MODEL"]

#: the published LLMLingua-2 compressor (XLM-RoBERTa-large, trained on MeetingBank compressions)
LLMLINGUA2_MODEL = "microsoft/llmlingua-2-xlm-roberta-large-meetingbank"


class TokenClassifierParams(ModelParams):
    model: str = Field(LLMLINGUA2_MODEL, min_length=1)
    #: the class whose probability is the score (LLMLingua-2: 1 = preserve)
    label: int = Field(1, ge=0)
    #: tokens per chunk, special tokens included (LLMLingua-2: 512)
    max_length: int = Field(512, ge=4, le=100_000)
    #: chunks per forward pass
    batch_size: int = Field(8, ge=1, le=4096)
    #: a unit containing any of these strings scores 1 (LLMLingua-2's force_tokens; "\n" never
    #: occurs inside a whitespace word)
    force: list[str] = Field(default_factory=lambda: ["\n", "?"])


class TokenClassifierScorer(ModelPlugin, Scorer):
    """Score = mean P(label) over the unit's tokens under a token classifier."""

    Params = TokenClassifierParams

    def load_model(self) -> tuple[Any, Any]:
        from ragsift.models import load_token_classifier

        return load_token_classifier(self.params.model, device=self.params.device, dtype=self.params.dtype)

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)

    def chunks(self, example: Example, units: Sequence[Sentence]) -> list[tuple[list[int], list[int]]]:
        """Per chunk: its token ids (special tokens included) and, per id, the index into ``units``
        of the unit it belongs to (-1: a special token)."""
        self.warm_up()
        tok = self._tokenizer
        lead, tail = self._special_ids()
        inner = self.params.max_length - len(lead) - len(tail)
        out = []
        by_doc: dict[int, list[int]] = {}
        for i, s in enumerate(units):
            by_doc.setdefault(s.doc_index, []).append(i)
        for members in by_doc.values():
            encoded = tok([units[i].text for i in members], is_split_into_words=True, add_special_tokens=False)
            word_ids = encoded.word_ids()
            pieces: dict[int, list[int]] = {}
            for token_id, w in zip(encoded["input_ids"], word_ids, strict=True):
                pieces.setdefault(members[w], []).append(token_id)
            ids: list[int] = []
            owner: list[int] = []
            for i in members:
                mine = pieces.get(i, [])
                if len(mine) > inner:
                    raise PromptTooLongError(f"TokenClassifierScorer: unit {units[i].id} of example '{example.id}' "
                                             f"has {len(mine)} tokens, more than max_length {self.params.max_length} "
                                             "allows; split into smaller units.")
                if ids and len(ids) + len(mine) > inner:
                    out.append((lead + ids + tail, [-1] * len(lead) + owner + [-1] * len(tail)))
                    ids, owner = [], []
                ids += mine
                owner += [i] * len(mine)
            if ids:
                out.append((lead + ids + tail, [-1] * len(lead) + owner + [-1] * len(tail)))
        return out

    def _special_ids(self) -> tuple[list[int], list[int]]:
        """The special ids the tokenizer puts before and after a text (XLM-R: ``<s>``, ``</s>``)."""
        tok = self._tokenizer
        full = list(tok(["a"], is_split_into_words=True)["input_ids"])
        bare = list(tok(["a"], is_split_into_words=True, add_special_tokens=False)["input_ids"])
        at = next(k for k in range(len(full) - len(bare) + 1) if full[k : k + len(bare)] == bare)
        return full[:at], full[at + len(bare) :]

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        scores = token_means(self.chunks(example, sentences), self._probabilities, len(sentences), self.params.batch_size)
        forced = [i for i, s in enumerate(sentences) if any(f and f in s.text for f in self.params.force)]
        scores[forced] = 1.0
        return np.clip(scores, 0.0, 1.0)

    def _probabilities(self, id_lists: list[list[int]]) -> list[np.ndarray]:
        """The one model call: P(label) of every token of each chunk (right-padded batch)."""
        import torch

        ids, mask = right_padded(self._tokenizer, self._model, id_lists)
        with torch.inference_mode():
            logits = self._model(input_ids=ids, attention_mask=mask).logits
            probs = torch.softmax(logits.float(), dim=-1)[..., self.params.label]
        return [row.double().cpu().numpy() for row in probs]


def token_means(chunks: Sequence[tuple[list[int], list[int]]], probabilities: Callable[[list[list[int]]], list[np.ndarray]],
                n: int, batch_size: int) -> np.ndarray:
    """Each of ``n`` units' mean over its tokens of ``probabilities`` (of a batch of chunks' ids; a
    chunk is its ids and each id's owning unit, -1 for none), ``batch_size`` chunks a call; 0 for a
    unit without tokens."""
    totals, counts = np.zeros(n), np.zeros(n)
    for start in range(0, len(chunks), batch_size):
        batch = chunks[start : start + batch_size]
        for (_, owner), p in zip(batch, probabilities([ids for ids, _ in batch]), strict=True):
            who = np.asarray(owner, dtype=np.int64)
            mine = who >= 0
            np.add.at(totals, who[mine], p[: len(owner)][mine])
            np.add.at(counts, who[mine], 1)
    return np.divide(totals, counts, out=np.zeros_like(totals), where=counts > 0)


def right_padded(tokenizer: Any, model: Any, id_lists: list[list[int]]) -> tuple[Any, Any]:
    """(ids, attention mask) of ``id_lists`` right-padded with the tokenizer's pad id (else 0), on the model's device."""
    from ragsift.lm.layouts import padded_batch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids, mask, _ = padded_batch(id_lists, int(pad), next(model.parameters()).device, side="right")
    return ids, mask
