"""The score cache: a hit returns the stored scores and the stored scoring time; the key changes
when the scorer's params, its model file, the splitter or the text change."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragsift.disk_cache import JsonStore
from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.scorers.caching import CachingScorer
from ragsift.splitters.regex import RegexSplitter
from ragsift.types import Document, Example, Sentence


class _Params(Params):
    model: str
    weight: float = 1.0
    readout: str | None = None


class CountingScorer(Scorer):
    """Scores by sentence length times ``weight``; counts the sentences it scores."""

    Params = _Params

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.scored = 0
        self.warmed = 0

    def warm_up(self) -> None:
        self.warmed += 1

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        self.scored += len(sentences)
        return np.array([len(s.text) * self.params.weight for s in sentences], dtype=np.float64)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1")
    return folder


def _example(question: str = "Where is Paris?", text: str = "Paris is in France. It is big. Lyon too.") -> Example:
    return Example("q1", question, ("France",), (Document("Paris", text),))


def _sentences(example: Example, **splitter: object) -> list[Sentence]:
    return RegexSplitter(**splitter).split_all(example.documents)


def _scorer(store: JsonStore, model: Path, splitter: dict | None = None, **params: object) -> CachingScorer:  # type: ignore[type-arg]
    inner = CountingScorer(model=str(model), **params)
    inner.registered_name = "counting"
    return CachingScorer(inner, store, splitter={"name": "regex"} if splitter is None else splitter)


def test_a_hit_returns_the_stored_scores_and_time_and_skips_the_model(tmp_path: Path, model: Path) -> None:
    ex = _example()
    sentences = _sentences(ex)
    first = _scorer(JsonStore(tmp_path / "c"), model)
    scores = first.score(ex, sentences)
    assert first.inner.scored == 3 and first.inner.warmed == 1  # type: ignore[attr-defined]
    assert first.last_call is not None and not first.last_call.cached
    # a new process (new store, new scorer) finds the scores on disk
    second = _scorer(JsonStore(tmp_path / "c"), model)
    again = second.score(ex, sentences)
    assert second.inner.scored == 0 and second.inner.warmed == 0  # type: ignore[attr-defined]  # model never loaded
    np.testing.assert_array_equal(again, scores)
    assert second.last_call is not None and second.last_call.cached
    assert second.last_call.seconds == first.last_call.seconds
    assert second.config() == first.inner.config() and second.registered_name == "counting"


def test_read_only_uses_hits_but_stores_nothing(tmp_path: Path, model: Path) -> None:
    ex = _example()
    scorer = _scorer(JsonStore(tmp_path / "c"), model)
    with scorer.read_only():
        scorer.score(ex, _sentences(ex))
    assert len(JsonStore(tmp_path / "c")) == 0
    scorer.score(ex, _sentences(ex))
    assert len(JsonStore(tmp_path / "c")) == 1


def test_key_changes_with_every_part_it_is_made_of(tmp_path: Path, model: Path) -> None:
    store = JsonStore(None)
    ex = _example()
    base = _scorer(store, model).key(ex, _sentences(ex))
    assert _scorer(store, model).key(ex, _sentences(ex)) == base  # stable across instances
    changed = {
        "scorer params": _scorer(store, model, weight=2.0).key(ex, _sentences(ex)),
        "splitter": _scorer(store, model, splitter={"name": "regex", "min_chars": 5}).key(ex, _sentences(ex)),
        "sentences": _scorer(store, model).key(ex, _sentences(ex)[:2]),
        "question": _scorer(store, model).key(_example(question="Where is Lyon?"), _sentences(ex)),
        "document text": _scorer(store, model).key(_example(text="Paris is in France. It is big. Nice too."),
                                                    _sentences(ex)),
    }
    other = model.parent / "other-model"
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"weights v1")
    changed["model location"] = _scorer(store, other).key(ex, _sentences(ex))
    (model / "model.safetensors").write_bytes(b"weights v2, retrained")
    os.utime(model / "model.safetensors", ns=(1, 1))
    changed["model file"] = _scorer(store, model).key(ex, _sentences(ex))
    assert all(key != base for key in changed.values()), [k for k, v in changed.items() if v == base]
    assert len(set(changed.values())) == len(changed)


def test_key_changes_when_a_readout_file_is_retrained_in_place(tmp_path: Path, model: Path) -> None:
    store = JsonStore(None)
    ex = _example()
    readout = tmp_path / "readout.safetensors"
    readout.write_bytes(b"readout v1")
    first = _scorer(store, model, readout=str(readout)).key(ex, _sentences(ex))
    assert _scorer(store, model, readout=str(readout)).key(ex, _sentences(ex)) == first
    assert _scorer(store, model).key(ex, _sentences(ex)) != first
    readout.write_bytes(b"readout v2, retrained")  # same path, new content
    os.utime(readout, ns=(2, 2))
    assert _scorer(store, model, readout=str(readout)).key(ex, _sentences(ex)) != first


def test_a_changed_input_is_scored_again(tmp_path: Path, model: Path) -> None:
    ex = _example()
    scorer = _scorer(JsonStore(tmp_path / "c"), model)
    scorer.score(ex, _sentences(ex))
    edited = _example(text="Paris is in France. It is very big. Lyon too.")
    scores = scorer.score(edited, _sentences(edited))
    assert scorer.inner.scored == 6  # type: ignore[attr-defined]
    assert scores[1] == len("It is very big.")


def test_the_wrapper_keeps_the_scorers_range(model: Path) -> None:
    class Probability(CountingScorer):
        def score_range(self) -> tuple[float, float] | None:
            return (0.0, 1.0)

    assert CachingScorer(Probability(model=str(model)), JsonStore(None)).score_range() == (0.0, 1.0)


def test_an_altered_cache_entry_is_a_miss_and_is_computed_again(tmp_path: Path, model: Path, caplog) -> None:
    """Issue 24, case 12: a well-formed entry whose scores were edited (its checksum kept) is not
    used; the scores are computed again and the entry rewritten."""
    import json

    from ragsift.disk_cache import MARKER

    inner = CountingScorer(model=str(model))
    example = _example()
    sentences = _sentences(example)
    right = CachingScorer(inner, JsonStore(tmp_path / "cache"), splitter={"name": "regex"}).score(example, sentences)
    (entry,) = (tmp_path / "cache").glob("??/*.json")
    stored = json.loads(entry.read_text())
    assert "checksum" in stored
    entry.write_text(json.dumps({**stored, "scores": [99.0] * len(stored["scores"])}))
    again = CachingScorer(inner, JsonStore(tmp_path / "cache"), splitter={"name": "regex"})
    scored = inner.scored
    assert np.array_equal(again.score(example, sentences), right)
    assert inner.scored == scored + len(sentences)  # recomputed, not read
    assert str(entry) in caplog.text and "checksum" in caplog.text
    assert json.loads(entry.read_text())["scores"] == list(right)  # rewritten
    # an entry written before checksums existed, in a folder from then (no marker), is read as before
    # (the shared cache stays usable); in a folder this version started it would be a miss (issue 53)
    (tmp_path / "cache" / MARKER).unlink()
    entry.write_text(json.dumps({k: v for k, v in stored.items() if k != "checksum"}))
    third = CachingScorer(inner, JsonStore(tmp_path / "cache"), splitter={"name": "regex"})
    scored = inner.scored
    assert np.array_equal(third.score(example, sentences), right) and inner.scored == scored
