"""``ragsift train``: run a trainer plugin from a training config, then write its report and card."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.cli_types import positive_int
from ragsift.config_files import REPOSITORY
from ragsift.errors import ConfigError, OutputError
from ragsift.provenance import device_info, stamp

if TYPE_CHECKING:
    from ragsift.training.config import TrainConfig

__all__ = ["add_train_command", "run_training", "TrainOptions", "output_folder", "SHIPPED_MODELS", "DEFAULT_RUNS"]

#: the models the repository ships (their README figures come from them): written only when named with --output
SHIPPED_MODELS = REPOSITORY / "models"
#: where a config whose [training] output is a shipped model trains by default (relative to the working directory)
DEFAULT_RUNS = Path("runs") / "train"

_EPILOG = """examples:
  ragsift train --config configs/train/fusion.toml
  ragsift train -c fusion --output runs/fusion-try --limit 50
  ragsift train -c fusion --resume            # after an interruption: continue from the checkpoint

writes OUTPUT/<artefact> (the scorer's weights), OUTPUT/report.json, OUTPUT/loss.png,
OUTPUT/threshold.png, OUTPUT/card.json and OUTPUT/README.md (the model card, with Hugging Face
metadata: the folder uploads to the Hub as it is); checkpoints and feature caches go to
OUTPUT.work/ beside it (delete it once you will not --resume). OUTPUT is
--output, else the config's [training] output; a shipped model (models/ of the repository)
is replaced only when named with --output and --force: by default such a config trains into
runs/train/NAME. A folder that is not empty is refused unless --force (or --resume with its
checkpoint)."""


@dataclass
class TrainOptions:
    config: str
    output: str | None = None
    resume: bool = False
    #: replace the files of a non-empty output folder
    force: bool = False
    limit: int | None = None
    progress: bool = True
    argv: list[str] | None = None


def _seed_everything(seed: int) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.manual_seed(seed)


def _load(path: Path, fmt: str | None, limit: int | None, role: str) -> tuple[list[Any], dict[str, Any]]:
    from ragsift.datasets import resolve_data
    from ragsift.datasets.file_loader import check_input_file
    from ragsift.datasets.holdout import refuse_evaluation_data

    source = resolve_data(None, path, fmt)  # a file, or a named dataset (ragsift datasets)
    if source.name is None:
        if not path.exists():
            raise ConfigError(f"[data] {role}: no such file {path}.")
        check_input_file(path, f"a {role} data file")
    examples = list(source.load(limit))
    # the evaluation data, by name, content hash, question id or question text
    sha = refuse_evaluation_data(source.path, examples, "ragsift train", name=source.name)
    named = {"name": source.name} if source.name else {}
    return examples, {"path": str(source.path), **named, "sha256": sha, "questions": len(examples)}


def output_folder(configured: str, given: str | None) -> tuple[Path, str | None]:
    """The output folder (``--output``, else the config's), and a note when the config's output,
    a shipped model under ``models/``, was replaced by ``runs/train/NAME``."""
    if given:
        return Path(given), None
    output = Path(configured)  # relative to the working directory
    shipped, where = SHIPPED_MODELS.resolve(), output.resolve()
    if where != shipped and shipped not in where.parents:
        return output, None
    instead = DEFAULT_RUNS / output.name
    return instead, (f"writing {instead}, not the shipped model {configured} (to replace that, pass "
                     f"--output {configured} --force)")


def _check_output(output: Path, resume: bool, force: bool) -> None:
    from ragsift.trainers.base import work_folder

    if output.exists() and not output.is_dir():
        raise OutputError(f"--output {output} is a file; give a folder (new or empty) for the model.")
    if (work_folder(output) / "checkpoint").exists():
        if not resume:
            raise ConfigError(f"{output} holds a checkpoint of an earlier run: pass --resume to continue it, or --output "
                              "for a new folder (or delete its checkpoint/ to start again there).")
        return
    if output.is_dir() and any(output.iterdir()) and not force:
        shown = ", ".join(sorted(p.name for p in output.iterdir())[:4])
        raise OutputError(f"--output {output} is not empty ({shown}, ...) and holds no checkpoint to resume; training "
                          "would overwrite its files. Pass --force to replace them, or choose another --output.")


def _remove_if_unused(output: Path, created: bool) -> None:
    """After a failure: a folder this run created that holds nothing but the config copy goes."""
    if created and output.is_dir() and {p.name for p in output.iterdir()} <= {"train-config.toml"}:
        shutil.rmtree(output, ignore_errors=True)


def _config_as_trained(config: TrainConfig, output: Path) -> str:
    """The text kept beside the model: the config file as written, or, when it includes others,
    the merged table it amounts to (so the folder alone says how the model was trained), with
    portable paths as the card has them."""
    import tomli_w

    from ragsift.training.card import portable_paths

    if not config.included:
        return Path(config.source).read_text(encoding="utf-8")
    head = portable_paths(f"# {Path(config.source).resolve()} with what it includes: {' '.join(config.included)}", output)
    return f"{head}\n# (merged by ragsift train)\n{tomli_w.dumps(portable_paths(config.resolved_table(), output))}"


def run_training(options: TrainOptions) -> dict[str, Any]:
    """Train as the config says; return the model card (with ``output``, the folder written)."""
    from ragsift.registry import build_plugin
    from ragsift.trainers.base import TrainingJob
    from ragsift.training.card import write_card
    from ragsift.training.config import load_train_config, resolve_path
    from ragsift.training.report import write_report

    config = load_train_config(options.config)
    trainer = build_plugin("trainer", config.trainer, f"{config.source} [trainer]")
    labeler = None if config.labeler is None else build_plugin("labeler", config.labeler, f"{config.source} [labeler]")
    if labeler is not None and not trainer.uses_labeler:
        raise ConfigError(f"{config.source}: trainer '{config.trainer['name']}' labels sentences from the data's gold "
                          "evidence and uses no [labeler]; remove the [labeler] table.")
    output, note = output_folder(config.training.output, options.output)
    _check_output(output, options.resume, options.force)
    limit = options.limit or config.data.limit
    train, train_info = _load(resolve_path(config.data.train), config.data.format, limit, "train")
    dev, dev_info = ([], None) if config.data.dev is None else _load(
        resolve_path(config.data.dev), config.data.format, options.limit or config.data.dev_limit, "dev")
    if dev_info is not None and dev_info["sha256"] == train_info["sha256"]:
        raise ConfigError(f"{config.source}: [data] train and dev are the same file; hold out development questions.")
    overlap = {e.id for e in train} & {e.id for e in dev}
    if overlap:
        raise ConfigError(f"{config.source}: {len(overlap)} questions are in both train and dev (e.g. {sorted(overlap)[0]}).")
    if note and options.progress:
        print(f"ragsift: {note}.", file=sys.stderr)
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    (output / "train-config.toml").write_text(_config_as_trained(config, output), encoding="utf-8")
    _seed_everything(config.training.seed)
    job = TrainingJob(train=train, dev=dev, output=output, seed=config.training.seed,
                      checkpoint_every=config.training.checkpoint_every, resume=options.resume,
                      progress=options.progress, labeler=labeler, train_file=train_info["path"])
    start = time.perf_counter()
    try:
        result = trainer.train(job)
    except Exception:
        _remove_if_unused(output, created)
        raise
    seconds = time.perf_counter() - start
    report = write_report(output, result.history, result.dev, config.training.max_empty)
    device = device_info()
    card = {
        "name": output.name,
        "description": config.description,
        "trainer": {"name": config.trainer["name"], "config": trainer.config()},
        "base_model": result.base_model,
        "scorer": result.scorer,
        "artefacts": result.artefacts,
        "labels": result.labels,
        "labeler": None if labeler is None else {"name": config.labeler["name"], **labeler.config()},  # type: ignore[index]
        "data": {"train": train_info, "development": dev_info},
        "seed": config.training.seed,
        "hyperparameters": result.hyperparameters,
        "training_seconds": round(seconds, 1),
        "resumed": options.resume,
        "machine": f"{device['machine']}, {device['cpu_count']} CPUs, torch threads {device.get('torch_threads')}",
        "report": report,
        "extra": result.extra,
        **stamp(),
        "command": " ".join(options.argv or ["ragsift", "train", "--config", options.config]),
        "config": str(config.source),
        **({"config_includes": config.included} if config.included else {}),
        "limit": options.limit,  # a smoke run: the card says so beside the config's description
    }
    card = write_card(output, card)
    return {**card, "output": str(output)}


def _cmd_train(args: argparse.Namespace) -> int:
    card = run_training(TrainOptions(config=args.config, output=args.output, resume=args.resume, force=args.force,
                                     limit=args.limit, progress=not args.quiet, argv=["ragsift", *sys.argv[1:]]))
    chosen = card["report"].get("chosen")
    summary = f"trained '{card['name']}' in {card['training_seconds']:.1f} s (written to {card['output']})"
    if chosen:
        summary += (f"; development ROC-AUC {card['report']['roc_auc']:.3f}, chosen {chosen['selector']} "
                    f"(evidence F1 {chosen['f1']:.3f})")
    print(summary, file=sys.stderr)
    return 0


def add_train_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``train`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "train", help="train a scorer from a training config", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EPILOG,
        description="Fit a scorer with a trainer plugin (see: ragsift plugins --stage trainer) on the config's training "
        "data, choose its selection on the development questions, and write the weights, a report and a model card.",
    )
    p.add_argument("--config", "-c", required=True, help="training config file or name in configs/train/")
    p.add_argument("--output", "-o", help="output folder (default: the config's [training] output)")
    p.add_argument("--resume", action="store_true", help="continue from the output folder's checkpoint")
    p.add_argument("--force", action="store_true", help="replace the files of an output folder that is not empty "
                   "(needed to retrain a shipped model: --output models/NAME --force)")
    p.add_argument("--limit", type=positive_int, help="only the first N training and development questions (smoke runs)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_train)
    return p
