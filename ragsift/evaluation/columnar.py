"""Predictions as Parquet (``[evaluation] parquet = true`` or ``--parquet``), for pandas, duckdb, polars.

Two files per compressor beside ``predictions/<label>.jsonl``:

- ``<label>.parquet``: one row per example, the JSONL record column for column: ``sentences`` a
  list of structs, ``metrics`` and ``timings`` maps (a metric undefined for an example is absent
  from its map, as from the JSON record), ``reader`` a struct, ``info`` (free-form) as JSON text.
  :func:`read_parquet` gives back records equal to the JSONL ones.
- ``<label>.sentences.parquet``: one row per sentence (``id`` of the example, ``sentence``,
  ``doc``, ``start``, ``end``, ``text``, ``score``, ``kept``, ``rank``): the per-sentence scores
  in the flat shape a query wants (``SELECT avg(score) ... GROUP BY kept``).

Both are written whole, under a temporary name renamed into place; the JSONL file stays the
crash-safe record that ``--resume`` reads. pyarrow is an optional dependency (``ragsift[parquet]``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, DataFormatError
from ragsift.output_files import write_atomically

__all__ = ["write_parquet", "read_parquet", "parquet_path", "sentences_path", "require_pyarrow"]

#: columns stored as JSON text (free-form); every other top-level key the record has is too
_JSON_COLUMNS = ("info",)
_METADATA_KEY = b"ragsift.json_columns"


def require_pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401  (the submodule is what writes)
    except ImportError:
        raise ConfigError("Parquet output needs pyarrow: pip install 'ragsift[parquet]' (or pip install pyarrow).") from None
    return pyarrow


def parquet_path(jsonl: Path) -> Path:
    """``predictions/<label>.parquet`` beside ``predictions/<label>.jsonl``."""
    return jsonl.with_suffix(".parquet")


def sentences_path(jsonl: Path) -> Path:
    return jsonl.with_suffix(".sentences.parquet")


def _schema(pa: Any, extra: Sequence[str]) -> Any:
    sentence = pa.struct([
        ("id", pa.string()), ("doc", pa.int64()), ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()),
        ("score", pa.float64()), ("kept", pa.bool_()), ("rank", pa.int64()),
    ])
    reader = pa.struct([("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("cached", pa.bool_())])
    fields = [
        ("id", pa.string()), ("compressor", pa.string()), ("question", pa.string()), ("answers", pa.list_(pa.string())),
        ("kept", pa.list_(pa.string())), ("empty", pa.bool_()), ("compressed_text", pa.string()),
        ("sentences", pa.list_(sentence)), ("prediction", pa.string()), ("reader", reader),
        ("metrics", pa.map_(pa.string(), pa.float64())), ("timings", pa.map_(pa.string(), pa.float64())),
    ]
    fields += [(name, pa.string()) for name in (*_JSON_COLUMNS, *extra)]
    columns = [name for name in (*_JSON_COLUMNS, *extra)]
    return pa.schema(fields, metadata={_METADATA_KEY: json.dumps(columns).encode()})


def _typed_columns() -> set[str]:
    return {"id", "compressor", "question", "answers", "kept", "empty", "compressed_text", "sentences", "prediction",
            "reader", "metrics", "timings"}


def _row(record: Mapping[str, Any], json_columns: Sequence[str]) -> dict[str, Any]:
    row = {k: record.get(k) for k in _typed_columns()}
    row["metrics"] = list((record.get("metrics") or {}).items())
    row["timings"] = list((record.get("timings") or {}).items())
    for name in json_columns:
        row[name] = json.dumps(record[name], ensure_ascii=False) if name in record else None
    return row


def _write_table(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    write_atomically(path, lambda name: pq.write_table(table, name))


def write_parquet(jsonl: Path, records: Sequence[Mapping[str, Any]]) -> tuple[Path, Path]:
    """Write the records of one compressor as ``<label>.parquet`` and ``<label>.sentences.parquet``."""
    pa = require_pyarrow()
    extra = sorted({k for r in records for k in r} - _typed_columns() - set(_JSON_COLUMNS))
    schema = _schema(pa, extra)
    json_columns = [*_JSON_COLUMNS, *extra]
    table = pa.Table.from_pylist([_row(r, json_columns) for r in records], schema=schema)
    _write_table(table, parquet_path(jsonl))
    flat = [
        {"id": r["id"], "compressor": r.get("compressor"), "sentence": s["id"], "doc": s["doc"], "start": s["start"],
         "end": s["end"], "text": s["text"], "score": s["score"], "kept": s["kept"], "rank": s["rank"]}
        for r in records for s in r.get("sentences") or []
    ]
    sentence_schema = pa.schema([
        ("id", pa.string()), ("compressor", pa.string()), ("sentence", pa.string()), ("doc", pa.int64()),
        ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()), ("score", pa.float64()),
        ("kept", pa.bool_()), ("rank", pa.int64()),
    ])
    _write_table(pa.Table.from_pylist(flat, schema=sentence_schema), sentences_path(jsonl))
    return parquet_path(jsonl), sentences_path(jsonl)


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """The records of a ``<label>.parquet`` file, equal to the JSONL records they were written from."""
    require_pyarrow()
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataFormatError(path, None, f"not a readable Parquet file ({exc}).") from None
    metadata = table.schema.metadata or {}
    json_columns = json.loads(metadata.get(_METADATA_KEY, b"[]"))
    records = []
    for row in table.to_pylist():
        if not isinstance(row.get("id"), str):
            raise DataFormatError(path, None, "a row without an 'id'; not a ragsift predictions file.")
        record: dict[str, Any] = {}
        for key, value in row.items():
            if key in json_columns:
                if value is not None:
                    record[key] = json.loads(value)
            elif key in ("metrics", "timings"):
                record[key] = dict(value or [])
            else:
                record[key] = value
        records.append(record)
    return records
