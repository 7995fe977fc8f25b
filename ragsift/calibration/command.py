"""The ``ragsift calibrate`` subcommand."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragsift.cli_types import add_set_option, positive_int

__all__ = ["add_calibrate_command"]

_EPILOG = """examples:
  ragsift calibrate -c configs/tuned/bridge-order.toml#bridge-ranked --alpha 0.1 --target documents \\
      --data data/training/hotpotqa-dev-pool.json --limit 100 --out configs/tuned/bridge-conformal-a10.toml
  ragsift calibrate -c bm25 --alpha 0.1 --target sentences --data 2wiki-dev --out runs/bm25-conformal.toml

targets: sentences (every gold evidence sentence; at document level every document holding one),
documents (every document holding gold evidence; document level only), answer (one kept unit holding
a gold answer). The level is the selector's own (top-documents: document; others: sentence) unless
--level says otherwise.

the threshold: the k-th smallest of the questions' calibration scores (the largest threshold that
still keeps each question's target), k = floor((n + 1) * alpha); k = 0 keeps everything. It keeps the
target for at least 1 - alpha of new questions exchangeable with the calibration questions: marginal,
one dataset. Refuses the evaluation files (by content and by question id). docs/conformal.md."""


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1); got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1); got {value}")
    return value


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from ragsift.calibration.calibrate import CalibrateOptions, run_calibrate

    run_calibrate(CalibrateOptions(
        config=args.config, alpha=args.alpha, target=args.target, out=Path(args.out), level=args.level,
        aggregate=args.aggregate, m=args.m, data=args.data, format=args.format, limit=args.limit, label=args.label,
        force=args.force, progress=not args.quiet, overrides=list(args.overrides)))
    return 0


def add_calibrate_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``calibrate`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "calibrate", help="freeze a conformal keep-threshold on development questions (coverage >= 1 - alpha)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Score development questions with one compressor's scorer, compute the split-conformal threshold "
        "that keeps the target for at least 1 - alpha of new questions, and write a frozen config whose selector is "
        "'conformal' with that threshold and a [calibrated] record.",
    )
    p.add_argument("--config", "-c", required=True, help="config file or name in configs/; CONFIG#LABEL picks one "
                   "compressor of a config with several")
    p.add_argument("--alpha", "-a", required=True, type=_alpha, help="the miscoverage allowed, in (0, 1): 0.1 keeps the "
                   "target for at least 90%% of new questions")
    p.add_argument("--target", "-t", required=True, choices=["sentences", "documents", "answer"],
                   help="what must be kept")
    p.add_argument("--out", "-o", required=True, help="the frozen config to write")
    p.add_argument("--level", choices=["sentence", "document"], help="keep sentences or whole documents (default: the "
                   "selector's own level)")
    p.add_argument("--aggregate", choices=["max", "mean", "top-m"], help="document level: a document's score from its "
                   "sentences' (default: the selector's, else max)")
    p.add_argument("--m", type=positive_int, help="with --aggregate top-m: how many best sentence scores are averaged")
    p.add_argument("--data", "-d", help="development questions: a file or a named dataset (default: the config's "
                   "[dataset]); never an evaluation file")
    p.add_argument("--format", "-f", help="dataset loader name (default: the config's [dataset] name, else detected)")
    p.add_argument("--limit", type=positive_int, help="only the first N questions")
    p.add_argument("--label", help="the frozen compressor's label (default: LABEL-conformal)")
    p.add_argument("--force", action="store_true", help="overwrite an existing frozen config")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_set_option(p, "the config")
    p.set_defaults(func=_cmd_calibrate)
    return p
