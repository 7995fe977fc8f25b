"""Score once: a wrapper that caches any scorer's per-sentence scores on disk.

``CachingScorer(scorer, store, splitter=...)`` answers ``score(example, sentences)`` from a
:class:`~ragsift.disk_cache.JsonStore` when it has seen the same call before, and asks the wrapped
scorer otherwise. The key is the SHA-256 of everything that determines the scores:

- the scorer's registered name and its full config (every param, defaults filled in);
- the identity of every model the config names (``model``, ``adapter``, ``head``, ``*_model`` keys): the
  model string, its resolved location and revision, and the SHA-256 of its weight files (GGUF or
  ``*.safetensors``), as the run manifest records them (:func:`ragsift.models.describe_model`),
  and of a ``readout`` file or a learned-fusion ``fusion.json`` (:func:`ragsift.disk_cache.model_identity`);
- the splitter's name and config, and the sentences themselves (document, index, offsets);
- the example: id, question, answers, gold evidence, metadata, and every document's title,
  text and dataset sentence spans.

Changing any of these gives another key, so a cached score is never reused for another input.

Timing: a hit takes microseconds, but the stage it stands for took ``seconds`` when it was
computed. :attr:`CachingScorer.last_call` tells the caller whether the last call was a hit and
how long the scoring took when it was measured, so a pipeline can report the measured cost
(``timings["score"]``) rather than the lookup. The model is loaded only on the first miss, and
before the timer starts.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsift.disk_cache import CacheWrapper, JsonStore, digest
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["CachingScorer", "ScoreCall", "score_key_parts"]

#: bump when the key or the entry layout changes (old entries are then never read)
FORMAT = 1


@dataclass(frozen=True)
class ScoreCall:
    """What the last ``score`` call did: ``cached`` (a hit), ``seconds`` (the measured time of the
    scoring, then or now) and ``lookup_seconds`` (the time the cache itself took)."""

    cached: bool
    seconds: float
    lookup_seconds: float


def _example_parts(example: Example) -> dict[str, Any]:
    return {
        "id": example.id,
        "question": example.question,
        "answers": list(example.answers),
        "evidence": None if example.evidence is None else [[e.doc_index, e.start, e.end] for e in example.evidence],
        "metadata": dict(example.metadata),
        "documents": [
            {"title": d.title, "text": d.text, "id": d.id, "score": d.score,
             "spans": None if d.sentence_spans is None else [list(s) for s in d.sentence_spans]}
            for d in example.documents
        ],
    }


def score_key_parts(scorer: dict[str, Any], splitter: dict[str, Any] | None, example: Example,
                    sentences: Sequence[Sentence]) -> dict[str, Any]:
    """Everything the key of one scoring call is the hash of (see the module docstring)."""
    return {
        "format": FORMAT,
        "scorer": scorer,
        "splitter": splitter,
        "sentences": [[s.doc_index, s.index, s.start, s.end] for s in sentences],
        "example": _example_parts(example),
    }


def _stored_scores(entry: Mapping[str, Any] | None, n: int) -> np.ndarray | None:
    """The entry's scores when they are ``n`` numbers (anything else counts as a miss)."""
    if entry is None:
        return None
    try:
        scores = np.asarray(entry.get("scores"), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return scores if scores.shape == (n,) else None


class CachingScorer(CacheWrapper, Scorer):
    """Any scorer, with its scores cached in ``store``; behaves as the scorer it wraps (same name,
    params and config), so manifests and configs do not change.

    ``splitter`` is the ``{"name": ..., **config}`` of the splitter whose sentences are scored."""

    def __init__(self, scorer: Scorer, store: JsonStore, splitter: Mapping[str, Any] | None = None) -> None:
        self._wrap(scorer, store)
        self.splitter = None if splitter is None else dict(splitter)
        self.last_call: ScoreCall | None = None
        self._warm = False

    def score_range(self) -> tuple[float, float] | None:
        return self.inner.score_range()

    def warm_up(self) -> None:
        """Nothing: the wrapped scorer loads its model on the first miss (before it is timed)."""

    def key(self, example: Example, sentences: Sequence[Sentence]) -> str:
        return digest(score_key_parts(self.identity(), self.splitter, example, sentences))

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        t = time.perf_counter()
        key = self.key(example, sentences)
        entry = self.store.get(key)
        scores = _stored_scores(entry, len(sentences))
        if entry is not None and scores is not None:
            lookup = time.perf_counter() - t
            self.stats["hits"] += 1
            self.last_call = ScoreCall(True, float(entry.get("seconds", 0.0)), lookup)
            return scores
        lookup = time.perf_counter() - t
        if not self._warm:
            self.inner.warm_up()
            self._warm = True
        t = time.perf_counter()
        scores = np.asarray(self.inner.score(example, sentences), dtype=np.float64)
        seconds = time.perf_counter() - t
        self.stats["misses"] += 1
        # a NaN is refused by the compressor (PipelineCompressor._check_finite); storing it would
        # make a passing failure (a server's broken answer) refuse every rerun too
        if self._store_new and scores.shape == (len(sentences),) and not np.isnan(scores).any():
            t = time.perf_counter()
            # JSON as Python writes it keeps NaN and infinities; floats round-trip exactly
            self.store.put(key, {"scores": [float(s) for s in scores], "seconds": seconds, "scorer": self.identity()["name"]})
            lookup += time.perf_counter() - t
        self.last_call = ScoreCall(False, seconds, lookup)
        return scores
