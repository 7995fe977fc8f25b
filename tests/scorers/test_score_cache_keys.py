"""The score cache's key, as a property: a change to any input that determines a score (the
scorer's name and params, its model files, the splitter's name and params, the question, the
example's documents and gold data, the sentence offsets) gives another key, so the cache scores
again; a change to anything else (selector, assembler, the compressor's name, how the params are
written, the store instance) gives the same key, so the scores are reused.

The cache is shared across runs and checkouts (``[evaluation] cache = "shared"``): a key that
misses one of these inputs puts another input's scores into a table without any error.

Everything here goes through a real pipeline (``build_plugin("compressor", ...)`` then
``ragsift.evaluation.run.caches.cache_scores``), so the splitter identity is the one the pipeline hands the cache."""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.disk_cache import JsonStore
from ragsift.evaluation.run.caches import cache_scores
from ragsift.plugin import Params
from ragsift.registry import build_plugin, get_registry, register, reset_registry
from ragsift.scorers.base import Scorer
from ragsift.scorers.caching import CachingScorer
from ragsift.splitters.regex import RegexSplitter
from ragsift.types import Document, EvidenceSpan, Example, Sentence

TEXT = "Paris is in France. It is big. Lyon too."
SAME_LENGTH_TEXT = "Paris is in France. It is old. Lyon too."  # other words, the same sentence offsets
SINGLE_SPACE_GAPS = r"(?<=[.!?]) +"  # another pattern that splits TEXT exactly as the default does


class _ModelParams(Params):
    model: str
    weight: float = 1.0


class ModelLengthScorer(Scorer):
    """Sentence length x ``weight`` plus the question's length; names a model folder (whose
    weight files the key hashes) without loading it."""

    Params = _ModelParams

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        return np.array([len(s.text) * self.params.weight + len(example.question) for s in sentences])


class ModelLengthCopy(ModelLengthScorer):
    """The same scorer under another name."""


class RegexCopy(RegexSplitter):
    """The same splitter under another name."""


@pytest.fixture(autouse=True)
def plugins() -> Any:
    reset_registry()
    register("model-length", ModelLengthScorer)
    register("model-length-copy", ModelLengthCopy)
    register("regex-copy", RegexCopy)
    yield
    reset_registry()


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1")
    return folder


@dataclasses.dataclass(frozen=True)
class Inputs:
    """One scoring call: the compressor spec, the example and (optionally) the sentences as given
    (None: the compressor's splitter splits the example)."""

    compressor: dict[str, Any]
    example: Example
    sentences: tuple[Sentence, ...] | None = None


def _example(**changes: Any) -> Example:
    fields: dict[str, Any] = {
        "id": "q1", "question": "Where is Paris?", "answers": ("France",),
        "documents": (Document("Paris", TEXT, id="d1", score=2.0), Document("Lyon", "Lyon is a city. It is in France.")),
        "evidence": (EvidenceSpan(0, 0, 19),), "metadata": {"type": "bridge"},
    }
    return Example(**{**fields, **changes})


def _base(model: Path) -> Inputs:
    return Inputs({"name": "pipeline", "splitter": {"name": "regex"}, "scorer": {"name": "model-length", "model": str(model)},
                   "selector": {"name": "all"}, "assembler": {"name": "original-order"}}, _example())


def _with(inputs: Inputs, stage: str, spec: Any) -> Inputs:
    return dataclasses.replace(inputs, compressor={**inputs.compressor, stage: spec})


def _doc(inputs: Inputs, index: int, **changes: Any) -> Inputs:
    docs = list(inputs.example.documents)
    docs[index] = dataclasses.replace(docs[index], **changes)
    return dataclasses.replace(inputs, example=dataclasses.replace(inputs.example, documents=tuple(docs)))


def _ex(inputs: Inputs, **changes: Any) -> Inputs:
    return dataclasses.replace(inputs, example=dataclasses.replace(inputs.example, **changes))


def _resplit(inputs: Inputs) -> Inputs:
    """The same document cut at other places into as many sentences (offsets differ, count not)."""
    got = _call(inputs, JsonStore(None))[2]
    first = [s for s in got if s.doc_index == 0]
    cut = TEXT.index(" in France")
    moved = [Sentence(0, 0, 0, cut, TEXT[:cut]), Sentence(0, 1, cut + 1, first[1].end, TEXT[cut + 1 : first[1].end]),
             first[2]]
    return dataclasses.replace(inputs, sentences=(*moved, *(s for s in got if s.doc_index != 0)))


def _retrain(model: Path) -> None:
    """New weights in place: the same folder, the same file name, other bytes."""
    (model / "model.safetensors").write_bytes(b"weights v2, retrained")
    os.utime(model / "model.safetensors", ns=(2, 2))


Change = Callable[[Inputs, Path], Inputs]
#: (what changes, does it determine the scores, the change)
CHANGES: list[tuple[str, bool, Change]] = [
    # inputs that determine the scores: the key must change
    ("scorer param", True, lambda i, m: _with(i, "scorer", {"name": "model-length", "model": str(m), "weight": 2.0})),
    ("scorer name", True, lambda i, m: _with(i, "scorer", {"name": "model-length-copy", "model": str(m)})),
    ("model file retrained in place", True, lambda i, m: (_retrain(m), i)[1]),
    ("splitter name (same sentences)", True, lambda i, m: _with(i, "splitter", {"name": "regex-copy"})),
    ("splitter params (same sentences)", True, lambda i, m: _with(i, "splitter", {"name": "regex", "pattern": SINGLE_SPACE_GAPS})),
    ("sentence offsets (as many sentences)", True, lambda i, m: _resplit(i)),
    ("question", True, lambda i, m: _ex(i, question="Where is Lyon?")),
    ("document text (same offsets)", True, lambda i, m: _doc(i, 0, text=SAME_LENGTH_TEXT)),
    ("document title", True, lambda i, m: _doc(i, 0, title="Paris, France")),
    ("document id", True, lambda i, m: _doc(i, 0, id="d9")),
    ("document retrieval score", True, lambda i, m: _doc(i, 0, score=1.0)),
    ("document order", True, lambda i, m: _ex(i, documents=tuple(reversed(i.example.documents)))),
    ("dataset sentence spans", True, lambda i, m: _doc(i, 0, sentence_spans=((0, 19), (20, 40)))),
    ("example id", True, lambda i, m: _ex(i, id="q2")),
    ("answers", True, lambda i, m: _ex(i, answers=("Lyon",))),
    ("gold evidence", True, lambda i, m: _ex(i, evidence=(EvidenceSpan(0, 20, 30),))),
    ("example metadata", True, lambda i, m: _ex(i, metadata={"type": "comparison"})),
    # nothing that determines the scores: the key must stay
    ("nothing (a new store instance, as a new process has)", False, lambda i, m: i),
    ("selector", False, lambda i, m: _with(i, "selector", {"name": "top-k", "k": 1})),
    ("assembler", False, lambda i, m: _with(i, "assembler", {"name": "rank-order"})),
    ("compressor name (same stages)", False, lambda i, m: dataclasses.replace(i, compressor={**i.compressor, "name": "bm25"})),
    ("scorer params in another order, defaults written out", False,
     lambda i, m: _with(i, "scorer", {"weight": 1.0, "model": str(m), "name": "model-length"})),
    ("splitter default pattern written out", False,
     lambda i, m: _with(i, "splitter", {"name": "regex", "pattern": RegexSplitter.Params().pattern})),
]


def _call(inputs: Inputs, store: JsonStore) -> tuple[Any, CachingScorer, list[Sentence]]:
    compressor = build_plugin("compressor", inputs.compressor, "test")
    scorer = cache_scores(compressor, store)
    sentences = list(inputs.sentences) if inputs.sentences is not None else compressor.splitter.split_all(inputs.example.documents)
    return compressor, scorer, sentences


def _key(inputs: Inputs) -> str:
    _, scorer, sentences = _call(inputs, JsonStore(None))
    return scorer.key(inputs.example, sentences)


@pytest.mark.parametrize(("what", "determines", "change"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_cache_scores_again_exactly_when_an_input_of_the_scores_changes(
        tmp_path: Path, model: Path, what: str, determines: bool, change: Change) -> None:
    """Planted versions that this catches: the pipeline hands the cache the splitter's name
    without its params (``{"name": self.splitter.registered_name}``: "splitter params" hits); the
    key holds the number of sentences instead of their offsets (``"sentences": len(sentences)``:
    "sentence offsets" hits); and any other input dropped from the key, or anything else added."""
    base = _base(model)
    _, first, sentences = _call(base, JsonStore(tmp_path / "scores"))
    first.score(base.example, sentences)
    assert first.last_call is not None and not first.last_call.cached

    changed = change(base, model)
    _, scorer, sentences = _call(changed, JsonStore(tmp_path / "scores"))  # a new process: a new store instance
    if what.endswith("(same sentences)") or what.endswith("(same offsets)"):  # only the named input differs
        assert [(s.doc_index, s.index, s.start, s.end) for s in sentences] == \
               [(s.doc_index, s.index, s.start, s.end) for s in _call(base, JsonStore(None))[2]]
    scores = scorer.score(changed.example, sentences)
    assert scorer.last_call is not None
    assert scorer.last_call.cached is (not determines), f"{what}: {'reused' if determines else 'scored again'}"
    np.testing.assert_array_equal(scores, scorer.inner.score(changed.example, sentences))  # a hit is the right one


def test_every_input_of_the_scores_gives_its_own_key(model: Path) -> None:
    base = _base(model)
    keys = {"base": _key(base)}
    # the in-place retraining last: it changes the model folder the other keys read
    ordered = sorted((c for c in CHANGES if c[1]), key=lambda c: c[0] == "model file retrained in place")
    for what, _, change in ordered:
        keys[what] = _key(change(base, model))
    assert len(set(keys.values())) == len(keys), [k for k, v in keys.items() if list(keys.values()).count(v) > 1]


# Each param of each model-free built-in scorer and splitter (and the test scorer above), read
# from its Params class, so that a param added later is covered too: changing it changes the key.
PARAM_PLUGINS = [("scorer", "bm25"), ("scorer", "random"), ("scorer", "oracle"), ("scorer", "model-length"),
                 ("splitter", "regex"), ("splitter", "presplit"), ("splitter", "nltk-punkt"), ("splitter", "spacy")]
#: other values for params whose type gives no obvious one (strings, plugin specs)
OTHER_VALUES: dict[tuple[str, str], Any] = {
    ("regex", "pattern"): r"\n+",
    ("presplit", "fallback"): "regex",
    ("nltk-punkt", "language"): "german",
    ("spacy", "model"): "en_core_web_md",
}


def _other_value(plugin: str, name: str, field: Any, current: Any, others: dict[tuple[str, str], Any]) -> Any:
    if (plugin, name) in others:
        return others[(plugin, name)]
    annotation = field.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return next(v for v in typing.get_args(annotation) if v != current)
    if isinstance(current, bool):
        return not current
    if isinstance(current, int):
        return current + 1
    if isinstance(current, float):
        return current / 2 if current else 0.5
    pytest.fail(f"{plugin}.{name} = {current!r}: add another value for it to OTHER_VALUES")


@pytest.mark.parametrize(("stage", "plugin"), PARAM_PLUGINS, ids=[p for _, p in PARAM_PLUGINS])
def test_every_param_of_the_scorer_and_the_splitter_is_in_the_key(stage: str, plugin: str, model: Path, tmp_path: Path) -> None:
    base = _base(model)
    spec = {"name": plugin, **({"model": str(model)} if plugin == "model-length" else {})}
    base = _with(base, stage, spec)
    sentences = tuple(_call(_base(model), JsonStore(None))[2])  # the same sentences throughout: only the identity varies
    base = dataclasses.replace(base, sentences=sentences)
    before = _key(base)
    cls = get_registry().all()[stage]
    params_cls = next(info.cls for info in cls if info.name == plugin).Params
    current = params_cls(**{k: v for k, v in spec.items() if k != "name"}).model_dump()
    assert current, f"{plugin} has no params to check"
    other_model = tmp_path / "other-model"  # the same weights in another folder
    other_model.mkdir()
    (other_model / "model.safetensors").write_bytes(b"weights v1")
    others = {**OTHER_VALUES, ("model-length", "model"): str(other_model)}
    for name, field in params_cls.model_fields.items():
        value = _other_value(plugin, name, field, current[name], others)
        assert _key(_with(base, stage, {**spec, name: value})) != before, f"{stage} {plugin}: {name} = {value!r}"


@pytest.mark.parametrize("form", ["folder", "file"])
@pytest.mark.parametrize(("scorer", "shipped_folder", "file"), [("learned-fusion", "fusion-trained", "fusion.json"),
                                                                 ("bridge-documents", "bridge-documents", "bridge-documents.json")])
def test_a_learned_fusion_model_retrained_in_place_is_another_key(tmp_path: Path, form: str, scorer: str,
                                                                  shipped_folder: str, file: str) -> None:
    """A real gap this found: the learned-fusion model is ragsift's own ``fusion.json`` (no
    safetensors), so its content was in no key, and a model retrained into the same folder reused
    the old model's cached scores. Its model string may name the folder or the file. The same for
    the bridge-documents ranker's ``bridge-documents.json``."""
    folder = tmp_path / "fusion"
    folder.mkdir()
    shipped = Path(__file__).parents[2] / "models" / shipped_folder / file
    (folder / file).write_text(shipped.read_text())
    model = str(folder if form == "folder" else folder / file)
    inputs = dataclasses.replace(_with(_base(tmp_path), "scorer", {"name": scorer, "model": model}),
                                 sentences=tuple(_call(_base(tmp_path), JsonStore(None))[2]))
    before = _key(inputs)
    assert _key(inputs) == before
    data = json.loads((folder / file).read_text())
    refitted = json.loads(json.dumps(data["model"]).replace("0.", "0.1", 1))  # the same recipe, other tree values
    assert refitted != data["model"]
    (folder / file).write_text(json.dumps({**data, "model": refitted}))
    os.utime(folder / file, ns=(3, 3))
    assert _key(inputs) != before
