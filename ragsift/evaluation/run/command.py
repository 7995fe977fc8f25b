"""The ``ragsift evaluate`` subcommand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragsift.cli_types import add_set_option, positive_int

__all__ = ["add_evaluate_command", "add_merge_command"]

_EPILOG = """examples:
  ragsift evaluate --config configs/quickstart.toml --out runs/quickstart --limit 8
  ragsift evaluate -c configs/bm25.toml --data my.json --limit 20 --no-reader --out runs/bm25
  ragsift evaluate -c configs/quickstart.toml --out runs/quickstart --limit 8 --resume   # after a crash
  ragsift evaluate -c configs/bm25.toml --shard 0/4 --out runs/bm25-0   # 1/4 of the examples; then 'ragsift merge'
  ragsift evaluate -c configs/bm25.toml --engine ray --parquet --out runs/bm25-ray   # docs/scale.md
  ragsift evaluate -c bm25 --set compressor.selector.k=3 --set evaluation.limit=20 --out runs/bm25-k3
  ragsift evaluate -c quickstart --compressors none,bm25,embedding --no-reader --out runs/three
  ragsift evaluate -c cascades#bm25-docs3 --no-reader --out runs/docs3   # one compressor of a config
  ragsift evaluate -c quickstart --data hotpotqa-eval,2wiki-eval,musique-eval --no-reader --limit 5 --out runs/suite

writes RUN_DIR/predictions/<compressor>.jsonl (one line per example, flushed as it is done),
RUN_DIR/summary.json, RUN_DIR/summary.md, RUN_DIR/manifest.json, and the report: RUN_DIR/report.html
(self-contained) with RUN_DIR/plots/*.png ('ragsift report RUN_DIR' rewrites them)."""


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from ragsift.config import load_labelled_config
    from ragsift.errors import RagsiftError
    from ragsift.evaluation.run.runner import RunOptions, run_evaluation
    from ragsift.evaluation.run.shards import parse_shard
    from ragsift.evaluation.run.subset import parse_compressor_list, select_compressors

    if args.allow_mixed and not args.resume:
        raise RagsiftError("--allow-mixed only applies with --resume.")
    config, label = load_labelled_config(args.config, args.overrides)
    if label is not None and args.compressors:
        raise RagsiftError(f"give CONFIG#LABEL or --compressors, not both (got {args.config!r} and --compressors "
                           f"{args.compressors!r}).")
    declared = config.evaluation.get("primary")
    if label is not None:
        config = select_compressors(config, [label], args.config)
    elif args.compressors:
        config = select_compressors(config, parse_compressor_list(args.compressors), f"--compressors {args.compressors}")
    if declared is not None and "primary" not in config.evaluation and not args.quiet:
        print(f"ragsift: note: the declared primary comparison ({config.source} [evaluation] primary) is not made: "
              "its compressor is not among those run.", file=sys.stderr)

    run_evaluation(RunOptions(
        config=config, out=Path(args.out), data=args.data, format=args.format, limit=args.limit,
        resume=args.resume, allow_mixed=args.allow_mixed, no_reader=args.no_reader, argv=["ragsift", *sys.argv[1:]],
        progress=not args.quiet,
        shard=None if args.shard is None else parse_shard(args.shard), parquet=args.parquet, engine=args.engine,
        until_look=args.until_look,
    ))
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from ragsift.evaluation.run.merge import merge_runs

    merge_runs([Path(d) for d in args.run_dirs], Path(args.out), parquet=args.parquet,
               argv=["ragsift", *sys.argv[1:]], echo=None if args.quiet else print)
    return 0


def add_evaluate_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``evaluate`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "evaluate", help="evaluate compressors (evidence, tokens, latency, EM/F1) with CIs",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Compress every example with every compressor of a config, read the compressed context "
        "with the config's reader, and report means with bootstrap confidence intervals and paired tests.",
    )
    p.add_argument("--config", "-c", required=True, help="config file or name in configs/ ('ragsift config list'); "
                   "CONFIG#LABEL runs one of its compressors")
    p.add_argument("--compressors", metavar="A,B", help="only these compressors of the config (labels, comma-separated; "
                   "the baseline among them): the run's records, summary and report hold only these")
    p.add_argument("--data", "-d", help="dataset file or name ('ragsift datasets'); A,B,C: a suite, each dataset evaluated "
                   "and pooled (default: the config's [evaluation] datasets, else its [dataset], else the bundled "
                   "HotpotQA sample)")
    p.add_argument("--format", "-f", help="dataset loader name (default: the config's [dataset] name, else detected)")
    p.add_argument("--out", "-o", required=True, help="run directory")
    p.add_argument("--limit", type=positive_int, help="only the first N examples, of each dataset in a suite "
                   "(overrides [evaluation] limit)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted run: skip examples already written")
    p.add_argument("--allow-mixed", action="store_true",
                   help="with --resume: continue although ragsift's version or a model file changed since the run "
                   "started (the run then mixes both; the manifest records what changed)")
    p.add_argument("--no-reader", action="store_true", help="compression and evidence metrics only; no reader")
    p.add_argument("--shard", metavar="I/N", help="only shard I of N (0 <= I < N): the examples at positions p with "
                   "p %% N == I, into this run directory; 'ragsift merge' joins the N run directories")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this process (default); ray: a Ray Data pipeline over actor pools ([evaluation.ray], "
                   "pip install 'ragsift[ray]')")
    p.add_argument("--parquet", action="store_true", help="also write predictions/<label>.parquet and "
                   "<label>.sentences.parquet (as [evaluation] parquet = true; pip install 'ragsift[parquet]')")
    p.add_argument("--until-look", type=positive_int, metavar="K",
                   help="with sequential looks ([evaluation.primary] looks): stop after look K unless a boundary "
                   "was crossed (status paused; --resume continues at the next look)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    add_set_option(p)
    p.set_defaults(func=_cmd_evaluate)
    return p


_MERGE_EPILOG = """examples:
  for i in 0 1 2; do ragsift evaluate -c configs/bm25.toml --shard $i/3 --out runs/bm25-$i; done
  ragsift merge runs/bm25-0 runs/bm25-1 runs/bm25-2 --out runs/bm25

checks that the shards come from one config, input file, limit, code version and model files, that
their numbers are 0..N-1 once each and that they hold every example once; then writes OUT as an
unsharded run would: predictions/, summary.json, summary.md, manifest.json (merged_from), report.html."""


def add_merge_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``merge`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "merge", help="merge the run directories of 'evaluate --shard i/N' into one run",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_MERGE_EPILOG,
        description="Check that shard runs belong together and cover every example exactly once, then write the "
        "summary, paired tests and report of the whole run.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="the run directory of every shard")
    p.add_argument("--out", "-o", required=True, help="the merged run directory (new or empty)")
    p.add_argument("--parquet", action="store_true", help="also write the merged predictions as Parquet")
    p.add_argument("--quiet", "-q", action="store_true", help="do not print the summary table")
    p.set_defaults(func=_cmd_merge)
    return p
