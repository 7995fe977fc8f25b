"""What a run returns (:class:`RunResult`): its plan, records, summary and manifest as one value,
which the report, ``ragsift tune`` and ``ragsift merge`` read instead of the run folder. Saving is
one step at the end of the run; the value is what was saved."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.evaluation.report.run_data import RunData
from ragsift.evaluation.run.plan import RunPlan

__all__ = ["RunResult"]


@dataclass(frozen=True, eq=False)
class RunResult(Mapping[str, Any]):
    """A finished run. As a mapping it is its summary (``result["compressors"]``, as summary.json),
    so code written when :func:`~ragsift.evaluation.run.runner.run_evaluation` returned the
    summary dict reads it unchanged."""

    plan: RunPlan
    run_dir: Path
    #: summary.json: means, intervals, paired tests; for a suite, pooled, with ``datasets``
    summary: dict[str, Any]
    #: label -> its records, in example order
    records: dict[str, list[dict[str, Any]]]
    manifest: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.summary)

    def __len__(self) -> int:
        return len(self.summary)

    def report_data(self) -> RunData:
        """What report.html is made of, from this value (no file is read back)."""
        return RunData(self.run_dir, self.summary, self.manifest, self.records)

    def dataset_summaries(self) -> Mapping[str, Mapping[str, Any]]:
        """Dataset -> its own summary in a suite run (empty otherwise)."""
        return self.summary.get("datasets") or {}
