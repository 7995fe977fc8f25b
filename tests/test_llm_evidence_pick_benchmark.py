"""benchmarks/llm_evidence_pick.py: the numbered sentences the model chooses from, and how its reply is read."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from ragsift.types import make_example, sentence_spans_from_list

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("llm_evidence_pick")


def _document(title, sentences):
    text, spans = sentence_spans_from_list(sentences)
    return {"title": title, "text": text, "sentence_spans": spans}


def _example():
    return make_example("Where was the director of Heat born?", [
        _document("Heat", ["Heat is a 1995 film.", "It was directed by Michael Mann."]),
        _document("Paris", ["Paris is a city."]),
        _document("Michael Mann", ["Michael Mann was born in Chicago.", "He directs films."]),
    ])


def test_sentences_are_numbered_across_the_offered_documents_in_their_order(bench):
    text, table = bench.numbered(_example(), [2, 0])
    assert text.splitlines() == ["Michael Mann", "[1] Michael Mann was born in Chicago.", "[2] He directs films.", "",
                                 "Heat", "[3] Heat is a 1995 film.", "[4] It was directed by Michael Mann."]
    assert table == {1: (2, 0), 2: (2, 1), 3: (0, 0), 4: (0, 1)}


def test_a_reply_names_only_offered_numbers_once_each_in_its_order(bench):
    _, table = bench.numbered(_example(), [2, 0])
    assert bench.named("[4], [1], 4, 9 and 0", table) == [(0, 1), (2, 0)]
    assert bench.named("none of them", table) == []
