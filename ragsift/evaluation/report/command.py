"""The ``ragsift report`` subcommand: the HTML report and plots of an existing run directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_report_command"]

_EPILOG = """examples:
  ragsift report runs/quickstart
  ragsift report runs/bm25 --quiet
  ragsift report runs/quickstart --format md > results.md     # print the summary; writes nothing
  ragsift report runs/quickstart --format latex

writes RUN_DIR/report.html (self-contained: opens with no network) and RUN_DIR/plots/*.png
from RUN_DIR/summary.json, manifest.json and predictions/ ('ragsift evaluate' writes them too);
with --format, prints the summary instead (table: the terminal table; md: summary.md; json:
summary.json; latex: booktabs tables) and writes nothing."""

FORMATS = ("table", "md", "json", "latex")


def format_summary(summary: dict[str, Any], fmt: str) -> str:
    """The run's summary as ``fmt`` (one of :data:`FORMATS`)."""
    import json

    from ragsift.evaluation.report.pooling import suite_markdown, suite_table

    if fmt == "json":
        return json.dumps(summary, indent=2, ensure_ascii=False)
    if fmt == "md":
        return suite_markdown(summary, f"ragsift evaluation: {Path(str(summary.get('config', 'run'))).name}")
    if fmt == "latex":
        from ragsift.evaluation.report.latex import format_latex

        return format_latex(summary)
    return suite_table(summary)


def _cmd_report(args: argparse.Namespace) -> int:
    from ragsift.evaluation.report.html import load_run, write_report

    if args.format:
        print(format_summary(load_run(Path(args.run_dir)).summary, args.format).rstrip("\n"))
        return 0
    write_report(Path(args.run_dir), echo=None if args.quiet else print)
    return 0


def add_report_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``report`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "report", help="write report.html and plots for an existing run directory",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Write the HTML report of a finished 'ragsift evaluate' run: accuracy against tokens and "
        "latency with the Pareto frontier, evidence, per-stage latency, paired tests, and every example.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by 'ragsift evaluate'")
    p.add_argument("--format", choices=FORMATS, help="print the summary in this format instead of writing the report "
                   "(table, md, json, latex)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print where the report is")
    p.set_defaults(func=_cmd_report)
    return p
