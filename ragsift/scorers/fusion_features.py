"""Features of each sentence for the learned-fusion scorer: other scorers' scores, document-level
signals and simple structure.

Scores are only comparable within a question, so each component scorer contributes its raw
score and two within-question forms (gap to the question's best, reciprocal rank), and the
same for the sentence's document (the best score of its sentences). Document scorers (any
sentence scorer applied to whole documents, ``title + " " + text``) add a document score, gap
and reciprocal rank. Structure: position in the document, length, title-question overlap,
whether the sentence names another document's title (the bridge of a two-hop question), and
the share of question words it holds.

Every feature is computed from one question's sentences and documents alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragsift.metrics.normalize import bare_title, contains_answer, content_words
from ragsift.registry import build_plugin
from ragsift.types import Document, Example, Sentence

__all__ = ["FusionFeatures", "STRUCTURE_FEATURES", "reciprocal_rank"]

STRUCTURE_FEATURES = (
    "first_sentence", "second_sentence", "inverse_position", "relative_position", "log_characters",
    "log_document_sentences", "title_question_overlap", "title_in_question", "mentions_other_title",
    "mentioned_document_rank", "question_word_share",
)


def reciprocal_rank(values: np.ndarray) -> np.ndarray:
    """1 / (1 + rank), rank 0 for the highest value (ties in original order)."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    return 1.0 / (1.0 + ranks)


def _document_example(example: Example) -> tuple[Example, list[Sentence]]:
    """Each document as one sentence (``title + " " + text``), for scoring whole documents."""
    docs = tuple(Document(title=d.title, text=f"{d.title} {d.text}".strip(), id=d.id) for d in example.documents)
    sentences = [Sentence(i, 0, 0, len(d.text), d.text) for i, d in enumerate(docs)]
    return Example(example.id, example.question, example.answers, docs), sentences


class FusionFeatures:
    """Turns (example, sentences) into a feature matrix, one row per sentence.

    ``scorers``: label -> scorer spec (``{"name": ..., **params}``) scored on sentences;
    ``document_scorers``: label -> scorer spec scored on whole documents.
    """

    def __init__(self, scorers: Mapping[str, Mapping[str, Any]], document_scorers: Mapping[str, Mapping[str, Any]]) -> None:
        self.scorer_specs = {k: dict(v) for k, v in scorers.items()}
        self.document_specs = {k: dict(v) for k, v in document_scorers.items()}
        self.scorers = {k: build_plugin("scorer", v, f"learned-fusion scorer '{k}'") for k, v in self.scorer_specs.items()}
        self.document_scorers = {
            k: build_plugin("scorer", v, f"learned-fusion document scorer '{k}'") for k, v in self.document_specs.items()
        }

    @property
    def names(self) -> list[str]:
        out = []
        for k in self.scorer_specs:
            out += [f"{k}", f"{k}_gap", f"{k}_rank", f"{k}_document_gap", f"{k}_document_rank"]
        for k in self.document_specs:
            out += [f"{k}_document", f"{k}_document_score_gap", f"{k}_document_score_rank"]
        return out + list(STRUCTURE_FEATURES)

    def warm_up(self) -> None:
        for scorer in [*self.scorers.values(), *self.document_scorers.values()]:
            scorer.warm_up()

    def compute(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        n_docs = len(example.documents)
        if not sentences:
            return np.zeros((0, len(self.names)))
        doc_of = np.array([s.doc_index for s in sentences])
        columns: list[np.ndarray] = []
        document_rank: np.ndarray | None = None
        for scorer in self.scorers.values():
            x = np.asarray(scorer.score(example, sentences), dtype=np.float64)
            best = np.full(n_docs, -np.inf)
            np.maximum.at(best, doc_of, x)
            present = np.isfinite(best)
            floor = x.min() if len(x) else 0.0
            best = np.where(present, best, floor)  # a document without sentences ranks last
            doc_rank = reciprocal_rank(best)
            columns += [x, x - x.max(), reciprocal_rank(x), (best - best.max())[doc_of], doc_rank[doc_of]]
            document_rank = doc_rank if document_rank is None else document_rank
        if self.document_scorers:
            doc_example, doc_sentences = _document_example(example)
            for i, scorer in enumerate(self.document_scorers.values()):
                d = np.asarray(scorer.score(doc_example, doc_sentences), dtype=np.float64)
                rank = reciprocal_rank(d)
                columns += [d[doc_of], (d - d.max())[doc_of], rank[doc_of]]
                if i == 0:  # the first document scorer ranks the documents a sentence mentions
                    document_rank = rank
        columns += self._structure(example, sentences, document_rank)
        return np.stack(columns, axis=1)

    @staticmethod
    def _structure(example: Example, sentences: Sequence[Sentence], document_rank: np.ndarray | None) -> list[np.ndarray]:
        n_docs = len(example.documents)
        per_doc = np.bincount([s.doc_index for s in sentences], minlength=n_docs).astype(np.float64)
        question = content_words(example.question)
        titles = [bare_title(d.title) for d in example.documents]
        title_words = [content_words(d.title) for d in example.documents]
        overlap = np.array([len(w & question) / max(1, len(w)) for w in title_words])
        in_question = np.array([float(bool(t) and contains_answer(example.question, t)) for t in titles])
        rank = document_rank if document_rank is not None else np.zeros(n_docs)
        rows = []
        for s in sentences:
            d = s.doc_index
            mentioned = [j for j in range(n_docs) if j != d and titles[j] and contains_answer(s.text, titles[j])]
            rows.append((
                float(s.index == 0), float(s.index == 1), 1.0 / (1.0 + s.index), s.index / max(1.0, per_doc[d]),
                np.log1p(len(s.text)), np.log1p(per_doc[d]), overlap[d], in_question[d], float(bool(mentioned)),
                max((rank[j] for j in mentioned), default=0.0), len(content_words(s.text) & question) / max(1, len(question)),
            ))
        table = np.asarray(rows, dtype=np.float64)
        return [table[:, i] for i in range(table.shape[1])]
