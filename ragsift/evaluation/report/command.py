"""The ``ragsift report`` subcommand: the HTML report and plots of an existing run directory."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_report_command"]

_EPILOG = """examples:
  ragsift report runs/quickstart
  ragsift report runs/bm25 --quiet

writes RUN_DIR/report.html (self-contained: opens with no network) and RUN_DIR/plots/*.png
from RUN_DIR/summary.json, manifest.json and predictions/ ('ragsift evaluate' writes them too)."""


def _cmd_report(args: argparse.Namespace) -> int:
    from ragsift.evaluation.report.html import write_report

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
    p.add_argument("--quiet", "-q", action="store_true", help="do not print where the report is")
    p.set_defaults(func=_cmd_report)
    return p
