"""Issue 53 row 2: a labeler's ``cache`` (a :class:`~ragsift.disk_cache.JsonlStore` file) never eats
a file that is not its own. The store used to cut any file without a final line break back to its
last line break before checking that it was a cache: ``label -l evidentiality`` with ``cache``
naming its own one-line JSON input turned it into cache lines (exit 0), and a pretty-printed JSON
lost its final ``]``. Now a cache path passes the output checks (never an input or an output), and
a store repairs only a file that starts with the header it wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.disk_cache import JSONL_HEADER, JsonlStore
from ragsift.errors import ConfigError
from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry


class EchoReader(Reader):
    """Answers the first word of the context (no model)."""

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        return [ReaderAnswer((c.split() or ["nothing"])[0], 1, 1, 0.0) for c in contexts]


class _Plugin:
    @hookimpl
    def register_readers(self, register):
        register("echo-first-word", EchoReader)


@pytest.fixture(autouse=True)
def echo_reader() -> Iterator[None]:
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-echo-reader")
    yield
    reset_registry()


def _one_line_input(tmp_path: Path, data_dir: Path) -> Path:
    """Two training questions as one line of JSON with no final line break (the issue's victim)."""
    examples = json.loads((data_dir / "hotpotqa-train-sf100.json").read_text())[:2]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(examples))
    return path


def _label(input_path: Path, output: Path, cache: Path) -> int:
    params = {"reader": {"name": "echo-first-word"}, "cache": str(cache)}
    return main(["label", "-l", "evidentiality", "-i", str(input_path), "-o", str(output), "--params", json.dumps(params)])


def test_a_cache_naming_the_labelers_own_input_is_refused_and_the_input_is_unchanged(tmp_path, data_dir, capsys):
    victim = _one_line_input(tmp_path, data_dir)
    before = victim.read_bytes()
    assert not before.endswith(b"\n")
    code = _label(victim, tmp_path / "out.jsonl", victim)
    err = capsys.readouterr().err
    assert code != 0
    assert victim.read_bytes() == before
    assert "ragsift: error: --params cache" in err and str(victim) in err and "Choose another cache file" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_cache_naming_the_output_is_refused_before_anything_is_written(tmp_path, data_dir, capsys):
    victim = _one_line_input(tmp_path, data_dir)
    out = tmp_path / "out.jsonl"
    assert _label(victim, out, out) != 0
    assert "--params cache" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("text", ['[\n  {"a": 1},\n  {"b": 2}\n]', '{"key": "x", "value": 1}\n{"key": "y"',
                                  "a plain text note\nwithout a final line break", "{}\n"])
def test_a_cache_naming_another_file_is_refused_and_the_file_is_unchanged(tmp_path, data_dir, capsys, text):
    victim = tmp_path / "notes.json"
    victim.write_text(text)
    before = victim.read_bytes()
    code = _label(_one_line_input(tmp_path, data_dir), tmp_path / "out.jsonl", victim)
    err = capsys.readouterr().err
    assert code != 0
    assert victim.read_bytes() == before
    assert f"{victim}: not a ragsift cache file" in err and "left unchanged" in err
    with pytest.raises(ConfigError, match="not a ragsift cache file"):  # the library's store refuses it too
        JsonlStore(victim)
    assert victim.read_bytes() == before


def test_a_cache_the_store_wrote_is_reused_and_its_cut_short_last_line_repaired(tmp_path, data_dir):
    data = _one_line_input(tmp_path, data_dir)
    cache = tmp_path / "cache.jsonl"
    assert _label(data, tmp_path / "a.jsonl", cache) == 0
    lines = cache.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[0]) == {**JSONL_HEADER, "checksum": json.loads(lines[0])["checksum"]}
    assert len(lines) > 2
    cache.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])  # a write killed mid-line
    assert _label(data, tmp_path / "b.jsonl", cache) == 0
    assert cache.read_bytes() == b"".join(lines)  # the cut line dropped, then asked again and appended
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_a_cache_from_before_the_header_is_read_but_never_repaired(tmp_path):
    legacy = tmp_path / "old.jsonl"
    store = JsonlStore(tmp_path / "new.jsonl")
    store.put("k1", {"text": "a"})
    line = (tmp_path / "new.jsonl").read_bytes().splitlines(keepends=True)[1]
    legacy.write_bytes(line)
    assert JsonlStore(legacy).get("k1") == {"key": "k1", "text": "a"}
    legacy.write_bytes(line + line[:12])  # cut short, but nothing proves the file is the store's
    with pytest.raises(ConfigError, match="not a ragsift cache file"):
        JsonlStore(legacy)
    assert legacy.read_bytes() == line + line[:12]
