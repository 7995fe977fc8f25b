from __future__ import annotations

import pytest

from ragsift.errors import ConfigError
from ragsift.registry import get_registry
from ragsift.types import Document, sentence_spans_from_list

TEXT = "Dr. Smith went to Washington. He arrived at 5 p.m. on Monday! Did he?  Yes."


def split(name, text=TEXT, **params):
    return [s.text for s in get_registry().create("splitter", name, params).split(Document("T", text), 3)]


@pytest.mark.parametrize("name", ["sentencizer", "nltk-punkt", "spacy"])
def test_rule_and_model_splitters_handle_abbreviations(name):
    assert split(name) == ["Dr. Smith went to Washington.", "He arrived at 5 p.m. on Monday!", "Did he?", "Yes."]


def test_regex_splitter_uses_its_pattern():
    assert split("regex", "a. b! c", pattern=r"[.!]\s*") == ["a", "b", "c"]
    assert split("regex", "One. Two.") == ["One.", "Two."]


def test_regex_splitter_rejects_bad_pattern():
    with pytest.raises(ConfigError, match=r"RegexSplitter: 'pattern': not a valid regular expression"):
        get_registry().create("splitter", "regex", {"pattern": "("})


def test_sentences_map_to_exact_spans_and_doc_index():
    doc = Document("T", TEXT)
    for s in get_registry().create("splitter", "sentencizer").split(doc, 3):
        assert doc.text[s.start : s.end] == s.text
        assert s.doc_index == 3
        assert s.id == f"3:{s.index}"


def test_presplit_uses_dataset_sentences():
    text, spans = sentence_spans_from_list(["First one.", " Second, no period", " Third."])
    sentences = get_registry().create("splitter", "presplit").split(Document("T", text, sentence_spans=spans), 0)
    assert [s.text for s in sentences] == ["First one.", "Second, no period", "Third."]


def test_presplit_without_spans_is_a_clear_error_unless_fallback():
    with pytest.raises(ConfigError, match="has no sentence boundaries"):
        get_registry().create("splitter", "presplit").split(Document("Title", "A. B."), 0)
    fallback = get_registry().create("splitter", "presplit", {"fallback": "sentencizer"})
    assert [s.text for s in fallback.split(Document("Title", "This is one. This is two."), 0)] == [
        "This is one.",
        "This is two.",
    ]


def test_presplit_unknown_fallback_names_available_splitters():
    with pytest.raises(Exception, match="Available splitters"):
        get_registry().create("splitter", "presplit", {"fallback": "nope"})


def test_whitespace_only_document_has_no_sentences():
    for name in ["sentencizer", "nltk-punkt", "regex"]:
        assert split(name, "   \n ") == []
