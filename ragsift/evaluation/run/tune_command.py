"""The ``ragsift tune`` subcommand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragsift.cli_types import add_set_option, positive_int

__all__ = ["add_tune_command"]

_EPILOG = """examples:
  ragsift tune -c configs/tune/cascades.toml --out runs/tune-cascades --frozen configs/tuned/cascades.toml
  ragsift tune -c configs/tune/cascades.toml --out runs/tune-cascades --resume   # after an interruption
  ragsift tune -c configs/tune/cascades.toml --out runs/tune-c20 --set evaluation.limit=20   # over the sweep config

a tuning config names a sweep (a run config with [evaluation.sweep] whose [dataset] holds development
questions and whose [reader] is the run's reader) and the rule, written before the run:
  sweep = "../dev/cascade-sweep.toml"
  [rule]
  metric = "em"                   # higher is better, in the summary's units (EM points)
  within = 1.0                    # candidates: points within 1 EM point of the best (0: the best only)
  prefer = "fewer-prompt-tokens"  # or fewer-compressed-tokens, lower-latency

refuses the evaluation data (ragsift/data/hotpotqa-dev-sf100.json and every evaluation dataset of
'ragsift datasets': by name, content hash, question id and question text; docs/datasets.md); writes
OUT (the sweep's run directory, as 'ragsift evaluate' writes it) and the frozen config (default
OUT/tuned.toml): each swept compressor's chosen point under its own label, with
[tuned] recording the rule, the development file's sha256 and question ids, and the sweep's table.
docs/tuning.md."""


def _cmd_tune(args: argparse.Namespace) -> int:
    from ragsift.evaluation.run.tune import TuneOptions, run_tune

    run_tune(TuneOptions(config=args.config, out=Path(args.out), frozen=None if args.frozen is None else Path(args.frozen),
                         data=args.data, format=args.format, limit=args.limit, resume=args.resume, force=args.force,
                         progress=not args.quiet, argv=["ragsift", *sys.argv[1:]], overrides=list(args.overrides)))
    return 0


def add_tune_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``tune`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "tune", help="choose operating points for the reader on development questions; write a frozen config",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Run a sweep on development questions with the run's reader, choose each swept compressor's "
        "point by the tuning config's rule, and write a frozen config that records the rule, the questions and "
        "the sweep's table.",
    )
    p.add_argument("--config", "-c", required=True, help="tuning config file or name in configs/")
    p.add_argument("--out", "-o", required=True, help="run directory of the sweep (new or empty; --resume continues it)")
    p.add_argument("--frozen", help="the frozen config to write (default: OUT/tuned.toml)")
    p.add_argument("--data", "-d", help="development file (default: the sweep config's [dataset]); never the evaluation file")
    p.add_argument("--format", "-f", help="dataset loader name (default: the sweep config's [dataset] name, else detected)")
    p.add_argument("--limit", type=positive_int, help="only the first N development questions (overrides [evaluation] limit)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted sweep: skip examples already written")
    p.add_argument("--force", action="store_true", help="overwrite an existing frozen config (never an input or a file of "
                   "the sweep's run; --resume alone does not)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    add_set_option(p, "the sweep config (not the tuning config's [rule])")
    p.set_defaults(func=_cmd_tune)
    return p
