"""Issue 53 row 19: one large request no longer holds ``ragsift serve``. A request is compressed in
one batch on the one batch worker, so every request arriving meanwhile waits behind it; its text is
bounded by ``--max-characters`` (default a million characters), refused with a 413 that says the
count, the limit and the option, before anything is split or scored. In-process (TestClient)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

import ragsift  # noqa: E402
from ragsift.service.app import create_app  # noqa: E402
from ragsift.service.command import add_serve_command  # noqa: E402
from ragsift.service.schema import ServiceLimits  # noqa: E402
from ragsift.types import CompressionResult, Example  # noqa: E402


class Counting:
    """bm25 that counts the examples it is asked to compress."""

    def __init__(self) -> None:
        self.inner = ragsift.load_compressor("bm25", selector={"k": 1})
        self.examples = 0

    def compress_many(self, examples: Iterable[Example]) -> Iterator[CompressionResult]:
        examples = list(examples)
        self.examples += len(examples)
        return self.inner.compress_many(examples)


def _client(compressor: Counting, limits: ServiceLimits | None = None) -> TestClient:
    return TestClient(create_app(cast(Any, compressor), "bm25", limits=limits))


def test_a_request_over_the_character_limit_is_refused_before_compressing() -> None:
    compressor = Counting()
    limits = ServiceLimits(max_characters=100)
    with _client(compressor, limits) as client:
        # questions (1 + 1) + title (5) + texts (40 + 53) = 100 characters: at the limit, compressed
        at_limit = {"examples": [{"question": "q", "documents": [{"title": "Title", "text": "a" * 39 + "."}]},
                                 {"question": "q", "documents": ["b" * 52 + "."]}]}
        assert client.post("/compress", json=at_limit).status_code == 200 and compressor.examples == 2
        over = {"question": "q", "documents": ["a" * 99 + "."]}
        answer = client.post("/compress", json=over)
        assert answer.status_code == 413, answer.text
        error = answer.json()["error"]
        assert "101 characters in one request" in error and "the limit is 100" in error and "--max-characters" in error
        assert compressor.examples == 2  # the refused request reached no compressor
        assert client.get("/health").json()["limits"]["max_characters"] == 100


def test_the_default_limit_refuses_a_60000_sentence_document() -> None:
    """The request of the issue: one document of 60,000 sentences (1.3 million characters, under the
    8 MiB body limit) held the service while it was compressed."""
    compressor = Counting()
    document = " ".join(f"Sentence {i} is short." for i in range(60_000))
    assert len(document) > ServiceLimits().max_characters == 1_000_000
    with _client(compressor) as client:
        answer = client.post("/compress", json={"question": "Which sentence?", "documents": [document]})
        assert answer.status_code == 413 and "--max-characters" in answer.json()["error"]
        assert compressor.examples == 0


def test_the_option_and_its_default_are_documented(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="ragsift")
    add_serve_command(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-characters" in text and "default 1000000" in text
