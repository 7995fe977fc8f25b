"""What "the evidence was kept" means, once, for calibration and for the coverage check.

A question's **units** are what a selector keeps: its sentences (``level = "sentence"``) or its
documents (``level = "document"``, each with the sentences it holds, scored as ``top-documents``
scores them: :func:`ragsift.selectors.documents.document_scores`). The **target** marks some
units as gold and says how many of them must be kept:

- ``"sentences"``: every gold evidence sentence (:func:`ragsift.evidence.evidence_mask`); at
  document level, every document holding one; rule *all*.
- ``"documents"``: every document holding gold evidence (``Example.evidence``, else the loader's
  ``metadata["supporting_docs"]``: MuSiQue, IRCoT); document level only (a sentence selector
  keeps sentences, not documents); rule *all*.
- ``"answer"``: at least one unit whose text contains a gold answer
  (:func:`ragsift.metrics.normalize.contains_answer`); rule *any*.

Both uses read the same :class:`Units`: calibration asks for the largest threshold that keeps the
target (:meth:`Units.calibration_score`), the coverage check asks whether a kept set holds it
(:meth:`Units.covered`), so that "kept at threshold t" and "covered" cannot drift apart: for a
selector that keeps the units scoring ``>= t``, ``covered`` is exactly ``calibration_score >= t``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.metrics.normalize import contains_answer
from ragsift.selectors.documents import Aggregate, document_scores
from ragsift.types import Example, Sentence

__all__ = ["Target", "Level", "TARGETS", "LEVELS", "Units", "question_units", "gold_documents", "check_target_level"]

Target = Literal["sentences", "documents", "answer"]
Level = Literal["sentence", "document"]
TARGETS: tuple[str, ...] = ("sentences", "documents", "answer")
LEVELS: tuple[str, ...] = ("sentence", "document")


def check_target_level(target: str, level: str) -> None:
    """A ValueError for a target the level cannot keep (``documents`` at sentence level)."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}; got {target!r}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    if target == "documents" and level != "document":
        raise ValueError("target 'documents' needs level 'document': a sentence-level selector keeps sentences, "
                         "not whole documents (use target 'sentences', or level 'document')")


def gold_documents(example: Example) -> set[int] | None:
    """The documents holding gold evidence: those of ``Example.evidence``, else the loader's
    ``metadata["supporting_docs"]`` (paragraph-level labels); None when the example has neither."""
    if example.evidence is not None:
        return {span.doc_index for span in example.evidence}
    docs = example.metadata.get("supporting_docs")
    return None if docs is None else {int(d) for d in docs}


@dataclass(frozen=True)
class Units:
    """One question's units: ``members[j]`` (indices into its sentence list) form unit ``j``;
    ``gold[j]`` says whether it is a gold unit of the target; ``rule`` is ``"all"`` (every gold
    unit must be kept) or ``"any"`` (one is enough)."""

    members: list[list[int]]
    gold: list[bool]
    rule: Literal["all", "any"]
    #: the unit's score (None when built without scores)
    scores: np.ndarray | None = None

    def calibration_score(self) -> float:
        """The largest threshold ``t`` such that keeping the units scoring ``>= t`` keeps the
        target: *all*: the lowest gold unit's score (``+inf``: no gold unit, nothing to keep);
        *any*: the highest gold unit's score (``-inf``: no gold unit, no threshold keeps it)."""
        if self.scores is None:
            raise ValueError("Units built without scores have no calibration score")
        values = [float(s) for s, g in zip(self.scores, self.gold, strict=True) if g]
        if any(math.isnan(v) for v in values):
            raise ValueError("a gold unit has a NaN score")
        if self.rule == "all":
            return min(values, default=math.inf)
        return max(values, default=-math.inf)

    def covered(self, kept: Collection[int]) -> bool:
        """Whether the kept sentence indices hold the target (a document unit counts as kept
        when every sentence of it is kept: the whole document)."""
        kept = set(kept)
        hit = [all(i in kept for i in members) and bool(members) for members in self.members]
        gold_hit = [h for h, g in zip(hit, self.gold, strict=True) if g]
        return all(gold_hit) if self.rule == "all" else any(gold_hit)


def question_units(example: Example, sentences: Sequence[Sentence], target: str, level: str,
                   scores: np.ndarray | None = None, aggregate: Aggregate = "max", m: int | None = None) -> Units:
    """The units of one question for ``target`` at ``level`` (see the module docstring); with
    ``scores`` (one per sentence) each unit's score, documents' by ``aggregate``. A ConfigError
    naming the question when it lacks the labels the target needs."""
    check_target_level(target, level)
    if level == "sentence":
        members = [[i] for i in range(len(sentences))]
        unit_scores = None if scores is None else np.asarray(scores, dtype=np.float64)
    else:
        docs = document_scores(sentences, np.zeros(len(sentences)) if scores is None else scores, aggregate, m)
        members = docs.members
        unit_scores = None if scores is None else docs.scores
    if target == "answer":
        if not example.answers:
            raise ConfigError(f"question '{example.id}' has no gold answer: target 'answer' needs one.")
        texts = [" ".join(sentences[i].text for i in unit) for unit in members]
        gold = [any(contains_answer(text, a) for a in example.answers) for text in texts]
        return Units(members, gold, "any", unit_scores)
    if target == "sentences":
        if example.evidence is None:
            raise ConfigError(f"question '{example.id}' has no sentence-level evidence labels: target 'sentences' "
                              "needs them (a dataset with paragraph labels only: use target 'documents').")
        mask = evidence_mask(sentences, example.evidence)
        gold = [any(mask[i] for i in unit) for unit in members]
        return Units(members, gold, "all", unit_scores)
    wanted = gold_documents(example)
    if wanted is None:
        raise ConfigError(f"question '{example.id}' has no evidence labels (no gold evidence, no supporting documents): "
                          "target 'documents' needs them.")
    gold = [bool(unit) and sentences[unit[0]].doc_index in wanted for unit in members]
    return Units(members, gold, "all", unit_scores)
