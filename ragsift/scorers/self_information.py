"""Selective-Context (Li et al., 2023): the self-information of each sentence under a causal LM.

The self-information of a token is ``-log p(x_t | x_<t)``; a lexical unit's is the sum of its
tokens' (the paper's additivity; ``aggregate = "mean"`` averages instead, as the authors'
released code does for sentences). Units with little self-information are predictable from
their context and are the ones removed (the ``percentile`` selector: Selective-Context's
percentile filter).

``context = "document"`` (default, the paper's definition): every token is conditioned on the
text of its document before it, the document read once from a start token. Each sentence is
encoded with the whitespace in front of it (so a sub-word tokenizer sees " She", as in running
text); text between sentences that is not whitespace is read as context but belongs to no
sentence. A document longer than the model's window is read in windows that restart at a
sentence boundary. ``context = "sentence"``: each sentence alone after the start token (the
authors' released code, which computes self-information sentence by sentence). The title is not
read (Selective-Context compresses the context text as given). Written up in docs/baselines.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from ragsift.errors import PromptTooLongError
from ragsift.scorers.lm_logprob import LogProbParams, LogProbScorer
from ragsift.types import Example, Sentence

__all__ = ["SelfInformationScorer", "SelfInformationParams", "SELECTIVE_CONTEXT_MODEL"]

#: the paper's (and the released code's default) small LM
SELECTIVE_CONTEXT_MODEL = "openai-community/gpt2"


class SelfInformationParams(LogProbParams):
    model: str = Field(SELECTIVE_CONTEXT_MODEL, min_length=1)
    #: what each token is conditioned on: the document before it, or its own sentence only
    context: Literal["document", "sentence"] = "document"
    #: a sentence's self-information: the sum over its tokens (paper) or the mean (released code)
    aggregate: Literal["sum", "mean"] = "sum"


class SelfInformationScorer(LogProbScorer):
    """Score = self-information of the sentence in nats (sum or mean of its tokens' ``-log p``)."""

    Params = SelfInformationParams

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, math.inf)

    def sequences(self, example: Example, sentences: Sequence[Sentence]) -> tuple[list[list[int]], list[list[int]]]:
        """The sequences the model reads and, per sequence, the index of the sentence that owns each
        predicted token (-1: context that belongs to no sentence)."""
        seqs: list[list[int]] = []
        owners: list[list[int]] = []
        if self.params.context == "sentence":
            for i, s in enumerate(sentences):
                ids = self.encode(s.text)
                self._check_fits(example, s, len(ids))
                seqs.append([self.start_id, *ids])
                owners.append([i] * len(ids))
            return seqs, owners
        by_doc: dict[int, list[int]] = {}
        for i, s in enumerate(sentences):
            by_doc.setdefault(s.doc_index, []).append(i)
        for doc_index, members in by_doc.items():
            text = example.documents[doc_index].text
            seq, end = [self.start_id], 0
            owner: list[int] = []
            for i in sorted(members, key=lambda j: sentences[j].start):
                s = sentences[i]
                gap = text[end : s.start]
                pieces = [(gap, -1), (s.text, i)] if gap.strip() else [(gap + s.text, i)]
                encoded = [(self.encode(piece), who) for piece, who in pieces]
                n = sum(len(ids) for ids, _ in encoded)
                self._check_fits(example, s, n)
                if len(seq) + n > self.max_length:  # a new window, from the start token
                    seqs.append(seq)
                    owners.append(owner)
                    seq, owner = [self.start_id], []
                for ids, who in encoded:
                    seq += ids
                    owner += [who] * len(ids)
                end = max(end, s.end)
            seqs.append(seq)
            owners.append(owner)
        keep = [k for k, seq in enumerate(seqs) if len(seq) > 1]
        return [seqs[k] for k in keep], [owners[k] for k in keep]

    def _check_fits(self, example: Example, sentence: Sentence, n: int) -> None:
        if n + 1 > self.max_length:
            raise PromptTooLongError(
                f"SelfInformationScorer: sentence {sentence.id} of example '{example.id}' has {n} tokens; with the "
                f"start token that exceeds max_length {self.max_length}. Raise max_length or use a finer splitter."
            )

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        seqs, owners = self.sequences(example, sentences)
        totals = np.zeros(len(sentences))
        counts = np.zeros(len(sentences))
        for logprobs, owner in zip(self.engine.logprobs(seqs, self.params.layout), owners, strict=True):
            who = np.asarray(owner, dtype=np.int64)
            mine = who >= 0
            np.add.at(totals, who[mine], -logprobs[mine])
            np.add.at(counts, who[mine], 1)
        self.stats = {"sequences": len(seqs), **self.engine.stats}
        totals = np.maximum(totals, 0.0)  # -log p >= 0; fp32 rounding of a certain token could dip below
        if self.params.aggregate == "mean":
            return np.divide(totals, counts, out=np.zeros_like(totals), where=counts > 0)
        return totals
