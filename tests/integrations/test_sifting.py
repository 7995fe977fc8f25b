"""The framework-neutral part of the adapters: building the compressor, splitting a record per
document, and the error when a framework is missing."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import ragsift
from ragsift.errors import MissingDependencyError
from ragsift.integrations.sifting import DocumentSifter, split_record

ADAPTERS = [
    ("ragsift.integrations.langchain", "langchain_core", "langchain"),
    ("ragsift.integrations.llamaindex", "llama_index", "llama-index"),
    ("ragsift.integrations.haystack", "haystack", "haystack"),
]


@pytest.mark.parametrize(("module", "framework", "extra"), ADAPTERS)
def test_a_missing_framework_names_the_extra_to_install(monkeypatch, module, framework, extra):
    for name in [framework, *(m for m in sys.modules if m.startswith(framework + "."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed (also when another test imported it)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingDependencyError, match=rf"{module} needs .*pip install 'ragsift\[{extra}\]'"):
        importlib.import_module(module)


def test_importing_the_package_imports_no_framework():
    code = ("import sys, ragsift.integrations, ragsift.integrations.sifting\n"
            "loaded = [m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'llama_index', 'haystack')]\n"
            "assert not loaded, loaded\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr


def test_split_record_gives_each_document_its_kept_sentences_in_document_order():
    texts = ["A b. C d. E f.", "G h.", "I j. K l."]
    record = {"sentences": [
        {"id": "0:0", "doc": 0, "start": 0, "end": 4, "text": "A b.", "score": 0.1, "kept": False, "rank": None},
        {"id": "0:1", "doc": 0, "start": 5, "end": 9, "text": "C d.", "score": 0.9, "kept": True, "rank": 1},
        {"id": "0:2", "doc": 0, "start": 10, "end": 14, "text": "E f.", "score": None, "kept": True, "rank": 2},
        {"id": "1:0", "doc": 1, "start": 0, "end": 4, "text": "G h.", "score": 0.0, "kept": False, "rank": None},
        {"id": "2:0", "doc": 2, "start": 0, "end": 4, "text": "I j.", "score": 0.2, "kept": False, "rank": None},
        {"id": "2:1", "doc": 2, "start": 5, "end": 9, "text": "K l.", "score": 1.5, "kept": True, "rank": 0},
    ]}
    out = split_record(record, texts, "acme", separator=" | ")
    assert [(d.index, d.text) for d in out] == [(0, "C d. | E f."), (2, "K l.")]
    assert out[0].metadata == {"compressor": "acme", "sentences_total": 3, "original_chars": 14, "score": 0.9, "sentences": [
        {"index": 1, "start": 5, "end": 9, "score": 0.9, "rank": 1}, {"index": 2, "start": 10, "end": 14, "score": None, "rank": 2}]}
    assert out[1].metadata["sentences"] == [{"index": 1, "start": 5, "end": 9, "score": 1.5, "rank": 0}]
    assert out[1].metadata["score"] == 1.5  # the document's score: its kept sentences' highest (a None skipped)


def test_sifters_sharing_a_compressor_share_its_lock_and_a_spec_rebuilds_it():
    compressor = ragsift.load_compressor("bm25", selector={"k": 2})
    a, b = DocumentSifter(compressor), DocumentSifter(compressor)
    assert a._lock is b._lock and a._lock is not DocumentSifter("bm25")._lock
    rebuilt = DocumentSifter(a.spec())
    assert rebuilt.compressor is not compressor and rebuilt.spec() == a.spec()
    docs = [("Marie Curie", "Marie Curie was a physicist. She was born in Warsaw."), ("Paris", "Paris is in France. It is big.")]
    assert rebuilt.sift("Where was she born?", docs) == a.sift("Where was she born?", docs)


def test_a_sifter_takes_the_sentence_spans_a_retriever_gives():
    sifter = DocumentSifter({"name": "bm25", "splitter": "presplit", "selector": {"k": 1}})
    text = "Marie Curie physicist born in Warsaw"  # no sentence ends: the spans alone split it
    sifted = sifter.sift("Where was she born?", [{"title": "Curie", "text": text, "sentence_spans": [[0, 21], [22, 36]]}])
    assert sifted[0].text in ("Marie Curie physicist", "born in Warsaw") and sifted[0].metadata["sentences_total"] == 2
