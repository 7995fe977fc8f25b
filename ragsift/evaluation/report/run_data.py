"""What a report is made of (:class:`RunData`): a run's summary, manifest and records, either the
run's own value (:class:`ragsift.evaluation.run.result.RunResult`) or read back from a run
directory (:func:`load_run`, ``ragsift report``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import prediction_path, read_predictions

__all__ = ["RunData", "load_run"]


@dataclass
class RunData:
    """What a report is made of: the summary, the manifest and the records of each compressor."""

    run_dir: Path
    summary: dict[str, Any]
    manifest: dict[str, Any]
    records: dict[str, list[dict[str, Any]]]

    @property
    def has_reader(self) -> bool:
        return any(k in self.summary["metrics"] for k in ("em", "f1"))


def load_run(run_dir: Path) -> RunData:
    """Read a finished run directory (``summary.json``, ``manifest.json``, predictions)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise ConfigError(f"{run_dir}: no summary.json (not a run directory, or the run did not finish); "
                          "finish it with 'ragsift evaluate ... --resume', then run 'ragsift report' again.")
    summary = _read_json(summary_path)
    manifest_path = run_dir / "manifest.json"
    manifest = _read_json(manifest_path) if manifest_path.is_file() else {}
    if not isinstance(summary.get("compressors"), dict) or "metrics" not in summary:
        raise ConfigError(f"{summary_path}: not a ragsift summary (no 'compressors' / 'metrics').")
    records: dict[str, list[dict[str, Any]]] = {}
    for label in summary["compressors"]:
        unique: dict[str, dict[str, Any]] = {}
        for r in read_predictions(prediction_path(run_dir, label)):
            unique.setdefault(str(r["id"]), r)  # the first record of an id
        records[label] = list(unique.values())
    return RunData(run_dir, summary, manifest, records)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected a JSON object.")
    return value
