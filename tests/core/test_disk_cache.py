"""The JSON store under the score and answer caches: atomic entries, concurrent writers, a writer
killed mid-write, and entries that cannot be read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ragsift.disk_cache import JsonStore, digest

ROOT = Path(__file__).parents[2]

WRITER = """
import sys
from ragsift.disk_cache import JsonStore
store = JsonStore(sys.argv[1])
name, rounds = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
for r in range(rounds):
    for i in range(100):  # the same keys as the other writer, with the same values
        store.put(f"{i:064x}", {"value": i, "payload": "x" * 2000})
    for i in range(50):  # keys only this writer writes
        store.put(f"{name}{i:063x}", {"value": f"{name}-{i}", "payload": "y" * 2000})
print("done", flush=True)
"""


def _writer(folder: Path, name: str, rounds: int) -> subprocess.Popen:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder), name, str(rounds)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_round_trip_and_memory_only() -> None:
    store = JsonStore(None)
    assert store.get("ab" * 32) is None
    store.put("ab" * 32, {"scores": [0.5, float("nan")]})
    assert store.get("ab" * 32)["scores"][0] == 0.5  # type: ignore[index]
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1}) != digest({"a": [2, 1], "b": 1})


def test_entries_survive_a_new_store_and_bad_entries_count_as_missing(tmp_path: Path) -> None:
    key = digest("k")
    JsonStore(tmp_path).put(key, {"scores": [1.0, 2.5, float("inf")]})
    again = JsonStore(tmp_path)
    assert again.get(key) == {"scores": [1.0, 2.5, float("inf")], "key": key}
    assert len(again) == 1
    path = again.path(key)
    assert path is not None
    for bad in ('{"scores": [1.0, 2.', "[1, 2]", json.dumps({"scores": [1.0], "key": "another"}), ""):
        path.write_text(bad)
        assert JsonStore(tmp_path).get(key) is None, bad
    JsonStore(tmp_path).put(key, {"scores": [3.0]})  # a bad entry is simply rewritten
    assert JsonStore(tmp_path).get(key)["scores"] == [3.0]  # type: ignore[index]


def test_two_concurrent_writers_of_the_same_and_different_keys(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    a, b = _writer(folder, "a", 3), _writer(folder, "b", 3)
    for p in (a, b):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.split() == ["ready", "done"]
    store = JsonStore(folder)
    for i in range(100):
        assert store.get(f"{i:064x}")["value"] == i  # type: ignore[index]
    for name in "ab":
        for i in range(50):
            assert store.get(f"{name}{i:063x}")["value"] == f"{name}-{i}"  # type: ignore[index]
    assert len(store) == 200
    assert not list(folder.rglob("*.tmp"))  # every temporary file was renamed into place


def test_a_writer_killed_mid_run_leaves_only_complete_entries(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    writer = _writer(folder, "k", 1000)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 60
    while len(list(folder.glob("??/*.json"))) < 40:
        assert time.monotonic() < deadline and writer.poll() is None
        time.sleep(0.01)  # polling a folder another process writes
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    store = JsonStore(folder)
    entries = list(folder.glob("??/*.json"))
    assert entries
    for path in entries:  # a file under its final name is always a complete entry
        assert store.get(path.stem) is not None, path
    for i in range(100):  # a rerun fills in what is missing
        store.put(f"{i:064x}", {"value": i})
    assert all(JsonStore(folder).get(f"{i:064x}") is not None for i in range(100))


def test_a_model_known_by_its_hashes_is_keyed_without_its_local_path(monkeypatch) -> None:
    """The same model files installed in two checkouts' environments give one key (the shared
    cache is shared across clones); a changed file, or a model without hashes, is another key."""
    import ragsift.disk_cache as dc
    import ragsift.models

    def identity(path: str, sha: str | None) -> list[dict[str, object]]:
        described: dict[str, object] = {"spec": "package:m/model.gguf", "kind": "gguf", "path": path}
        if sha is not None:
            described["sha256"] = {"model.gguf": sha}
        monkeypatch.setattr(ragsift.models, "describe_model", lambda spec: dict(described))
        dc._describe.cache_clear()
        return dc.model_identity({"model": "package:m/model.gguf"})

    assert identity("/clone-a/.venv/m", "ab" * 32) == identity("/clone-b/.venv/m", "ab" * 32)
    assert identity("/clone-a/.venv/m", "ab" * 32) != identity("/clone-a/.venv/m", "cd" * 32)
    assert identity("/clone-a/.venv/m", None) != identity("/clone-b/.venv/m", None)
