"""A run's summary as LaTeX (``ragsift report RUN --format latex``): the results table and the paired
differences against the baseline, as booktabs tables of the numbers summary.md shows."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.evaluation.report.formatting import primary_verdict_line, summary_rows

__all__ = ["format_latex", "latex_escape"]

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}"}
_PATTERN = re.compile("|".join(re.escape(k) for k in _SPECIAL))


def latex_escape(text: object) -> str:
    """``text`` with LaTeX's special characters written as text (labels and metric names come from
    configs and plugins); a line break becomes a space."""
    return _PATTERN.sub(lambda m: _SPECIAL[m.group(0)], " ".join(str(text).splitlines()))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str) -> list[str]:
    spec = "l" + "r" * (len(header) - 1)
    return [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
            " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule",
            *(" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows),
            r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(caption)}}}", r"\end{table}"]


def format_latex(summary: Mapping[str, Any]) -> str:
    """The results table (means and intervals) and, with a baseline to compare with, the paired
    differences (needs ``\\usepackage{booktabs}``)."""
    header, rows, diff_header, diff_rows = summary_rows(summary, brackets=True)
    conf = int(round(summary["confidence"] * 100))
    name = Path(str(summary.get("config", "run"))).name
    out = [f"% ragsift summary: {latex_escape(name)} (needs \\usepackage{{booktabs}})"]
    out += _table(header, rows, f"Means with {conf}% percentile-bootstrap intervals; percentages x100; seconds per question.")
    if diff_rows:
        out += ["", *_table(diff_header, diff_rows, f"Paired differences against {summary['baseline']} (by example id): "
                            "mean difference [interval], p-value, Holm-adjusted p; * Holm-adjusted p < 0.05.")]
    verdict = primary_verdict_line(summary)
    if verdict:
        out += ["", f"% primary comparison: {latex_escape(verdict)}"]
    return "\n".join(out) + "\n"
