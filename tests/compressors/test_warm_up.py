"""``warm_up()`` reaches every plugin a compressor holds (presplit's fallback splitter, a judge,
inner scorers), so that the first ``compress`` after it loads nothing (counted); and what BM25's
``compress`` imports (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import ragsift
from ragsift.hookspecs import hookimpl
from ragsift.plugin import Plugin, warm_up_all
from ragsift.registry import get_registry, reset_registry
from ragsift.splitters.base import Splitter

REPO = Path(__file__).resolve().parents[2]


class LoadingSplitter(Splitter):
    """Splits on ". ", after "loading a model" once per instance: in warm_up, or on first use."""

    LOADS: ClassVar[list[str]] = []
    loaded = False

    def warm_up(self) -> None:
        if not self.loaded:
            self.loaded = True
            LoadingSplitter.LOADS.append("warm_up")

    def spans(self, text: str) -> list[tuple[int, int]]:
        if not self.loaded:
            self.loaded = True
            LoadingSplitter.LOADS.append("first use")  # what warm_up should have spared the first request
        out, start = [], 0
        while (end := text.find(". ", start)) != -1:
            out.append((start, end + 1))
            start = end + 2
        return [*out, (start, len(text))] if start < len(text) else out


class _Register:
    @hookimpl
    def register_splitters(self, register):  # type: ignore[no-untyped-def]
        register("loading-test", LoadingSplitter)


@pytest.fixture
def loading_splitter() -> Iterator[None]:
    LoadingSplitter.LOADS.clear()
    reset_registry()
    get_registry().add_plugin(_Register(), "tests-warm-up")
    yield
    reset_registry()


def test_presplit_fallback_is_warmed_up_and_the_first_compress_loads_nothing(loading_splitter: None) -> None:
    compressor = ragsift.load_compressor("bm25", splitter={"name": "presplit", "fallback": "loading-test"},
                                         selector={"k": 1})
    compressor.warm_up()
    assert LoadingSplitter.LOADS == ["warm_up"]
    example = ragsift.make_example("Who wrote Hamlet?", ["Hamlet is a play. Shakespeare wrote it.", "Cats purr."])
    result = compressor.compress(example)  # no sentence_spans: the fallback splits
    assert [s.text for s in result.sentences] == ["Hamlet is a play.", "Shakespeare wrote it.", "Cats purr."]
    assert LoadingSplitter.LOADS == ["warm_up"]  # nothing loaded by the first compress
    compressor.warm_up()
    assert LoadingSplitter.LOADS == ["warm_up"]  # warm_up again: nothing again


class _Node(Plugin):
    def __init__(self, name: str, warmed: list[str]) -> None:
        super().__init__()
        self.name, self.warmed = name, warmed

    def warm_up(self) -> None:  # an override that reaches none of its plugins
        self.warmed.append(self.name)


def test_warm_up_all_reaches_plugins_held_directly_in_dicts_lists_and_wrappers_once_each() -> None:
    warmed: list[str] = []
    root, judge, a, b, inner = (_Node(n, warmed) for n in ("root", "judge", "a", "b", "inner"))
    root.judge = judge  # type: ignore[attr-defined]
    root.scorers = {"a": a, "b": b}  # type: ignore[attr-defined]
    b.stack = [inner, root]  # type: ignore[attr-defined]  # a cycle back to the root
    a.inner = inner  # type: ignore[attr-defined]  # reached twice, warmed once
    warm_up_all(root)
    assert sorted(warmed) == ["a", "b", "inner", "judge", "root"] and warmed[0] == "root"


_PROBE = """
import json, sys, traceback
first = {}

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not first:
            first["stack"] = [f.f_globals.get("__name__", "?") for f, _ in traceback.walk_stack(None)]
        return None

sys.meta_path.insert(0, Watch())
import ragsift
from ragsift.datasets import load_examples
example = next(iter(load_examples(None, limit=1)))
ragsift.load_compressor("bm25").compress(example)
stack = [m for m in first.get("stack", []) if not m.startswith(("importlib", "__main__"))]
print(json.dumps({"torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
                  "importer": stack[0] if stack else None,
                  "ragsift": [m for m in stack if m.startswith("ragsift")]}))
"""


def test_what_bm25_compress_imports() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["transformers"] is False  # none of ragsift's own lazy model imports runs for BM25
    if seen["torch"]:
        # where torch is installed, spaCy imports it: spacy -> thinc -> thinc.compat's `try: import
        # torch`, from the sentencizer splitter's `import spacy`; no ragsift module imports torch itself
        assert seen["importer"] == "thinc.compat", seen
        assert seen["ragsift"][0] == "ragsift.splitters.sentencizer", seen
