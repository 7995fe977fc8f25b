"""A suite run's tables (``--data A,B,C``): the pooled summary (every question weighs once, paired
tests stratified by dataset) first, then each dataset's own, as text for the terminal and for
summary.md; report.html shows the same (:mod:`ragsift.evaluation.report.html`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragsift.evaluation.report.summary import format_markdown, format_table

__all__ = ["pooled_note", "suite_table", "suite_markdown"]


def pooled_note(summary: Mapping[str, Any]) -> str:
    """One sentence on how a suite's tables pool its datasets."""
    datasets = summary.get("datasets") or {}
    sizes = ", ".join(f"{name} {sub['examples']}" for name, sub in datasets.items())
    return (f"Pooled over {len(datasets)} datasets ({sizes}): every question weighs once; paired intervals and "
            "tests stratified by dataset; each dataset's own tables follow.")


def suite_table(summary: Mapping[str, Any]) -> str:
    """The terminal table: the run's (pooled, for a suite) then each dataset's."""
    out = [format_table(summary)]
    for name, sub in (summary.get("datasets") or {}).items():
        out += ["", f"== dataset {name} ({sub['examples']} questions) ==", format_table(sub)]
    if summary.get("datasets"):
        out.insert(0, pooled_note(summary))
    return "\n".join(out)


def suite_markdown(summary: Mapping[str, Any], title: str) -> str:
    """summary.md: the run's tables and, for a suite, the pooled tables then each dataset's."""
    text = format_markdown(summary, title)
    datasets = summary.get("datasets") or {}
    if not datasets:
        return text
    head, rest = text.split("\n", 1)
    text = f"{head}\n\n{pooled_note(summary)}\n{rest}"
    for name, sub in datasets.items():
        part = format_markdown(sub, f"Dataset: {name} ({sub['examples']} questions)")
        text += "\n" + "".join(f"#{line}" if line.startswith("#") else line for line in part.splitlines(keepends=True))
    return text
