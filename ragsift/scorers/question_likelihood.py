"""LongLLMLingua's question-aware coarse ranking (Jiang et al., 2024): how likely a causal LM
finds the question after reading a document (or a sentence).

Score = the mean log-probability of the tokens of ``question + restrict`` conditioned on the
unit: ``(1/N) sum_i log p(q_i | unit, q_<i)``, i.e. minus the paper's ``r_k`` (Eq. 2). Higher =
more relevant, as in the authors' code, which keeps the documents of lowest question perplexity.
``restrict`` is the paper's restrictive statement, appended after the question.

``granularity = "document"`` (the paper's coarse stage): one score per document, given to each
of its sentences (the ``rate`` selector then keeps whole documents); ``"sentence"``: each
sentence is its own unit. The sequence is ``start + unit + separator`` then the question, the
two parts encoded separately so the question's tokens are the same after every unit. A unit too
long for the model's window is cut from its end. Written up in docs/baselines.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from ragsift.errors import DataFormatError, PromptTooLongError
from ragsift.scorers.lm_logprob import LogProbParams, LogProbScorer
from ragsift.types import Example, Sentence

__all__ = ["QuestionLikelihoodScorer", "QuestionLikelihoodParams", "LONGLLMLINGUA_MODEL", "RESTRICTIVE_STATEMENT"]

#: LLMLingua's default small LM (the paper uses LLaMA-2-7B)
LONGLLMLINGUA_MODEL = "NousResearch/Llama-2-7b-hf"
#: the paper's restrictive statement (footnote to Section 4.1), appended after the question
RESTRICTIVE_STATEMENT = " We can get the answer to this question in the given documents."


class QuestionLikelihoodParams(LogProbParams):
    model: str = Field(LONGLLMLINGUA_MODEL, min_length=1)
    granularity: Literal["document", "sentence"] = "document"
    #: appended after the question ("" = the question alone)
    restrict: str = RESTRICTIVE_STATEMENT
    #: between the unit and the question
    separator: str = "\n\n"
    #: a document unit is read as "{title}\n{text}" (true) or its text alone
    title: bool = True


class QuestionLikelihoodScorer(LogProbScorer):
    """Score = mean log p(question + restrictive statement | unit)."""

    Params = QuestionLikelihoodParams

    def score_range(self) -> tuple[float, float] | None:
        return (-math.inf, 0.0)

    def units(self, example: Example, sentences: Sequence[Sentence]) -> tuple[list[str], list[int]]:
        """The texts the question is conditioned on and, per sentence, the index of its unit."""
        if self.params.granularity == "sentence":
            return [s.text for s in sentences], list(range(len(sentences)))
        docs = sorted({s.doc_index for s in sentences})
        where = {d: k for k, d in enumerate(docs)}
        documents = [example.documents[d] for d in docs]
        texts = [f"{doc.title}\n{doc.text}" if self.params.title else doc.text for doc in documents]
        return texts, [where[s.doc_index] for s in sentences]

    def sequences(self, example: Example, units: Sequence[str]) -> tuple[list[list[int]], int]:
        """One sequence per unit (``start + unit + separator + question``) and the question's length."""
        question = self.encode(example.question + self.params.restrict)
        if not question:
            raise DataFormatError(f"example '{example.id}'", None, "QuestionLikelihoodScorer: the question (with "
                                  "restrict) encodes to no tokens; there is nothing to score.")
        room = self.max_length - 1 - len(question)
        if room < 1:
            raise PromptTooLongError(
                f"QuestionLikelihoodScorer: the question of example '{example.id}' has {len(question)} tokens; "
                f"max_length {self.max_length} leaves no room for a document. Raise max_length."
            )
        seqs = [[self.start_id, *self.encode(unit + self.params.separator)[:room], *question] for unit in units]
        return seqs, len(question)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        units, unit_of = self.units(example, sentences)
        seqs, n_question = self.sequences(example, units)
        logprobs = self.engine.logprobs(seqs, self.params.layout, last=n_question)
        per_unit = np.array([float(np.mean(lp)) for lp in logprobs])
        self.stats = {"units": len(units), **self.engine.stats}
        return np.minimum(per_unit[unit_of], 0.0)
