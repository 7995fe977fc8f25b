"""SQuAD answer normalisation and token-level comparison (the official SQuAD v1.1/v2.0 rules)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["normalize_answer", "answer_tokens", "exact_match", "token_f1", "best_over_gold", "contains_answer",
           "STOPWORDS", "content_words", "bare_title"]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_WORD = re.compile(r"\w+")
#: function words that say nothing about a sentence's content (the fusion features and the
#: paragraph-sentences labeler compare content words)
STOPWORDS = frozenset((
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but",
    "is", "was", "were", "are", "be", "been", "being", "as", "that", "this", "these", "those", "it",
    "its", "his", "her", "their", "he", "she", "they", "them", "what", "which", "who", "whom", "whose",
    "when", "where", "why", "how", "did", "does", "do", "done", "has", "have", "had", "not", "no",
    "than", "then", "there", "also", "into", "about", "after", "before"
))


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Token-overlap F1 of the normalised strings. When either side normalises to nothing, the
    score is 1.0 only if both do (SQuAD v2.0 rule)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over_gold(fn: Callable[[str, str], float], prediction: str, golds: Iterable[str]) -> float:
    """The maximum of ``fn(prediction, gold)`` over the gold answers (0.0 when there are none)."""
    return max((fn(prediction, g) for g in golds), default=0.0)


def contains_answer(text: str, gold: str) -> bool:
    """Whether the normalised ``gold`` occurs in the normalised ``text`` as whole tokens
    ("1" is not found in "1990"). A gold answer that normalises to nothing is never found."""
    needle = normalize_answer(gold)
    if not needle:
        return False
    return f" {needle} " in f" {normalize_answer(text)} "


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` (``\\w+``) that are not :data:`STOPWORDS`."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def bare_title(title: str) -> str:
    """A document title normalised as an answer, without a trailing parenthesis ("Mercury (planet)")."""
    return normalize_answer(re.sub(r"\s*\([^)]*\)\s*$", "", title))
