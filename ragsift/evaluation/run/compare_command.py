"""The ``ragsift compare`` subcommand (:mod:`ragsift.evaluation.run.compare`)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

__all__ = ["add_compare_command"]

_EPILOG = """examples:
  ragsift evaluate -c bm25 --no-reader --out runs/bm25
  ragsift evaluate -c exit --no-reader --out runs/exit
  ragsift compare runs/bm25 runs/exit --out runs/bm25-vs-exit
  ragsift compare runs/bm25 runs/exit#exit --out runs/both   # only 'exit' from runs/exit (both hold 'none')
  ragsift compare runs/k5 runs/k3 --rename runs/k3#bm25=bm25-k3 --out runs/k   # the same label in two runs
  ragsift compare runs/a runs/b --baseline bm25 --format md --out runs/ab
  ragsift compare runs/a runs/paused --common-questions --out runs/partial

checks that the runs share their input data (sha256), reader (model and settings), metrics and limit,
and that they finished; then writes OUT as one run holding every compressor would be: predictions/,
summary.json, summary.md, report.html and a manifest listing the runs (compared_from); 'ragsift report
OUT' works on it. Tests pair questions by id. A compressor label may come from one run only."""


def _cmd_compare(args: argparse.Namespace) -> int:
    from ragsift.evaluation.report.command import format_summary
    from ragsift.evaluation.run.compare import compare_runs

    table = args.format == "table"  # another format prints only the summary on stdout, notes on stderr
    echo = None if args.quiet else print if table else partial(print, file=sys.stderr)
    result = compare_runs(args.runs, Path(args.out), baseline=args.baseline, renames=args.rename or [],
                          common_questions=args.common_questions, parquet=args.parquet,
                          argv=["ragsift", *sys.argv[1:]], echo=echo, **({} if table else {"table": None}))
    if not table:
        print(format_summary(result.summary, args.format).rstrip("\n"))
    return 0


def add_compare_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``compare`` to the ``ragsift`` command line."""
    from ragsift.evaluation.report.command import FORMATS

    p = subparsers.add_parser(
        "compare", help="combine runs made separately (same data and reader) into one summary and report",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Combine the results of 'ragsift evaluate' runs made separately on the same data and reader into "
        "one run folder: one summary, paired tests (by question id) and report, as if one run had held every "
        "compressor.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="a run folder, or RUN#LABEL for one of its compressors "
                   "(give a run several times to take several)")
    p.add_argument("--out", "-o", required=True, help="the folder of the comparison (new or empty)")
    p.add_argument("--baseline", metavar="LABEL", help="the compressor every other is compared with (default: the "
                   "first run's baseline)")
    p.add_argument("--rename", action="append", metavar="RUN#LABEL=NEW", help="call a compressor of a run NEW in the "
                   "comparison (repeatable); the way to compare two runs' compressors that share a label")
    p.add_argument("--common-questions", action="store_true", help="also take unfinished runs and runs of other "
                   "limits, pairing on the questions every compressor answered (the manifest and summary.md say so)")
    p.add_argument("--format", choices=FORMATS, default="table", help="how to print the summary: table (default), "
                   "md, json, latex (as 'ragsift report --format')")
    p.add_argument("--parquet", action="store_true", help="also write the predictions as Parquet")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the table, notes or where the report is")
    p.set_defaults(func=_cmd_compare)
    return p
