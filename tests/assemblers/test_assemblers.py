from __future__ import annotations

from ragsift.registry import get_registry
from ragsift.testing import presplit_sentences, sample_example

EX = sample_example()
SENTS = presplit_sentences(EX)  # 0-2 Marie Curie, 3-4 Warsaw, 5-7 Eiffel Tower


def assemble(name, kept, **params):
    return get_registry().create("assembler", name, params).assemble(EX.documents, SENTS, kept)


def test_original_order_joins_sentences_by_space_and_documents_by_blank_line():
    assert assemble("original-order", [7, 3, 1, 0]) == (
        "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867.\n\n"
        "Warsaw is the capital of Poland.\n\nIt is 330 metres tall."
    )


def test_original_order_with_title_line():
    assert assemble("original-order", [3, 1], title=True) == (
        "Marie Curie\nShe was born in Warsaw in 1867.\n\nWarsaw\nWarsaw is the capital of Poland."
    )


def test_rank_order_with_title_prefix():
    assert (
        assemble("rank-order", [3, 1])
        == "Warsaw: Warsaw is the capital of Poland.\nMarie Curie: She was born in Warsaw in 1867."
    )


def test_rank_order_options():
    assert (
        assemble("rank-order", [3, 1], title_prefix=False)
        == "Warsaw is the capital of Poland.\nShe was born in Warsaw in 1867."
    )
    assert assemble("rank-order", [3, 1], order="original") == (
        "Marie Curie: She was born in Warsaw in 1867.\nWarsaw: Warsaw is the capital of Poland."
    )


def test_nothing_kept_is_empty_text():
    assert assemble("original-order", []) == "" and assemble("rank-order", []) == ""


def test_original_order_can_put_documents_in_rank_order():
    from ragsift.assemblers.original_order import OriginalOrderAssembler
    from ragsift.testing import presplit_sentences, sample_example

    example = sample_example()
    sentences = presplit_sentences(example)  # doc 0: 0-2, doc 1: 3-4, doc 2: 5-7
    kept = [6, 1, 3, 0]
    ranked = OriginalOrderAssembler(document_order="rank").assemble(example.documents, sentences, kept)
    texts = [s.text for s in sentences]
    assert ranked == "\n\n".join([texts[6], f"{texts[0]} {texts[1]}", texts[3]])
    best_last = OriginalOrderAssembler(document_order="reverse-rank").assemble(example.documents, sentences, kept)
    assert best_last == "\n\n".join([texts[3], f"{texts[0]} {texts[1]}", texts[6]])
    original = OriginalOrderAssembler().assemble(example.documents, sentences, kept)
    assert original == "\n\n".join([f"{texts[0]} {texts[1]}", texts[3], texts[6]])
