"""The reader answer cache: each distinct prompt is read once; another reader config, question or
context is another prompt."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragsift.disk_cache import JsonlStore, JsonStore
from ragsift.errors import ConfigError
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.readers.caching import CachedAnswer, CachingReader


class EchoReader(Reader):
    """Answers with the context's first word; records every prompt it is sent."""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.prompts: list[tuple[str, str]] = []

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self.prompts += list(zip(questions, contexts, strict=True))
        return [ReaderAnswer(c.split()[0], len(c.split()), 1, 0.25) for c in contexts]


def _reader(store: JsonStore | JsonlStore, **params: object) -> CachingReader:
    inner = EchoReader(**params)
    inner.registered_name = "echo"
    return CachingReader(inner, store)


def test_each_distinct_prompt_is_read_once(tmp_path: Path) -> None:
    reader = _reader(JsonStore(tmp_path / "answers"))
    got = reader.answer_many(["q1", "q1", "q2", "q1"], ["Paris is big", "Paris is big", "Paris is big", "Lyon"])
    assert reader.inner.prompts == [("q1", "Paris is big"), ("q2", "Paris is big"), ("q1", "Lyon")]  # type: ignore[attr-defined]
    assert [a.text for a in got] == ["Paris", "Paris", "Paris", "Lyon"]
    assert [isinstance(a, CachedAnswer) for a in got] == [False, True, False, False]
    assert got[1].seconds == 0.25 and got[1].prompt_tokens == 3  # the numbers measured when it was read
    # another process: everything is on disk
    again = _reader(JsonStore(tmp_path / "answers"))
    assert [a.text for a in again.answer_many(["q2", "q1"], ["Paris is big", "Lyon"])] == ["Paris", "Lyon"]
    assert again.inner.prompts == []  # type: ignore[attr-defined]
    assert again.stats == {"hits": 2, "misses": 0}


def test_another_prompt_template_or_generation_setting_is_another_key(tmp_path: Path) -> None:
    store = JsonStore(tmp_path / "answers")
    base = _reader(store).key("q", "c")
    assert _reader(store).key("q", "c") == base
    assert _reader(store, max_new_tokens=5).key("q", "c") != base
    assert _reader(store, user_template="Q: {query}\nC: {context}\nA:").key("q", "c") != base
    assert _reader(store).key("q", "c ") != base and _reader(store).key("q ", "c") != base
    other = _reader(store, stop=["\n"])
    other.answer_many(["q"], ["Paris"])
    assert len(other.inner.prompts) == 1  # type: ignore[attr-defined]
    assert _reader(store).answer_many(["q"], ["Paris"])[0].text == "Paris"
    assert len(store) == 2


def test_the_wrapper_keeps_the_readers_secrets_for_redaction() -> None:
    class Secretive(EchoReader):
        def secrets(self) -> list[str]:
            return ["sk-123"]

    inner = Secretive()
    assert CachingReader(inner, JsonStore(None)).secrets() == ["sk-123"]


class ModelEchoReader(EchoReader):
    """An echo reader whose config names a local model file."""

    class Params(EchoReader.Params):  # type: ignore[name-defined,misc]
        model: str


def test_the_key_changes_when_a_local_model_file_changes(tmp_path: Path) -> None:
    """One reader cache for the evaluation and the labelers, keyed with the model files' hashes: a
    model retrained under the same path is another key (its old answers are never reused)."""
    model = tmp_path / "reader.gguf"
    model.write_bytes(b"GGUF weights, version 1")
    inner = ModelEchoReader(model=str(model))
    inner.registered_name = "model-echo"
    key = CachingReader(inner, JsonStore(None)).key("q", "c")
    assert CachingReader(inner, JsonStore(None)).key("q", "c") == key
    model.write_bytes(b"GGUF weights, version 2 (retrained)")
    assert CachingReader(inner, JsonStore(None)).key("q", "c") != key


def test_an_altered_line_of_a_jsonl_reader_cache_is_a_miss(tmp_path: Path, caplog: Any) -> None:
    """The labelers' reader cache (one JSONL file) checks each line's checksum as the evaluation's
    caches check their entries: a well-formed but altered answer is asked again (named in a
    warning), and so is a line whose checksum was deleted (issue 53)."""
    path = tmp_path / "cache.jsonl"
    _reader(JsonlStore(path)).answer_many(["q"], ["Paris is big"])
    header, line = path.read_text().splitlines()  # the store's header proves the file is its own
    stored = json.loads(line)
    assert "checksum" in stored
    path.write_text(header + "\n" + json.dumps({**stored, "text": "Lyon"}) + "\n")  # edited, its checksum kept
    again = _reader(JsonlStore(path))
    assert [a.text for a in again.answer_many(["q"], ["Paris is big"])] == ["Paris"]
    assert again.inner.prompts == [("q", "Paris is big")]  # type: ignore[attr-defined]
    assert f"{path}:2" in caplog.text and "checksum" in caplog.text
    assert _reader(JsonlStore(path)).answer_many(["q"], ["Paris is big"])[0].text == "Paris"  # the appended line wins
    path.write_text(json.dumps({k: v for k, v in stored.items() if k != "checksum"}) + "\n")  # without one
    with pytest.raises(ConfigError, match="line 1 has no checksum"):  # nothing proves the file is a cache
        JsonlStore(path)
    path.write_text(header + "\n" + json.dumps({k: v for k, v in stored.items() if k != "checksum"}) + "\n")
    deleted = _reader(JsonlStore(path))  # a cache with the header: every line has one, so this one is corrupt
    assert [a.text for a in deleted.answer_many(["q"], ["Paris is big"])] == ["Paris"]
    assert deleted.inner.prompts == [("q", "Paris is big")]  # type: ignore[attr-defined]
