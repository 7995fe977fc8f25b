"""Yes/No prompt templates, the head-tail cut and the length limit (no model needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragsift.lm import (
    EXIT_TEMPLATE,
    YesNoTemplate,
    document_context,
    head_tail,
    resolve_max_length,
)
from ragsift.types import Document


def test_exit_template_pieces():
    t = YesNoTemplate.parse(EXIT_TEMPLATE)
    assert t.head("Q?") == "<start_of_turn>user\nQuery:\nQ?\nFull context:\n"
    assert t.suffix("S.") == (
        '\nSentence:\nS.\nIs this sentence useful in answering the query? Answer only "Yes" or "No".'
        "<end_of_turn>\n<start_of_turn>model\n"
    )
    assert t.render("Q?", "C", "S.") == EXIT_TEMPLATE.replace("{query}", "Q?").replace("{context}", "C").replace(
        "{sentence}", "S."
    )


def test_braces_in_the_text_are_kept_literally():
    t = YesNoTemplate.parse("{query}|{context}|{sentence} {not a placeholder}")
    assert t.render("{x}", "c", "s") == "{x}|c|s {not a placeholder}"


@pytest.mark.parametrize(
    "template", ["{query} {context}", "{context} {query} {sentence}", "{query}{context}{sentence}{context}"]
)
def test_bad_templates(template):
    with pytest.raises(ValueError):
        YesNoTemplate.parse(template)


def test_document_context_is_title_newline_text():
    assert document_context(Document("T", "a b.")) == "T\na b."


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(10, list(range(10))), (20, list(range(10))), (5, [0, 1, 2, 8, 9]), (4, [0, 1, 8, 9]), (1, [0]), (0, [])],
)
def test_head_tail(budget, expected):
    assert head_tail(list(range(10)), budget) == expected


def test_max_length_is_the_smallest_finite_limit():
    config = SimpleNamespace(max_position_embeddings=8192)
    assert resolve_max_length(None, config, SimpleNamespace(model_max_length=10**30)) == 4096
    assert resolve_max_length(None, config, SimpleNamespace(model_max_length=2048)) == 2048
    assert resolve_max_length(9000, config, SimpleNamespace(model_max_length=10**30)) == 8192
    assert resolve_max_length(512, SimpleNamespace(), SimpleNamespace()) == 512
