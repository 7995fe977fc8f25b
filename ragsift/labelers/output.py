"""Writing a labeler's records with their manifest.

``write_labels`` streams the records to a JSONL file and writes ``<output>.manifest.json``
beside it: the labeler and its config (seed included), the input file and its SHA-256, the
output's SHA-256, the number of records of each kind, the labeler's own report (model calls,
cache hits, time, tokens) and its provenance (:func:`ragsift.provenance.stamp`: ragsift version,
git, created_at, packages). Trainers read the manifest to name the data and labeler in their
model cards.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ragsift.labelers.base import Labeler
from ragsift.output_files import AtomicOutput
from ragsift.provenance import sha256_file, stamp
from ragsift.types import Example

__all__ = ["write_labels", "manifest_path"]


def manifest_path(output: str | Path) -> Path:
    return Path(f"{output}.manifest.json")


def write_labels(
    labeler: Labeler, examples: Iterable[Example], output: str | Path, *, input_path: str | Path | None = None,
    replace_partial: bool = False,
) -> dict[str, Any]:
    """Write every record of ``labeler.label(examples)`` to ``output`` and return the manifest
    (``replace_partial``: see :class:`~ragsift.output_files.AtomicOutput`)."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    kinds: Counter[str] = Counter()
    start = time.perf_counter()
    with AtomicOutput(output, replace_partial=replace_partial) as out:  # renamed into place only when complete
        for record in labeler.label(examples):
            out.write(json.dumps(record.to_record(), ensure_ascii=False) + "\n")
            kinds[record.kind] += 1
    manifest = {
        "labeler": {"name": labeler.registered_name or type(labeler).__name__, "config": labeler.config()},
        "input": None if input_path is None else {"path": str(input_path), "sha256": sha256_file(input_path)},
        "output": {"path": str(output), "sha256": sha256_file(output), "records": sum(kinds.values()),
                   "kinds": dict(sorted(kinds.items()))},
        "report": labeler.report(),
        "seconds": round(time.perf_counter() - start, 3),
        **stamp(),
    }
    manifest_path(output).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest
