"""The trainer stage: training examples -> a fitted scorer artefact in an output folder.

A trainer is a plugin (``ragsift plugins --stage trainer``) run by ``ragsift train``. The
command loads the data, seeds every generator, hands the trainer a :class:`TrainingJob`, and
afterwards writes what every trainer shares: the training report (loss curve, ROC-AUC,
confusion matrix per sample type, threshold and top-k curves on the development questions)
and the model card. A trainer only fits, checkpoints, saves its artefact and returns a
:class:`TrainingResult` with its loss history and its scores of the development sentences.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.labelers.base import Labeler
from ragsift.plugin import Plugin
from ragsift.types import Example, Sentence

__all__ = ["Trainer", "TrainingJob", "TrainingResult", "DevPredictions", "sentence_kinds"]


def sentence_kinds(example: Example, sentences: Sequence[Sentence]) -> tuple[np.ndarray, list[str]]:
    """Gold labels and sample types of an example's sentences: ``positive``, ``hard_negative``
    (another sentence of a supporting document) or ``distractor_negative`` (any other document)."""
    gold = np.asarray(evidence_mask(sentences, example.evidence or ()), dtype=bool)
    gold_docs = {s.doc_index for s, g in zip(sentences, gold, strict=True) if g}
    kinds = ["positive" if g else "hard_negative" if s.doc_index in gold_docs else "distractor_negative"
             for s, g in zip(sentences, gold, strict=True)]
    return gold, kinds


@dataclass
class DevPredictions:
    """A trainer's scores of every development sentence, grouped by question."""

    example_ids: list[str] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    kinds: list[list[str]] = field(default_factory=list)

    def add(self, example_id: str, scores: np.ndarray, labels: np.ndarray, kinds: list[str]) -> None:
        self.example_ids.append(example_id)
        self.scores.append(np.asarray(scores, dtype=np.float64))
        self.labels.append(np.asarray(labels, dtype=bool))
        self.kinds.append(list(kinds))


@dataclass
class TrainingResult:
    """What a trainer reports back to the command."""

    #: files the trainer wrote in the output folder (relative paths): the artefact a scorer loads
    artefacts: list[str]
    #: one entry per step: ``step``, ``train_loss`` and optionally ``dev_loss``
    history: list[dict[str, float]]
    dev: DevPredictions | None
    hyperparameters: dict[str, Any]
    #: the model the artefact builds on (``None`` for models fitted from scratch)
    base_model: str | None = None
    #: how the training labels were made
    labels: str = ""
    #: the scorer spec that loads the artefact (for the card and configs)
    scorer: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def work_folder(output: Path) -> Path:
    """Where a training run into ``output`` keeps its checkpoint and caches: ``OUTPUT.work`` beside it."""
    return output.with_name(f"{output.name}.work")


@dataclass
class TrainingJob:
    """Everything a trainer gets: data, where to write, and the shared settings."""

    train: list[Example]
    dev: list[Example]
    output: Path
    seed: int = 0
    checkpoint_every: int = 50
    resume: bool = False
    progress: bool = True
    labeler: Labeler | None = None
    #: the training data file (for messages about the data; "" when the data came from elsewhere)
    train_file: str = ""

    @property
    def work_dir(self) -> Path:
        """``OUTPUT.work/`` beside the model folder: checkpoints and feature caches, kept out of the
        model folder so that it holds only the model and uploads as it is (:func:`work_folder`)."""
        return work_folder(self.output)

    @property
    def checkpoint_dir(self) -> Path:
        return self.work_dir / "checkpoint"

    @property
    def cache_dir(self) -> Path:
        return self.work_dir / "cache"

    def progress_bar(self, total: int, desc: str, initial: int = 0) -> Any:
        """A tqdm bar on stderr (disabled with ``--quiet``); trainers show the loss as its postfix."""
        import sys

        from tqdm import tqdm

        return tqdm(total=total, initial=initial, desc=desc, disable=not self.progress, file=sys.stderr, dynamic_ncols=True)


class Trainer(Plugin):
    """Fits a scorer on a :class:`TrainingJob` and saves it in ``job.output``."""

    stage: ClassVar[str] = "trainer"
    #: every training report computes ROC-AUC (scikit-learn) and draws its figures (matplotlib)
    extras: ClassVar[tuple[str, ...]] = ("train",)
    #: whether the trainer learns from a labeler's records (``[labeler]`` in the training config)
    uses_labeler: ClassVar[bool] = False

    def labelled(self, job: TrainingJob, default: dict[str, Any], both: bool = True) -> tuple[Labeler, list[Any]]:
        """The labeler (the config's, else ``default``) and its records of the training examples;
        with ``both``, records of both labels or a ConfigError."""
        from ragsift.registry import build_plugin

        owner = type(self).__name__
        labeler = job.labeler or build_plugin("labeler", default, f"{owner} labeler")
        records = list(labeler.label(job.train))
        if both and (not records or len({r.label for r in records}) < 2):
            raise ConfigError(f"{owner}: the labeler gave no records with both labels; check the training data.")
        return labeler, records

    @staticmethod
    def labels_text(labeler: Labeler) -> str:
        """What the training card says the labels are: the labeler's name and config."""
        name = labeler.registered_name or type(labeler).__name__
        return f"records of the labeler {name} ({json.dumps(labeler.config(), sort_keys=True)})"

    @abstractmethod
    def train(self, job: TrainingJob) -> TrainingResult:
        """Fit, checkpoint every ``job.checkpoint_every`` steps (resuming when ``job.resume``),
        save the artefact and return the result."""
