"""Features of a document for the two-hop document ranker (:mod:`ragsift.scorers.bridge_documents`):
how well it answers the question alone (first hop), and how it connects to a document already
kept (second hop: the bridge of a multi-hop question often shares no word with the question,
only with the first document).

First-hop features (one row per document, the question alone): for each component sentence
scorer, its best sentence in the document (raw, gap to the best document, reciprocal rank);
BM25 of the whole document (title + text) against the question (same three); the share of the
question's content words the document holds; whether the document's leading entity (its title,
or without a title the capitalised name its text opens with) is named in the question.

Second-hop features of a candidate given one kept document ``k`` (zeros before anything is kept,
with ``has_kept`` = 0): BM25 of the candidate against the question + ``k``'s text (gap and
reciprocal rank among the other documents); BM25 against ``k``'s words that are not the
question's (raw, gap, rank); the IDF mass of those words the candidate holds; how many
capitalised words (names) the candidate shares with ``k`` beyond the question's; whether the
candidate's leading entity is named in ``k``, and ``k``'s in the candidate. With several kept
documents each feature is the maximum over them, so nothing depends on how many are kept, how
many documents there are, or how many of them are gold.

Every feature is computed from one question's documents alone (BM25's IDF is over them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsift.metrics.normalize import STOPWORDS, bare_title, content_words, normalize_answer
from ragsift.registry import build_plugin
from ragsift.scorers.bm25 import tokenize
from ragsift.scorers.fusion_features import reciprocal_rank
from ragsift.types import Example, Sentence

__all__ = ["BridgeFeatures", "BridgeContext", "leading_entity", "SECOND_HOP_FEATURES"]

FIRST_HOP_DOCUMENT_FEATURES = ("bm25_document", "bm25_document_gap", "bm25_document_rank", "question_word_share",
                               "lead_in_question")
SECOND_HOP_FEATURES = ("has_kept", "kept_query_gap", "kept_query_rank", "bridge_bm25", "bridge_gap", "bridge_rank",
                       "bridge_idf_mass", "bridge_names", "lead_in_kept", "kept_lead_in_candidate")

_NAME = re.compile(r"\b[A-Z][\w'\-]*")
_CONNECTORS = {"of", "the", "de", "da", "del", "von", "van", "la", "le", "du", "and", "y", "al"}
_LEAD_WORD = re.compile(r"[\w'\-.]+")


def leading_entity(title: str, text: str) -> str:
    """The name a document is about, normalised: its title without a trailing parenthesis, or,
    when the title is blank, the run of capitalised words its text opens with ("Scott Derrickson
    (born July 16, 1966) is ..." -> "scott derrickson"); ``""`` when neither gives one."""
    named = bare_title(title)
    if named:
        return named
    words: list[str] = []
    for word in _LEAD_WORD.findall(text.lstrip()[:200]):
        if word[:1].isupper() or (words and word.lower() in _CONNECTORS):
            words.append(word)
            if len(words) == 6:
                break
        else:
            break
    while words and words[-1].lower() in _CONNECTORS:
        words.pop()
    return normalize_answer(" ".join(words))


def _names(text: str) -> set[str]:
    return {w.lower() for w in _NAME.findall(text)} - STOPWORDS


@dataclass
class BridgeContext:
    """One question's documents, tokenised once: what every feature is computed from."""

    n_docs: int
    first_hop: np.ndarray  # (n_docs, n_first_hop)
    tokens: list[list[str]]
    question_tokens: list[str]
    question_words: set[str]
    words: list[set[str]]
    names: list[set[str]]
    leads: list[str]
    padded: list[str]  # " normalised text " of each document, for whole-token mention tests
    bm25: Any
    idf: dict[str, float]


class BridgeFeatures:
    """Turns (example, sentences) into first-hop rows, and a kept document into second-hop rows.

    ``scorers``: label -> sentence scorer spec (``{"name": ..., **params}``); each gives the
    first-hop features of its best sentence per document.
    """

    def __init__(self, scorers: Mapping[str, Mapping[str, Any]]) -> None:
        self.scorer_specs = {k: dict(v) for k, v in scorers.items()}
        self.scorers = {k: build_plugin("scorer", v, f"bridge-documents scorer '{k}'") for k, v in self.scorer_specs.items()}

    @property
    def names(self) -> list[str]:
        out: list[str] = []
        for k in self.scorer_specs:
            out += [f"{k}_best", f"{k}_best_gap", f"{k}_best_rank"]
        return out + list(FIRST_HOP_DOCUMENT_FEATURES) + list(SECOND_HOP_FEATURES)

    @property
    def monotone(self) -> tuple[int, ...]:
        """Per feature, the direction the ranker's probability may move as it grows: every
        similarity to the question or to a kept document only up (1); ``has_kept`` free (0)."""
        return tuple(0 if name == "has_kept" else 1 for name in self.names)

    @property
    def n_first_hop(self) -> int:
        return 3 * len(self.scorer_specs) + len(FIRST_HOP_DOCUMENT_FEATURES)

    def warm_up(self) -> None:
        for scorer in self.scorers.values():
            scorer.warm_up()

    def context(self, example: Example, sentences: Sequence[Sentence]) -> BridgeContext:
        from rank_bm25 import BM25Okapi

        docs = example.documents
        n = len(docs)
        texts = [f"{d.title} {d.text}".strip() for d in docs]
        tokens = [tokenize(t) for t in texts]
        bm25 = BM25Okapi([t or [""] for t in tokens])
        question_tokens = tokenize(example.question)
        question_words = content_words(example.question)
        words = [content_words(t) for t in texts]
        leads = [leading_entity(d.title, d.text) for d in docs]
        padded = [f" {normalize_answer(t)} " for t in texts]
        columns: list[np.ndarray] = []
        doc_of = np.array([s.doc_index for s in sentences], dtype=np.int64)
        for scorer in self.scorers.values():
            x = np.asarray(scorer.score(example, sentences), dtype=np.float64) if sentences else np.zeros(0)
            best = np.full(n, -np.inf)
            if len(x):
                np.maximum.at(best, doc_of, x)
            best = np.where(np.isfinite(best), best, x.min() if len(x) else 0.0)  # a document without sentences: last
            columns += [best, best - best.max(), reciprocal_rank(best)]
        d = np.asarray(bm25.get_scores(question_tokens), dtype=np.float64)
        question_padded = f" {normalize_answer(example.question)} "
        columns += [d, d - d.max(), reciprocal_rank(d),
                    np.array([len(w & question_words) / max(1, len(question_words)) for w in words]),
                    np.array([float(bool(lead) and f" {lead} " in question_padded) for lead in leads])]
        first_hop = np.stack(columns, axis=1) if n else np.zeros((0, self.n_first_hop))
        return BridgeContext(n, first_hop, tokens, question_tokens, question_words, words,
                             [_names(t) for t in texts], leads, padded, bm25, dict(bm25.idf))

    @staticmethod
    def second_hop(ctx: BridgeContext, kept: int) -> np.ndarray:
        """Second-hop features of every document given the kept document ``kept`` (its own row:
        zeros, it is no candidate), shape ``(n_docs, len(SECOND_HOP_FEATURES))``."""
        n = ctx.n_docs
        others = np.array([j != kept for j in range(n)])
        query = np.asarray(ctx.bm25.get_scores(ctx.question_tokens + ctx.tokens[kept]), dtype=np.float64)
        question = set(ctx.question_tokens)
        bridge_tokens = [t for t in ctx.tokens[kept] if t not in question]
        bridge = np.asarray(ctx.bm25.get_scores(bridge_tokens), dtype=np.float64) if bridge_tokens else np.zeros(n)
        beyond = ctx.words[kept] - ctx.question_words
        kept_names = ctx.names[kept] - ctx.question_words
        lead = ctx.leads[kept]

        def among_others(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            gap, rank = np.zeros(n), np.zeros(n)
            if others.any():
                v = values[others]
                gap[others], rank[others] = v - v.max(), reciprocal_rank(v)
            return gap, rank

        query_gap, query_rank = among_others(query)
        bridge_gap, bridge_rank = among_others(bridge)
        out = np.zeros((n, len(SECOND_HOP_FEATURES)))
        for j in np.flatnonzero(others):
            out[j] = (
                1.0, query_gap[j], query_rank[j], bridge[j], bridge_gap[j], bridge_rank[j],
                sum(ctx.idf.get(w, 0.0) for w in ctx.words[j] & beyond),
                len(ctx.names[j] & kept_names),
                float(bool(ctx.leads[j]) and f" {ctx.leads[j]} " in ctx.padded[kept]),
                float(bool(lead) and f" {lead} " in ctx.padded[j]),
            )
        return out

    @staticmethod
    def rows(ctx: BridgeContext, candidates: Sequence[int], second: np.ndarray | None) -> np.ndarray:
        """Feature rows of ``candidates``: first-hop features and ``second`` (the element-wise
        maximum of :meth:`second_hop` over the kept documents; None: nothing kept yet)."""
        idx = np.asarray(candidates, dtype=np.int64)
        hop = np.zeros((len(idx), len(SECOND_HOP_FEATURES))) if second is None else second[idx]
        return np.concatenate([ctx.first_hop[idx], hop], axis=1)
