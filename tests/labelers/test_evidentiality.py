"""ECoRAG's evidentiality rules with a scripted fake reader (no model)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from ragsift.errors import ConfigError
from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry
from ragsift.types import Document, EvidenceSpan, Example, sentence_spans_from_list

CALLS: list[tuple[str, str]] = []


class ScriptedReader(Reader):
    """Answers 'Paris' when the context holds 'capital' and no 'Lyon'; 'Lyon' when it holds 'Lyon';
    else 'unknown'. Questions mentioning 'famous' are answered 'Paris' closed-book."""

    fail_after: int | None = None

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        out = []
        for q, c in zip(questions, contexts, strict=True):
            if ScriptedReader.fail_after is not None and len(CALLS) >= ScriptedReader.fail_after:
                raise RuntimeError("reader died")
            CALLS.append((q, c))
            if "Lyon" in c:
                text = "Lyon"
            elif "capital" in c or "famous" in q:
                text = "Paris"
            else:
                text = "unknown"
            out.append(ReaderAnswer(text, prompt_tokens=len(c.split()), completion_tokens=1, seconds=0.0))
        return out


class ModelScriptedReader(ScriptedReader):
    """The scripted reader with a ``model`` param (a local file)."""

    class Params(ScriptedReader.Params):
        model: str


class _Plugin:
    @hookimpl
    def register_readers(self, register):
        register("scripted", ScriptedReader)
        register("scripted-model", ModelScriptedReader)


@pytest.fixture(autouse=True)
def scripted_reader():
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-scripted-reader")
    CALLS.clear()
    ScriptedReader.fail_after = None
    yield
    reset_registry()


def _example(qid: str = "q1", question: str = "Where is the Louvre?") -> Example:
    sentences = ["The Louvre is a museum.", " It is in the capital of France.", " Lyon has museums too.", " Tea is nice."]
    text, spans = sentence_spans_from_list(sentences)
    doc = Document("Louvre", text, "Louvre", sentence_spans=spans)
    return Example(qid, question, ("Paris",), (doc,), evidence=(EvidenceSpan(0, *spans[1]),))


def _labeler(tmp_path=None, **params):
    cache = None if tmp_path is None else str(tmp_path / "cache.jsonl")
    return get_registry().create("labeler", "evidentiality", {"reader": {"name": "scripted"}, "cache": cache, **params})



def test_strong_weak_distractor():
    labeler = _labeler()
    records = {r.sentence: r for r in labeler.label([_example()])}
    assert records["It is in the capital of France."].kind == "strong" and records["It is in the capital of France."].label
    assert records["The Louvre is a museum."].kind == "weak"   # with the strong sentence: still Paris
    assert records["Tea is nice."].kind == "weak"
    assert records["Lyon has museums too."].kind == "distractor"  # breaks the answer
    assert not records["Lyon has museums too."].label
    report = labeler.report()
    # 1 closed-book + 4 single sentences + 3 with the strong sentence
    assert report["reader_calls"] == 8 and report["strong"] == 1 and report["weak"] == 2 and report["distractor"] == 1
    assert report["prompt_tokens"] > 0 and report["labelled_questions"] == 1


def test_closed_book_and_no_strong_questions_give_no_records():
    famous = _example("q2", "Which famous city has the Louvre?")
    text, spans = sentence_spans_from_list(["Tea is nice."])
    nothing = Example("q3", "Where?", ("Paris",), (Document("T", text, "T", sentence_spans=spans),), evidence=())
    labeler = _labeler()
    assert list(labeler.label([famous, nothing])) == []
    report = labeler.report()
    assert report["closed_book_correct"] == 1 and report["no_strong_evidence"] == 1 and report["questions"] == 2


def test_cache_resumes_an_interrupted_run(tmp_path):
    examples = [_example("a"), _example("b", "Where is the Louvre museum?")]
    ScriptedReader.fail_after = 10
    with pytest.raises(RuntimeError, match="reader died"):
        list(_labeler(tmp_path, batch_size=2).label(examples))
    cached = (tmp_path / "cache.jsonl").read_text().splitlines()
    assert len(cached) == 1 + 9  # the store's header, then whole batches only: the 10th answer died with its batch
    (tmp_path / "cache.jsonl").write_text("\n".join(cached) + '\n{"key": "trunc')  # a write cut short
    ScriptedReader.fail_after = None
    CALLS.clear()
    labeler = _labeler(tmp_path, batch_size=2)
    resumed = [r.to_record() for r in labeler.label(examples)]
    assert len(CALLS) == 16 - 9 and labeler.report()["cache_hits"] == 9
    CALLS.clear()
    fresh = [r.to_record() for r in _labeler(batch_size=2).label(examples)]
    assert resumed == fresh and len(CALLS) == 16
    CALLS.clear()
    again = _labeler(tmp_path)
    assert [r.to_record() for r in again.label(examples)] == fresh and CALLS == []
    assert again.report()["reader_calls"] == 0


def test_a_model_retrained_under_the_same_path_is_asked_again(tmp_path):
    """The labeler's cache is the evaluation's reader cache, keyed with the model files' hashes
    (before, its key was the reader's name and config only)."""
    model = tmp_path / "reader.gguf"
    model.write_bytes(b"GGUF weights, version 1")
    reader = {"name": "scripted-model", "model": str(model)}
    first = [r.to_record() for r in _labeler(tmp_path, reader=reader).label([_example()])]
    assert len(CALLS) == 8
    CALLS.clear()
    assert [r.to_record() for r in _labeler(tmp_path, reader=reader).label([_example()])] == first and CALLS == []
    model.write_bytes(b"GGUF weights, version 2 (retrained)")
    assert [r.to_record() for r in _labeler(tmp_path, reader=reader).label([_example()])] == first
    assert len(CALLS) == 8  # every answer asked again of the new model


def test_cache_with_a_broken_line_in_the_middle_is_an_error(tmp_path):
    from ragsift.disk_cache import JsonlStore

    JsonlStore(tmp_path / "cache.jsonl").put("k", {"answer": "x"})  # the header and one line
    with (tmp_path / "cache.jsonl").open("a") as fh:
        fh.write('not json\n{"key": "k2", "answer": "y"}\n')
    with pytest.raises(ConfigError, match=r"cache.jsonl:3"):
        list(_labeler(tmp_path).label([_example()]))


def test_supporting_documents_and_sample_cap():
    labeler = _labeler(max_sentences=2, seed=1)
    records = list(labeler.label([_example()]))
    assert len(records) <= 2
    assert [r.to_record() for r in _labeler(max_sentences=2, seed=1).label([_example()])] == [r.to_record() for r in records]


def test_titles_off_keeps_the_answer_in_a_title_out_of_the_context():
    # the document's title is the answer: with titles every sentence reads "Paris" to the reader
    text, spans = sentence_spans_from_list(["The city has a museum.", " Tea is nice."])
    example = Example("q4", "Which city?", ("Paris",), (Document("Paris (capital)", text, "Paris (capital)",
                                                                  sentence_spans=spans),), evidence=())
    assert {r.kind for r in _labeler().label([example])} == {"strong"}
    assert any("Paris (capital)" in c for _, c in CALLS)
    CALLS.clear()
    assert list(_labeler(titles=False).label([example])) == []  # no sentence alone gives the answer
    assert CALLS and not any("Paris" in c for _, c in CALLS)


def test_reader_table_needs_a_name():
    with pytest.raises(ConfigError, match="reader"):
        get_registry().create("labeler", "evidentiality", {"reader": {"model": "x"}})


def test_label_command_writes_a_manifest(tmp_path, data_dir):
    from ragsift.cli import main

    out = tmp_path / "pairs.jsonl"
    assert main(["label", "-l", "exit-pairs", "-i", str(data_dir / "hotpotqa-train-sf100.json"), "-o", str(out),
                 "--limit", "3", "--params", '{"distractor_negatives": 1}']) == 0
    manifest = json.loads((tmp_path / "pairs.jsonl.manifest.json").read_text())
    lines = out.read_text().splitlines()
    assert manifest["output"]["records"] == len(lines) > 0
    assert manifest["labeler"]["config"]["distractor_negatives"] == 1
    assert set(manifest["output"]["kinds"]) == {"positive", "hard_negative", "random_negative", "distractor_negative"}
    assert len(manifest["input"]["sha256"]) == 64
    assert {"ragsift_version", "git", "created_at", "packages"} <= set(manifest)  # ragsift.provenance.stamp()


def test_the_shipped_reader_cache_rewrites_the_shipped_records_with_no_reader_call(tmp_path):
    """benchmarks/results/evidentiality: the labeling run of BENCHMARKS.md, replayed from its cache
    (every line with its checksum) without a model: the same records, byte for byte, and not one
    reader call. A changed key of the reader cache, or a line refused, would ask the model again
    (reader_calls > 0, or an error where the model is not installed), and a changed labeler would
    write other records."""
    import shutil
    from pathlib import Path

    from ragsift.cli import main

    root = Path(__file__).parents[2]
    shipped = root / "benchmarks" / "results" / "evidentiality"
    manifest = json.loads((shipped / "evi-qwen-200.jsonl.manifest.json").read_text(encoding="utf-8"))
    cache = tmp_path / "cache.jsonl"
    shutil.copyfile(shipped / "evi-qwen-cache.jsonl", cache)
    assert all("checksum" in json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines())
    params = {**manifest["labeler"]["config"], "cache": str(cache)}
    out = tmp_path / "evi.jsonl"
    assert main(["label", "-l", "evidentiality", "-i", str(root / manifest["input"]["path"]), "-o", str(out),
                 "--limit", "200", "--params", json.dumps(params)]) == 0
    assert out.read_bytes() == (shipped / "evi-qwen-200.jsonl").read_bytes()
    report = json.loads((tmp_path / "evi.jsonl.manifest.json").read_text())["report"]
    calls = manifest["report"]["reader_calls"] + manifest["report"]["cache_hits"]  # the run's calls, all in the cache
    assert (report["reader_calls"], report["cache_hits"]) == (0, calls)
    assert cache.read_bytes() == (shipped / "evi-qwen-cache.jsonl").read_bytes()  # nothing appended
