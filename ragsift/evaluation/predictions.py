"""Per-compressor prediction files: one JSON line per example, appended and flushed at once.

A run killed mid-write leaves at most one truncated last line; :func:`read_records` drops it
(and cuts it off the file) so that ``--resume`` rewrites that example. A malformed line anywhere
else is an error: the file was edited or corrupted, and silently skipping it would lose data.

Each record carries the SHA-256 of its content (``checksum``, :func:`record_line`): a record that
is well-formed but altered is refused the same way by ``--resume``, ``merge`` and ``report``,
naming the file and the line. A ``null`` checksum, or a missing one in a file whose other records
have theirs, is refused the same way (issue 53: a deleted checksum is no way around the check).
Records of a file written before checksums existed have none and are read as before. The field
is a storage detail: records are returned without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ragsift.config import check_label
from ragsift.disk_cache import digest
from ragsift.errors import ConfigError, DataFormatError

__all__ = ["read_records", "read_predictions", "PredictionWriter", "prediction_path", "prediction_paths", "record_json",
           "record_line", "CHECKSUM"]

#: the field that holds a record's checksum
CHECKSUM = "checksum"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def prediction_path(run_dir: Path, label: str) -> Path:
    """``RUN_DIR/predictions/<label>.jsonl`` (unsafe characters of the label become ``_``)."""
    return run_dir / "predictions" / f"{_UNSAFE.sub('_', label) or 'compressor'}.jsonl"


def prediction_paths(run_dir: Path, labels: Sequence[str], source: str = "") -> dict[str, Path]:
    """``prediction_path`` of each label; two labels that would share one file (``"bm 25"`` and
    ``bm_25``, or ``BM25`` and ``bm25`` on a case-insensitive file system) are refused."""
    paths: dict[str, Path] = {}
    owners: dict[str, str] = {}
    looks: dict[str, str] = {}
    for label in labels:
        shape = unicodedata.normalize("NFKC", label)  # é written as one character or as e + accent
        if shape in looks and looks[shape] != label:
            raise ConfigError(f"{source + ': ' if source else ''}compressor labels '{looks[shape]}' and '{label}' look "
                              "the same (one is written with other Unicode characters); a report could not tell them "
                              "apart. Rename one of them.")
        looks[shape] = label
        check_label(label, source or "compressor labels")  # a sweep's point labels too
        path = prediction_path(run_dir, label)
        key = path.name.casefold()
        if key in owners:
            raise ConfigError(
                f"{source + ': ' if source else ''}compressor labels '{owners[key]}' and '{label}' would share one "
                f"predictions file ({path.name}; names are compared ignoring case and characters other than "
                "letters, digits, '.', '_' and '-'). Rename one of them."
            )
        owners[key] = label
        paths[label] = path
    return paths


def read_records(path: Path, repair: bool = True) -> list[dict[str, Any]]:
    """The complete records of ``path`` ([] when it does not exist).

    A last line without a newline that is not valid JSON is a write cut short: it is dropped
    and, with ``repair``, truncated away so later appends start on a clean line.
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    without: list[tuple[int, str, int]] = []  # (line, id, position) of the records that have no checksum
    unchecked: set[int] = set()
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not raw.strip():
            offset += len(raw) + 1
            continue
        try:
            record = json.loads(raw)
            if not isinstance(record, dict) or "id" not in record:
                raise ValueError("not a record with an 'id'")
            present = CHECKSUM in record
            stored = record.pop(CHECKSUM, None)
        except ValueError as exc:
            if is_last:  # no newline after it: the write was interrupted
                if repair:
                    with path.open("r+b") as fh:
                        fh.truncate(offset)
                break
            raise DataFormatError(path, number, f"not a complete JSON record ({exc}); the file was edited or corrupted.") from None
        if present and stored is None:
            raise DataFormatError(path, number, f"record '{record['id']}' has a null checksum: it was edited or corrupted "
                                  "after it was written. Restore the file, or delete this line and rerun 'ragsift "
                                  "evaluate' with --resume to compute the record again.")
        if not present:
            without.append((number, str(record["id"]), len(records)))
            unchecked.add(len(records))
        if stored is not None and stored != digest(record):
            raise DataFormatError(path, number, f"record '{record['id']}' does not match its checksum: it was edited or "
                                  "corrupted after it was written. Restore the file, or delete this line and rerun "
                                  "'ragsift evaluate' with --resume to compute the record again.")
        if is_last and repair:  # complete JSON but the newline never made it: finish the line
            with path.open("ab") as fh:
                fh.write(b"\n")
        records.append(record)
        offset += len(raw) + 1
    # A file may start with records written before checksums existed (a run resumed by a newer
    # ragsift appends records with theirs); a record without one after a record with one was edited.
    first_checked = next((i for i, r in enumerate(records) if i not in unchecked), None)
    late = [w for w in without if first_checked is not None and w[2] > first_checked]
    if late:
        number, record_id, _ = late[0]
        raise DataFormatError(path, number, f"record '{record_id}' has no checksum, unlike the other records of this "
                              "file: it was edited or corrupted after it was written. Restore the file, or delete this "
                              "line and rerun 'ragsift evaluate' with --resume to compute the record again.")
    return records


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The records of ``predictions/<label>.jsonl`` (never repaired), or of ``<label>.parquet``
    when only that exists (a run shipped or archived as Parquet); [] when neither does."""
    if not path.exists() and path.with_suffix(".parquet").exists():
        from ragsift.evaluation.columnar import read_parquet

        return read_parquet(path.with_suffix(".parquet"))
    return read_records(path, repair=False)


class PredictionWriter:
    """Appends records to a JSONL file, one flushed line each (survives a killed process)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: TextIO = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(record_line(record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> PredictionWriter:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.close()
            return
        with contextlib.suppress(OSError):  # a write already failed (a full disk): keep that first error
            self.close()


def record_json(record: dict[str, Any]) -> str:
    """One predictions record as a JSON line's text (numpy values and sets as lists)."""
    return json.dumps(record, ensure_ascii=False, default=_jsonable)


def record_line(record: dict[str, Any]) -> str:
    """A record as it is stored: its JSON with ``checksum``, the :func:`~ragsift.disk_cache.digest`
    of the rest (as read back: numpy values as lists); a checksum it had is replaced."""
    plain = json.loads(record_json({k: v for k, v in record.items() if k != CHECKSUM}))
    return json.dumps({**plain, CHECKSUM: digest(plain)}, ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
