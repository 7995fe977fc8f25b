"""Sentence labels from paragraph-level labels (IRCoT's ``is_supporting``), by a heuristic.

IRCoT's HotpotQA files mark which paragraphs support the answer, not which sentences. This
labeler guesses the supporting sentences inside each supporting paragraph. A sentence of a
supporting paragraph is labelled evidence when any of these holds:

1. it is the paragraph's first sentence (HotpotQA's first sentences define the entity);
2. it contains a gold answer other than yes / no (SQuAD-normalised, as whole tokens);
3. it mentions the title of another supporting paragraph (the bridge of a two-hop question;
   the title without a trailing parenthesised qualifier; normalised, whole tokens);
4. it shares at least ``min_question_words`` content words with the question, not counting the
   words of its own paragraph's title.

Measured against HotpotQA's gold supporting facts on the 52 questions that have both labels
(``data/training/hotpotqa-dev-ircot52.jsonl`` vs ``tests/data/hotpotqa-dev-ircot52-sf.json``):
see ``docs/training.md``. The rules were chosen on those same 52 questions, so the figures are
in-sample. Sentences of supporting paragraphs that the rules reject become ``hard_negative``
records; ``distractor_negatives`` per two positives are drawn (seeded) from the other paragraphs.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.labelers.base import Labeler, SentenceLabel
from ragsift.metrics.normalize import bare_title, contains_answer, content_words, normalize_answer
from ragsift.plugin import Params
from ragsift.splitters.presplit import PresplitSplitter
from ragsift.types import EvidenceSpan, Example, Sentence

__all__ = ["ParagraphSentencesLabeler", "heuristic_evidence", "supporting_documents"]


class ParagraphSentencesParams(Params):
    seed: int = 0
    #: rule 4: shared content words with the question (excluding the paragraph's title words)
    min_question_words: int = Field(3, ge=1)
    #: negatives from non-supporting paragraphs per two positives (0 = none)
    distractor_negatives: int = Field(1, ge=0)


def supporting_documents(example: Example) -> list[int]:
    """Indices of the supporting paragraphs: IRCoT's ``supporting_docs`` metadata, else the
    documents marked ``is_supporting``."""
    docs = example.metadata.get("supporting_docs")
    if docs is None:
        docs = [i for i, d in enumerate(example.documents) if d.metadata.get("is_supporting")]
    return [int(i) for i in docs]


def heuristic_evidence(example: Example, sentences: Sequence[Sentence], min_question_words: int = 3) -> list[bool]:
    """For each sentence, whether the rules of this module call it evidence."""
    supporting = set(supporting_documents(example))
    question = content_words(example.question)
    answers = [a for a in example.answers if normalize_answer(a) not in ("", "yes", "no")]
    titles = {i: bare_title(example.documents[i].title) for i in supporting}
    out = []
    for s in sentences:
        if s.doc_index not in supporting:
            out.append(False)
            continue
        own_title = content_words(example.documents[s.doc_index].title)
        out.append(
            s.index == 0
            or any(contains_answer(s.text, a) for a in answers)
            or any(t and contains_answer(s.text, t) for d, t in titles.items() if d != s.doc_index)
            or len((content_words(s.text) - own_title) & question) >= min_question_words
        )
    return out


class ParagraphSentencesLabeler(Labeler):
    """Sentence records from paragraph labels, by the rules of the module docstring."""

    Params = ParagraphSentencesParams

    def with_evidence(self, example: Example) -> Example:
        """The example with the heuristic sentences as its evidence spans."""
        sentences = PresplitSplitter(fallback="sentencizer").split_all(example.documents)
        mask = heuristic_evidence(example, sentences, self.params.min_question_words)
        spans = tuple(EvidenceSpan(s.doc_index, s.start, s.end) for s, keep in zip(sentences, mask, strict=True) if keep)
        return replace(example, evidence=spans, metadata={**example.metadata, "evidence_source": "paragraph-sentences"})

    def label(self, examples: Iterable[Example]) -> Iterator[SentenceLabel]:
        splitter = PresplitSplitter(fallback="sentencizer")
        for example in examples:
            supporting = set(supporting_documents(example))
            if not supporting:
                raise ConfigError(
                    f"ParagraphSentencesLabeler: example '{example.id}' has no supporting paragraph; it needs "
                    "paragraph labels (IRCoT's is_supporting)."
                )
            rng = random.Random(zlib.crc32(f"{self.params.seed}:{example.id}".encode()))
            sentences = splitter.split_all(example.documents)
            mask = heuristic_evidence(example, sentences, self.params.min_question_words)
            positives = [s for s, m in zip(sentences, mask, strict=True) if m]
            for s, m in zip(sentences, mask, strict=True):
                if s.doc_index in supporting:
                    yield SentenceLabel.of(example, s, m, "positive" if m else "hard_negative")
            distractors = [s for s in sentences if s.doc_index not in supporting]
            wanted = math.ceil(len(positives) / 2) * self.params.distractor_negatives
            for s in rng.sample(distractors, min(wanted, len(distractors))):
                yield SentenceLabel.of(example, s, False, "distractor_negative")


def agreement_with_gold(
    paragraph_examples: Iterable[Example], sentence_examples: Iterable[Example], min_question_words: int = 3
) -> dict[str, float]:
    """Precision and recall of the heuristic labels against gold supporting facts, over the
    questions present in both inputs; sentences are matched by (document title, text)."""
    from ragsift.evidence import evidence_mask

    splitter = PresplitSplitter(fallback="sentencizer")
    gold_by_id = {e.id: e for e in sentence_examples}
    tp = fp = fn = questions = 0
    for example in paragraph_examples:
        gold_example = gold_by_id.get(example.id)
        if gold_example is None or gold_example.evidence is None:
            continue
        questions += 1
        gold_sentences = splitter.split_all(gold_example.documents)
        gold = {
            (gold_example.documents[s.doc_index].title, s.text)
            for s, g in zip(gold_sentences, evidence_mask(gold_sentences, gold_example.evidence), strict=True) if g
        }
        sentences = splitter.split_all(example.documents)
        mask = heuristic_evidence(example, sentences, min_question_words)
        guessed = {(example.documents[s.doc_index].title, s.text) for s, m in zip(sentences, mask, strict=True) if m}
        tp, fp, fn = tp + len(guessed & gold), fp + len(guessed - gold), fn + len(gold - guessed)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"questions": questions, "precision": precision, "recall": recall, "true_positives": tp,
            "false_positives": fp, "false_negatives": fn}
