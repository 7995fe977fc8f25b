"""Manifest helpers: model discovery in plugin configs, hashes, git state."""

from __future__ import annotations

from pathlib import Path

from ragsift.evaluation.run.manifest import (
    describe_models,
    git_state,
    model_specs,
    read_manifest,
    sha256_file,
    write_manifest,
)


def test_model_specs_are_found_in_nested_configs() -> None:
    config = {
        "splitter": {"name": "sentencizer"},
        "scorer": {"name": "causal-yes-no", "model": "org/base", "adapter": "org/lora", "device": "cpu"},
        "selector": {"name": "reflection", "judge": {"name": "seq2seq", "model": "org/t5"}, "tokenizer": "whitespace"},
        "dual": {"query_model": "org/q", "model": ""},
    }
    assert list(model_specs(config)) == ["org/base", "org/lora", "org/t5", "org/q"]


def test_describe_models_records_errors_instead_of_failing(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.gguf")
    described = describe_models(["hub:org/name@abc123", missing, "hub:org/name@abc123"])
    assert described[0] == {"spec": "hub:org/name@abc123", "kind": "hub", "path": "org/name", "revision": "abc123"}
    assert described[1]["spec"] == missing and "no such file" in described[1]["error"]
    assert len(described) == 2  # duplicates once


def test_hash_git_and_atomic_write(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_bytes(b"abc")
    assert sha256_file(f) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    state = git_state()
    assert len(state["commit"]) == 40 and isinstance(state["dirty"], bool)
    assert git_state(tmp_path) == {}  # not a checkout
    write_manifest(tmp_path, {"status": "running"})
    assert read_manifest(tmp_path) == {"status": "running"}
    assert read_manifest(tmp_path / "none") is None
    assert [p.name for p in tmp_path.iterdir() if "tmp" in p.name] == []
