"""Test plugins that count their calls: a BM25 scorer that counts the sentences it scores (and can
log each call to a file and sleep, for runs killed from outside) and a reader that counts the
prompts it reads. ``install()`` adds them to the process-wide registry."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import numpy as np

from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry
from ragsift.scorers.bm25 import BM25Scorer
from ragsift.types import Example, Sentence

#: sentences scored by every CountingBM25Scorer of this process, one entry per call
SCORED: list[int] = []
#: (question, context) of every prompt the counting reader read
READ: list[tuple[str, str]] = []


class CountingBM25Scorer(BM25Scorer):
    """BM25; each call appends its sentence count to ``SCORED`` (and to $COUNTING_SCORER_LOG, then
    sleeps $COUNTING_SCORER_SLEEP seconds, when set). With $COUNTING_SCORER_EXIT_ONCE (a file
    path), the first process to reach its second call while that file is missing creates it and
    dies at once (``os._exit``): a worker killed mid-run, once."""

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        SCORED.append(len(sentences))
        marker = os.environ.get("COUNTING_SCORER_EXIT_ONCE")
        if marker and len(SCORED) >= 2:
            try:
                with open(marker, "x", encoding="utf-8") as fh:
                    fh.write(f"{os.getpid()} {example.id}\n")
            except FileExistsError:
                pass
            else:
                os._exit(17)
        scores = super().score(example, sentences)
        log = os.environ.get("COUNTING_SCORER_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{example.id} {len(sentences)}\n")
        time.sleep(float(os.environ.get("COUNTING_SCORER_SLEEP", "0")))
        return scores


class CountingReader(Reader):
    """Answers with the last word of the context; counts what it reads."""

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        READ.extend(zip(questions, contexts, strict=True))
        return [ReaderAnswer((c.split() or [""])[-1].strip("."), len(c.split()), 1, 0.01) for c in contexts]


class _Plugin:
    @hookimpl
    def register_scorers(self, register):  # type: ignore[no-untyped-def]
        register("counting-bm25", CountingBM25Scorer)

    @hookimpl
    def register_readers(self, register):  # type: ignore[no-untyped-def]
        register("counting", CountingReader)


def install() -> None:
    """A fresh registry with these plugins (again and again in one process: never registered twice)."""
    SCORED.clear()
    READ.clear()
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-counting-plugins")
