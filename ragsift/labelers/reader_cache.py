"""A disk cache of reader calls: one JSON line per answered (reader, question, context).

Appended and flushed after every batch, so a labeling run killed at any point resumes by
answering only what is not in the file yet. A truncated last line (a write cut short by the
kill) is dropped from the file. The key is the SHA-256 of the reader's name and config, the question and the
context: another reader, prompt or setting never reuses an answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError
from ragsift.readers.base import Reader

__all__ = ["CachedReader"]


class CachedReader:
    """Answers through ``reader``, reusing answers stored in ``path`` (``None``: memory only)."""

    def __init__(self, reader: Reader, path: str | Path | None, batch_size: int = 8) -> None:
        self.reader = reader
        self.path = None if path is None else Path(path)
        self.batch_size = batch_size
        self._identity = json.dumps([reader.registered_name or type(reader).__name__, reader.config()], sort_keys=True)
        self._answers: dict[str, dict[str, Any]] = {}
        self.stats = {"reader_calls": 0, "cache_hits": 0, "reader_seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
        if self.path is not None and self.path.is_file():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            # a write cut short by a kill: drop the partial last line, so appends start on a fresh line
            data = data[: data.rfind(b"\n") + 1]
            with path.open("r+b") as fh:
                fh.truncate(len(data))
        for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise ConfigError(f"{path}:{number}: not a JSON line of a reader cache; delete the file or fix the line.") from None
            if not isinstance(record, dict) or "key" not in record or "answer" not in record:
                raise ConfigError(f"{path}:{number}: a reader-cache line needs 'key' and 'answer'.")
            self._answers[record["key"]] = record

    def key(self, question: str, context: str) -> str:
        return hashlib.sha256(json.dumps([self._identity, question, context]).encode()).hexdigest()

    def answers(self, questions: Sequence[str], contexts: Sequence[str]) -> list[str]:
        """The reader's answer to each (question, context), asking only the uncached ones."""
        keys = [self.key(q, c) for q, c in zip(questions, contexts, strict=True)]
        missing = list(dict.fromkeys(k for k in keys if k not in self._answers))
        self.stats["cache_hits"] += len(keys) - len(missing)
        where = {k: i for i, k in enumerate(keys)}
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            t = time.perf_counter()
            answers = self.reader.answer_many([questions[where[k]] for k in batch], [contexts[where[k]] for k in batch])
            self.stats["reader_seconds"] += time.perf_counter() - t
            self.stats["reader_calls"] += len(batch)
            records = []
            for k, answer in zip(batch, answers, strict=True):
                self.stats["prompt_tokens"] += answer.prompt_tokens or 0
                self.stats["completion_tokens"] += answer.completion_tokens or 0
                record = {"key": k, "answer": answer.text, "prompt_tokens": answer.prompt_tokens,
                          "completion_tokens": answer.completion_tokens}
                self._answers[k] = record
                records.append(record)
            self._append(records)
        return [str(self._answers[k]["answer"]) for k in keys]

    def _append(self, records: list[dict[str, Any]]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
