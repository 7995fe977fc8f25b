"""The ``ragsift`` command line: plugins, configs, compression and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from ragsift.cli_types import add_set_option, one_of, positive_int
from ragsift.errors import RagsiftError

__all__ = ["main", "build_parser"]

_F = argparse.RawDescriptionHelpFormatter


def _cmd_plugins(args: argparse.Namespace) -> int:
    from ragsift.registry import get_registry

    table = get_registry().all()
    stages = [args.stage] if args.stage else list(table)
    if args.json:
        print(json.dumps(get_registry().describe(stages), indent=2, default=str))
        return 0
    for stage in stages:
        print(f"{stage}s:")
        for info in table[stage]:
            shown = ", ".join(k + ("" if v["required"] else f"={v['default']!r}") for k, v in info.fields().items())
            print(f"  {info.name:<22} {info.source}  [{info.cls.__qualname__}]")
            if info.description():
                print(f"      {info.description()}")
            if shown:
                print(f"      fields: {shown}")
        if not table[stage]:
            print("  (none)")
    return 0


def _cmd_config_validate(args: argparse.Namespace) -> int:
    from ragsift.config import load_config
    from ragsift.evaluation.run.config_check import config_problems

    bad = 0
    for name in args.files:
        try:
            config = load_config(name)
            problems = config_problems(config)
        except RagsiftError as exc:
            problems = [str(exc)]
        if problems:
            bad += 1
            for problem in problems:
                print(f"ragsift: error: {problem}", file=sys.stderr)
        else:
            print(f"{config.source}: OK ({', '.join(config.compressor_specs())})")
    if bad:
        print(f"ragsift: {bad} of {len(args.files)} config(s) have problems.", file=sys.stderr)
    return 2 if bad else 0


def _clip(text: str, width: int) -> str:
    """``text`` cut at a word before ``width`` characters, with ' ...' where it was cut."""
    return text if len(text) <= width else text[: text.rfind(" ", 0, width - 4) if " " in text[: width - 4] else width - 4] + " ..."


def _cmd_config_list(args: argparse.Namespace) -> int:
    from ragsift.config_catalogue import config_catalogue

    entries = config_catalogue()
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2, ensure_ascii=False))
        return 0
    width = max((len(e.name) for e in entries), default=0)
    for e in entries:
        print(f"{e.name:<{width}}  {_clip(e.description, 100) or '(no description)'}")
        print(f"{'':<{width}}  compressors: {', '.join(e.compressors)}" if e.problem is None
              else f"{'':<{width}}  cannot be read: {e.problem}")
    if not entries:
        print("(no configs: none in ./configs/ nor shipped with ragsift)")
    return 0


def _cmd_config_show(args: argparse.Namespace) -> int:
    from ragsift.config import load_config

    config = load_config(args.name)
    resolved = config.resolved()
    if args.json:
        print(json.dumps(resolved, indent=2, default=str))
        return 0
    import tomli_w

    from ragsift.config_show import reloadable_table

    print(f"# {config.source}, every default filled in (a None value is omitted where its default is None, "
          "else written as \"\"); reloads to this config")
    print(tomli_w.dumps(reloadable_table(config)), end="")
    return 0


def _cmd_compress(args: argparse.Namespace) -> int:
    import tempfile

    from ragsift.cli_input import STDIN, STDIN_NAME, stdin_to_file
    from ragsift.errors import DataFormatError

    if args.input != STDIN:
        return _compress(args, args.input)
    with tempfile.TemporaryDirectory(prefix="ragsift-stdin-") as folder:
        spooled = stdin_to_file(Path(folder))
        try:
            return _compress(args, str(spooled))
        except DataFormatError as exc:  # it names the spooled copy; the user gave standard input
            if exc.path != str(spooled):
                raise
            raise DataFormatError(STDIN_NAME, exc.location, exc.problem) from None


def _compress(args: argparse.Namespace, input: str | None) -> int:
    from collections import deque

    from tqdm import tqdm

    from ragsift.cli_input import count_examples
    from ragsift.config import load_labelled_config
    from ragsift.datasets.loading import warn_empty_questions
    from ragsift.output_files import check_output
    from ragsift.types import Example

    config, chosen = load_labelled_config(args.config, args.overrides)
    to_stdout = args.output in (None, "-")
    if not to_stdout:
        dataset_path = (config.dataset or {}).get("path")
        check_output(args.output, [input, dataset_path, config.source], force=args.force)
    label, compressor = config.only_compressor("compress", chosen)
    source = config.data(input, args.format)
    known = count_examples(source)
    total = known if args.limit is None else min(args.limit, known) if known is not None else args.limit
    # the questions of the examples handed to the compressor and not yet answered: compress_many
    # may read ahead (batches), and its results come back in order, so each line takes the oldest
    asked: deque[tuple[str, str]] = deque()

    def remembered(examples: Iterator[Example]) -> Iterator[Example]:
        for example in examples:
            asked.append((example.id, example.question))
            yield example

    examples = remembered(warn_empty_questions(source.load(args.limit), source.path))
    counts = [0, 0]  # written, empty

    def write_all(out: TextIO) -> None:
        compressor.warm_up()
        for result in tqdm(compressor.compress_many(examples), desc=f"compress [{label}]", unit="ex", total=total,
                           disable=args.quiet, file=sys.stderr):
            example_id, question = asked.popleft()
            if result.example_id != example_id:  # a compressor that reorders would mislabel every line after
                raise RagsiftError(f"compressor '{label}' answered example '{result.example_id}' where "
                                   f"'{example_id}' was next: its results must come in input order.")
            record = result.to_record()
            record = {"id": record.pop("id"), "question": question, **record, "compressor": label}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            counts[0] += 1
            counts[1] += result.is_empty

    if to_stdout:
        write_all(sys.stdout)
    else:
        _write_file(args.output, write_all, counts, replace_partial=args.force)
    if not args.quiet:
        print(f"compressed {counts[0]} examples with '{label}' ({counts[1]} empty compressions)", file=sys.stderr)
    return 0


def _write_file(path: str, write: Callable[[TextIO], None], counts: list[int], *, replace_partial: bool = False) -> None:
    """Run ``write`` on an atomic output file; a failure says how much was kept, and where."""
    from ragsift.output_files import AtomicOutput, describe_os_error

    output = AtomicOutput(path, replace_partial=replace_partial)
    try:
        with output as out:
            write(out)
    except (RagsiftError, OSError, KeyboardInterrupt) as exc:
        kept = "" if output.special else f"{path} was not written"
        if output.partial_path is not None:
            kept += f"; the {counts[0]} record(s) written before the failure are in {output.partial_path}"
        if isinstance(exc, KeyboardInterrupt):
            print(f"ragsift: interrupted{': ' + kept if kept else ''}.", file=sys.stderr)
            raise
        problem = describe_os_error(exc, path) if isinstance(exc, OSError) else str(exc)
        raise RagsiftError(f"{problem}\n{kept}." if kept else problem) from exc


def _cmd_label(args: argparse.Namespace) -> int:
    from ragsift.datasets import resolve_data
    from ragsift.datasets.holdout import refuse_evaluation_data
    from ragsift.disk_cache import check_cache_path
    from ragsift.errors import OutputError
    from ragsift.labelers.output import manifest_path, write_labels
    from ragsift.output_files import check_output, describe_os_error, partial_path
    from ragsift.registry import build_plugin

    check_output(args.output, [args.input], force=args.force, companions=[manifest_path(args.output)])
    params = _json_object(args.params, "--params") if args.params else {}
    labeler = build_plugin("labeler", {"name": args.labeler, **params}, "--labeler")
    cache = getattr(labeler.params, "cache", None)
    if cache:  # appended to as the labeler runs: the output checks, before anything is read or written
        check_cache_path(cache, [args.input, args.output, manifest_path(args.output), partial_path(args.output)],
                         flag="--params cache")

    source = resolve_data(None, args.input, args.format)  # a file, or a named dataset (ragsift datasets)
    examples = list(source.load(args.limit))
    refuse_evaluation_data(source.path, examples, "ragsift label", name=source.name)
    try:
        manifest = write_labels(labeler, examples, args.output, input_path=source.path, replace_partial=args.force)
    except OSError as exc:
        raise OutputError(describe_os_error(exc, args.output)) from None
    kinds = ", ".join(f"{k} {n}" for k, n in manifest["output"]["kinds"].items())
    print(f"wrote {manifest['output']['records']} records ({kinds}) to {args.output}; manifest {manifest_path(args.output)}",
          file=sys.stderr)
    return 0


def _json_object(text: str, flag: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise RagsiftError(f"{flag}: not valid JSON ({exc}); give a JSON object such as '{{\"seed\": 1}}'.") from None
    if not isinstance(value, dict):
        raise RagsiftError(f"{flag}: expected a JSON object such as '{{\"seed\": 1}}'; got {text!r}.")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragsift",
        formatter_class=_F,
        description="Evidence selection for RAG: split, score, select and assemble retrieved sentences.",
        epilog="examples:\n  ragsift plugins\n  ragsift config show exit-offline\n"
        "  ragsift compress --config configs/bm25.toml --output out.jsonl\n"
        "  ragsift evaluate --config configs/quickstart.toml --out runs/quickstart --limit 8\n"
        "  ragsift tune --config configs/tune/cascades.toml --out runs/tune-cascades\n"
        "  ragsift serve --config bm25",
    )
    from ragsift.version import __version__

    parser.add_argument("--version", action="version", version=f"ragsift {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plugins", help="list every stage's plugins", formatter_class=_F,
                       description="List the registered plugins of every stage with their source, what each does, and its config fields.",
                       epilog="examples:\n  ragsift plugins\n  ragsift plugins --stage scorer\n  ragsift plugins --json")
    from ragsift.registry import STAGES

    p.add_argument("--stage", type=one_of(STAGES, "stage"), help="only this stage (splitter, scorer, selector, ...)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_plugins)

    p = sub.add_parser("config", help="list, validate or show configs", formatter_class=_F,
                       description="List the configs, check config files, or show a config with every default filled in.",
                       epilog="examples:\n  ragsift config list\n  ragsift config validate configs/exit.toml\n"
                       "  ragsift config show ecorag-offline")
    csub = p.add_subparsers(dest="config_command", required=True)
    ls = csub.add_parser("list", help="list the configs a name finds: description and compressors", formatter_class=_F,
                         description="List every run config that -c NAME finds (./configs/, then the configs ragsift "
                         "ships): its name, the first sentence of its description and its compressors' labels "
                         "(give one as -c NAME#LABEL).",
                         epilog="examples:\n  ragsift config list\n  ragsift config list --json")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=_cmd_config_list)
    v = csub.add_parser("validate", help="check config files (builds every plugin, checks model files, loads no weights)",
                        formatter_class=_F,
                        epilog="examples:\n  ragsift config validate configs/*.toml")
    v.add_argument("files", nargs="+", help="config files or names in configs/")
    v.set_defaults(func=_cmd_config_validate)
    s = csub.add_parser("show", help="show a config resolved with defaults", formatter_class=_F,
                        epilog="examples:\n  ragsift config show exit-offline\n  ragsift config show configs/bm25.toml")
    s.add_argument("name", help="a config name in configs/ or a path")
    s.add_argument("--json", action="store_true", help="JSON instead of TOML")
    s.set_defaults(func=_cmd_config_show)

    p = sub.add_parser("compress", help="compress a dataset to JSONL", formatter_class=_F,
                       description="Compress every example of a dataset and stream one JSON line per example "
                       "(its id and question, per-sentence scores and keep decisions, compressed text, stage timings).",
                       epilog="examples:\n  ragsift compress --config configs/bm25.toml --output bm25.jsonl\n"
                       "  ragsift compress --config exit-offline --input data.json --format hotpotqa --limit 5 -o out.jsonl\n"
                       "  ragsift compress -c bm25 --set compressor.selector.k=3 -o top3.jsonl\n"
                       "  ragsift compress -c cascades#bm25-docs3 -o docs3.jsonl  # one compressor of a config with several\n"
                       "  cat data.jsonl | ragsift compress -c bm25 -i - -f retrieval > out.jsonl  # standard input")
    p.add_argument("--config", "-c", required=True, help="config file or name in configs/; CONFIG#LABEL picks one "
                   "compressor of a config with several")
    p.add_argument("--input", "-i", help="dataset file, or - for standard input (default: the config's [dataset] path, "
                   "else the bundled HotpotQA sample)")
    p.add_argument("--format", "-f", help="dataset loader name (default: detected from the file's first bytes, standard "
                   "input's too)")
    p.add_argument("--output", "-o", help="output JSONL file (default: stdout); written under a temporary name and "
                   "renamed into place when complete")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--limit", type=positive_int, help="only the first N examples")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_set_option(p)
    p.set_defaults(func=_cmd_compress)

    p = sub.add_parser("label", help="make training data for a scorer", formatter_class=_F,
                       description="Write labelled training records (JSONL) made by a labeler from a dataset with gold evidence. "
                       "The evaluation data is refused (docs/datasets.md).",
                       epilog="examples:\n  ragsift label --labeler exit-pairs --input train.json --output exit-train.jsonl\n"
                       "  ragsift label -l exit-pairs -i train.json -o pairs.jsonl --params '{\"seed\": 1}'")
    p.add_argument("--labeler", "-l", required=True, help="labeler name (see: ragsift plugins --stage labeler)")
    p.add_argument("--input", "-i", required=True, help="dataset file with gold evidence, or a named dataset")
    p.add_argument("--format", "-f", help="dataset loader name (default: detected)")
    p.add_argument("--output", "-o", required=True, help="output JSONL file")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--params", help="the labeler's params as a JSON object")
    p.add_argument("--limit", type=positive_int, help="only the first N examples")
    p.set_defaults(func=_cmd_label)

    from ragsift.calibration.command import add_calibrate_command
    from ragsift.datasets.command import add_datasets_command
    from ragsift.evaluation.report.command import add_report_command
    from ragsift.evaluation.report.power_command import add_power_command
    from ragsift.evaluation.run.command import add_evaluate_command, add_merge_command
    from ragsift.evaluation.run.compare_command import add_compare_command
    from ragsift.evaluation.run.tune_command import add_tune_command
    from ragsift.service.command import add_serve_command
    from ragsift.training.command import add_train_command

    add_evaluate_command(sub)
    add_merge_command(sub)
    add_compare_command(sub)
    add_report_command(sub)
    add_power_command(sub)
    add_tune_command(sub)
    add_calibrate_command(sub)
    add_train_command(sub)
    add_serve_command(sub)
    add_datasets_command(sub)
    return parser


def _silence_progress_bars() -> None:
    """``--quiet``: no progress bar from the libraries that load models either (transformers,
    the Hub client, and tqdm's default for bars that name no setting)."""
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:  # imported already: its setting was read at import time
        sys.modules["transformers"].utils.logging.disable_progress_bar()


def main(argv: Sequence[str] | None = None) -> int:
    from ragsift.openmp import prefer_passive_wait

    prefer_passive_wait()  # the CLI owns its process: OpenMP threads sleep while they wait (ragsift/openmp.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "quiet", False):
        _silence_progress_bars()
    try:
        return int(args.func(args) or 0)
    except RagsiftError as exc:
        print(f"ragsift: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a file the command reads or writes: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"ragsift: error: {where}{exc.strerror or exc}.", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("RAGSIFT_TRACEBACK"):
            raise
        print(f"ragsift: error: unexpected {type(exc).__name__}: {exc}\n(a bug in ragsift or in a plugin; "
              "set RAGSIFT_TRACEBACK=1 to see where it happened)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
