"""``ragsift train``: run a trainer plugin from a training config, then write its report and card."""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.cli_types import positive_int
from ragsift.errors import ConfigError

__all__ = ["add_train_command", "run_training", "TrainOptions"]

EVALUATION_FILE = "hotpotqa-dev-sf100.json"

_EPILOG = """examples:
  ragsift train --config configs/train/fusion.toml
  ragsift train -c fusion --output runs/fusion-try --limit 50
  ragsift train -c fusion --resume            # after an interruption: continue from the checkpoint

writes OUTPUT/<artefact> (the scorer's weights), OUTPUT/report.json, OUTPUT/loss.png,
OUTPUT/threshold.png, OUTPUT/card.json and OUTPUT/README.md (the model card)."""


@dataclass
class TrainOptions:
    config: str
    output: str | None = None
    resume: bool = False
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


def _git_commit() -> str | None:
    from ragsift.training.config import REPOSITORY

    try:
        out = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _load(path: Path, fmt: str | None, limit: int | None, role: str) -> tuple[list[Any], dict[str, Any]]:
    from ragsift.datasets import load_examples
    from ragsift.labelers.output import file_sha256

    if path.name == EVALUATION_FILE:
        raise ConfigError(f"{path}: this is the evaluation file; never train or choose thresholds on it. Use data/training/.")
    if not path.is_file():
        raise ConfigError(f"[data] {role}: no such file {path}.")
    examples = list(load_examples(path, format=fmt, limit=limit))
    return examples, {"path": str(path), "sha256": file_sha256(path), "questions": len(examples)}


def run_training(options: TrainOptions) -> dict[str, Any]:
    """Train as the config says; return the model card."""
    from ragsift.registry import build_plugin
    from ragsift.trainers.base import TrainingJob
    from ragsift.training.card import write_card
    from ragsift.training.config import load_train_config, resolve_path
    from ragsift.training.report import write_report
    from ragsift.version import __version__

    config = load_train_config(options.config)
    trainer = build_plugin("trainer", config.trainer, f"{config.source} [trainer]")
    labeler = None if config.labeler is None else build_plugin("labeler", config.labeler, f"{config.source} [labeler]")
    if labeler is not None and not trainer.uses_labeler:
        raise ConfigError(f"{config.source}: trainer '{config.trainer['name']}' labels sentences from the data's gold "
                          "evidence and uses no [labeler]; remove the [labeler] table.")
    output = Path(options.output or config.training.output)  # relative to the working directory
    if output.exists() and (output / "checkpoint").exists() and not options.resume:
        raise ConfigError(f"{output} holds a checkpoint of an earlier run: pass --resume to continue it, or --output for a new folder.")
    limit = options.limit or config.data.limit
    train, train_info = _load(resolve_path(config.data.train), config.data.format, limit, "train")
    dev, dev_info = ([], None) if config.data.dev is None else _load(
        resolve_path(config.data.dev), config.data.format, options.limit or config.data.dev_limit, "dev")
    if dev_info is not None and dev_info["sha256"] == train_info["sha256"]:
        raise ConfigError(f"{config.source}: [data] train and dev are the same file; hold out development questions.")
    overlap = {e.id for e in train} & {e.id for e in dev}
    if overlap:
        raise ConfigError(f"{config.source}: {len(overlap)} questions are in both train and dev (e.g. {sorted(overlap)[0]}).")
    output.mkdir(parents=True, exist_ok=True)
    (output / "train-config.toml").write_text(Path(config.source).read_text(encoding="utf-8"), encoding="utf-8")
    _seed_everything(config.training.seed)
    job = TrainingJob(train=train, dev=dev, output=output, seed=config.training.seed,
                      checkpoint_every=config.training.checkpoint_every, resume=options.resume,
                      progress=options.progress, labeler=labeler)
    start = time.perf_counter()
    result = trainer.train(job)
    seconds = time.perf_counter() - start
    report = write_report(output, result.history, result.dev, config.training.max_empty)
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        threads = None
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
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch threads {threads}",
        "report": report,
        "extra": result.extra,
        "ragsift_version": __version__,
        "git_commit": _git_commit(),
        "command": " ".join(options.argv or ["ragsift", "train", "--config", options.config]),
        "config": str(config.source),
    }
    write_card(output, card)
    return card


def _cmd_train(args: argparse.Namespace) -> int:
    card = run_training(TrainOptions(config=args.config, output=args.output, resume=args.resume, limit=args.limit,
                                     progress=not args.quiet, argv=["ragsift", *sys.argv[1:]]))
    chosen = card["report"].get("chosen")
    summary = f"trained '{card['name']}' in {card['training_seconds']:.1f} s"
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
    p.add_argument("--limit", type=positive_int, help="only the first N training and development questions (smoke runs)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_train)
    return p
