"""Read each distinct prompt once: a wrapper that caches any reader's answers by prompt hash.

The key is the SHA-256 of the reader's registered name and full config (prompt templates, stop
strings, generation settings), the identity of the model its config names (weight-file hashes,
as the run manifest records them), the question and the context: together they fix the exact
prompt the reader sends. Two compressors (or two points of a sweep) that produce the same
context for a question therefore share one reader call.

A cached answer keeps the token counts and the reading seconds measured when it was produced
(:class:`CachedAnswer`, ``cached=True``), so latency tables report what reading that prompt
costs. Values live in a :class:`~ragsift.disk_cache.JsonStore` (one JSON file per answer, written
atomically: the evaluation's caches) or a :class:`~ragsift.disk_cache.JsonlStore` (one JSONL file,
appended: the evidentiality labeler's ``cache``). This is the one reader answer cache of ragsift.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.disk_cache import CacheWrapper, JsonlStore, JsonStore, digest
from ragsift.readers.base import Reader, ReaderAnswer

__all__ = ["CachingReader", "CachedAnswer"]

FORMAT = 1


@dataclass(frozen=True)
class CachedAnswer(ReaderAnswer):
    """An answer read from the cache (its numbers are those measured when it was produced)."""

    cached: bool = True


class CachingReader(CacheWrapper, Reader):
    """Any reader, answering each distinct prompt once; behaves as the reader it wraps (same name,
    params, config and description). ``batch_size``: the uncached prompts go to the reader this
    many at a time, each batch stored as soon as it is answered (None: all at once)."""

    def __init__(self, reader: Reader, store: JsonStore | JsonlStore, batch_size: int | None = None) -> None:
        self._wrap(reader, store)
        self.prompt = reader.prompt
        self.batch_size = batch_size

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def tokenizer_spec(self) -> str | None:
        return self.inner.tokenizer_spec()

    def secrets(self) -> list[str]:
        return self.inner.secrets()

    def warm_up(self) -> None:
        self.inner.warm_up()

    def key(self, question: str, context: str) -> str:
        return digest({"format": FORMAT, "reader": self.identity(), "question": question, "context": context})

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self._check_lengths(questions, contexts)
        keys = [self.key(q, c) for q, c in zip(questions, contexts, strict=True)]
        found: dict[str, ReaderAnswer] = {}
        for k in dict.fromkeys(keys):
            entry = self.store.get(k)
            if entry is not None and isinstance(entry.get("text"), str):
                found[k] = CachedAnswer(entry["text"], entry.get("prompt_tokens"), entry.get("completion_tokens"),
                                        float(entry.get("seconds") or 0.0))
        missing = [i for i, k in enumerate(keys) if k not in found and keys.index(k) == i]  # each prompt once
        self.stats["hits"] += len(keys) - len(missing)
        self.stats["misses"] += len(missing)
        fresh: dict[str, ReaderAnswer] = {}
        step = self.batch_size or max(len(missing), 1)
        for start in range(0, len(missing), step):
            batch = missing[start : start + step]
            got = self.inner.answer_many([questions[i] for i in batch], [contexts[i] for i in batch])
            for i, answer in zip(batch, got, strict=True):
                fresh[keys[i]] = answer
                if self._store_new:
                    self.store.put(keys[i], {"text": answer.text, "prompt_tokens": answer.prompt_tokens,
                                             "completion_tokens": answer.completion_tokens, "seconds": answer.seconds})
        out: list[ReaderAnswer] = []
        first = {k: keys.index(k) for k in fresh}
        for i, k in enumerate(keys):
            if k in fresh and first[k] == i:
                out.append(fresh[k])
            else:  # a repeat of a prompt answered in this batch, or a cache hit
                a = fresh.get(k) or found[k]
                out.append(CachedAnswer(a.text, a.prompt_tokens, a.completion_tokens, a.seconds))
        return out
