"""A suite run's tables (``--data A,B,C``): the pooled summary (every question weighs once, paired
tests stratified by dataset) first, then each dataset's own, as text for the terminal and for
summary.md; report.html shows the same (:mod:`ragsift.evaluation.report.html`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragsift.evaluation.report.formatting import format_markdown, format_table

__all__ = ["pooled_note", "suite_table", "suite_markdown", "coverage_lines"]


def coverage_lines(summary: Mapping[str, Any]) -> list[str]:
    """A conformal selector's coverage against its promise, one line per compressor (none when no
    compressor is conformal; docs/conformal.md)."""
    return [f"{label}: {comp['coverage']['line']}" for label, comp in summary["compressors"].items()
            if comp.get("coverage")]


def _with_coverage(text: str, summary: Mapping[str, Any]) -> str:
    lines = coverage_lines(summary)
    if not lines:
        return text
    return text + "\n## Conformal coverage\n\n" + "".join(f"- {line}\n" for line in lines)


def pooled_note(summary: Mapping[str, Any]) -> str:
    """One sentence on how a suite's tables pool its datasets."""
    datasets = summary.get("datasets") or {}
    sizes = ", ".join(f"{name} {sub['examples']}" for name, sub in datasets.items())
    return (f"Pooled over {len(datasets)} datasets ({sizes}): every question weighs once; paired intervals and "
            "tests stratified by dataset; each dataset's own tables follow.")


def suite_table(summary: Mapping[str, Any]) -> str:
    """The terminal table: the run's (pooled, for a suite) then each dataset's."""
    out = [format_table(summary), *coverage_lines(summary)]
    for name, sub in (summary.get("datasets") or {}).items():
        out += ["", f"== dataset {name} ({sub['examples']} questions) ==", format_table(sub), *coverage_lines(sub)]
    if summary.get("datasets"):
        out.insert(0, pooled_note(summary))
    return "\n".join(out)


def suite_markdown(summary: Mapping[str, Any], title: str) -> str:
    """summary.md: the run's tables and, for a suite, the pooled tables then each dataset's."""
    text = _with_coverage(format_markdown(summary, title), summary)
    datasets = summary.get("datasets") or {}
    if not datasets:
        return text
    head, rest = text.split("\n", 1)
    text = f"{head}\n\n{pooled_note(summary)}\n{rest}"
    for name, sub in datasets.items():
        part = _with_coverage(format_markdown(sub, f"Dataset: {name} ({sub['examples']} questions)"), sub)
        text += "\n" + "".join(f"#{line}" if line.startswith("#") else line for line in part.splitlines(keepends=True))
    return text
