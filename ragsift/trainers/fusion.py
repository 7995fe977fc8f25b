"""The learned-fusion trainer: features from other scorers (:mod:`ragsift.scorers.fusion_features`)
and gradient-boosted trees (:mod:`ragsift.trainers.boosting`) on every sentence of every training
question, labelled by its gold supporting facts.

Features are the slow part (component scorers may run a model); they are cached per block of
questions under ``OUTPUT.work/cache/`` (safetensors, each with the SHA-256 of its content: an
edited block is computed again, with a warning), so ``--resume`` recomputes none that were
finished; NaN and infinite features are refused naming the file, question and row. The fitted
model is ``OUTPUT/fusion.json`` (loaded by the ``learned-fusion`` scorer): it names its component
features, never their specs; a component of this config's own (``components``, or a
``label -> spec`` table under ``scorers``) must be given again in the scorer's ``components``
(the card's ``scorer`` entry says so).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from ragsift.errors import ConfigError, DataFormatError
from ragsift.registry import build_plugin
from ragsift.scorers.feature_components import split_components
from ragsift.scorers.fusion_features import FusionFeatures
from ragsift.scorers.learned_fusion import MODEL_FILE, FusionModel
from ragsift.trainers.base import (
    DevPredictions,
    Trainer,
    TrainingJob,
    TrainingResult,
    sentence_kinds,
)
from ragsift.trainers.boosting import BoostingParams, fit_boosting
from ragsift.trainers.checkpoint import CHECKSUM_KEY, read_json_state, read_saved, save_tensors, tensors_checksum
from ragsift.types import Example

__all__ = ["FusionTrainer", "FusionTrainerParams"]

log = logging.getLogger(__name__)

#: questions per cached feature block
BLOCK = 50


class FusionTrainerParams(BoostingParams):
    #: component sentence scorers: feature names (ragsift's ``bm25``, ``dual-encoder:minilm``, or
    #: a name of ``components``), or a ``label -> scorer spec`` table
    scorers: list[str] | dict[str, dict[str, Any]] = Field(default_factory=lambda: {"bm25": {"name": "bm25"}})
    #: scorers applied to whole documents (title + text), named the same way
    document_scorers: list[str] | dict[str, dict[str, Any]] = Field(default_factory=lambda: {"bm25": {"name": "bm25"}})
    #: component features of this config's own: feature name -> scorer spec
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: how training sentences are split (HotpotQA's own sentences by default)
    splitter: dict[str, Any] = Field(default_factory=lambda: {"name": "presplit", "fallback": "sentencizer"})

    @model_validator(mode="after")
    def _known_components(self) -> FusionTrainerParams:
        self.component_specs()
        return self

    def component_specs(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """(sentence scorers, document scorers: label -> spec; the specs of this config's own,
        which the trained model's scorer config must give as ``components``)."""
        scorers, own = split_components(self.scorers, self.components, "FusionTrainer scorers")
        documents, own_documents = split_components(self.document_scorers, self.components, "FusionTrainer document_scorers")
        clash = sorted(k for k in set(own) & set(own_documents) if own[k] != own_documents[k])
        if clash:  # the model file names a feature once; one name must mean one spec
            raise ConfigError(f"FusionTrainer: '{clash[0]}' names two different scorer specs; give them two names.")
        return scorers, documents, {**own, **own_documents}


def _load_block(name: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    from safetensors import safe_open

    with safe_open(name, framework="np") as f:
        # safe_open is not iterable: keys() is its way to list the tensors
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})  # noqa: SIM118


def _read_block(path: Path, shapes: list[tuple[int, int]]) -> list[np.ndarray] | None:
    """A cached block's feature rows, one array per question of ``shapes`` (rows, features); None
    (named in a warning: the block is computed again and rewritten) when its content does not
    match its checksum, it has none (an edit, or a block from before checksums: recomputing it
    is always safe and costs only time) or it does not hold the block's questions. A file that
    cannot be read at all is a DataFormatError naming it (:func:`read_saved`)."""
    stored, metadata = read_saved(path, _load_block)
    expected = metadata.get(CHECKSUM_KEY)
    if not expected:
        problem = "has no content checksum (written before checksums, or edited)"
    elif tensors_checksum(stored) != expected:
        problem = "does not match its content checksum (edited or corrupted)"
    elif set(stored) != {f"x{i}" for i in range(len(shapes))} or any(
            stored[f"x{i}"].shape != shape for i, shape in enumerate(shapes)):
        problem = "does not hold this block's questions"
    else:
        return [stored[f"x{i}"] for i in range(len(shapes))]
    log.warning("%s: this feature cache block %s; it is ignored and its features are computed again.", path, problem)
    return None


def _check_finite(block_rows: list[np.ndarray], block: list[Example], names: list[str], where: str, remedy: str) -> None:
    """Refuse NaN and infinite features (the trees' split search fails on them with an error that
    names nothing), naming where they are, the question and the sentence row."""
    for i, (x, example) in enumerate(zip(block_rows, block, strict=True)):
        bad = ~np.isfinite(x)
        if bad.any():
            # the first feature column with one: a component's own score comes before what is derived from it
            column = int(np.flatnonzero(bad.any(axis=0))[0])
            row = int(np.flatnonzero(bad[:, column])[0])
            raise DataFormatError(where, f"question {example.id!r} (x{i}), sentence row {row}",
                                  f"feature {names[column]!r} is {x[row, column]} ({int(bad.sum())} non-finite value(s) "
                                  f"in this question) {remedy}.")


class FusionTrainer(Trainer):
    """Fits the learned-fusion scorer (see the module docstring)."""

    Params = FusionTrainerParams

    def _features(self, job: TrainingJob, features: FusionFeatures, examples: list[Example], split: str
                  ) -> tuple[list[np.ndarray], list[np.ndarray], list[list[str]]]:
        from safetensors.numpy import save_file

        splitter = build_plugin("splitter", self.params.splitter, "FusionTrainer splitter")
        recipe = json.dumps([features.scorer_specs, features.document_specs, features.names, self.params.splitter], sort_keys=True)
        rows: list[np.ndarray] = []
        labels: list[np.ndarray] = []
        kinds: list[list[str]] = []
        cache = job.cache_dir
        bar = job.progress_bar(len(examples), f"features [{split}]")
        with bar:
            for start in range(0, len(examples), BLOCK):
                block = examples[start : start + BLOCK]
                content = json.dumps([[e.id, e.question, [[d.title, d.text] for d in e.documents]] for e in block])
                key = hashlib.sha256((recipe + content).encode()).hexdigest()[:16]  # features of exactly this text
                path = cache / f"{split}-{start // BLOCK:04d}-{key}.safetensors"
                split_sentences = [splitter.split_all(e.documents) for e in block]
                block_kinds = [sentence_kinds(e, s) for e, s in zip(block, split_sentences, strict=True)]
                shapes = [(len(s), len(features.names)) for s in split_sentences]
                block_rows = _read_block(path, shapes) if path.is_file() else None
                if block_rows is not None:
                    _check_finite(block_rows, block, features.names, str(path),
                                  f"in this feature cache block; delete {path} and run the same command again: its "
                                  "features are computed again")
                else:
                    block_rows = [features.compute(e, s) for e, s in zip(block, split_sentences, strict=True)]
                    data = job.train_file if split == "train" and job.train_file else f"the {split} data"
                    _check_finite(block_rows, block, features.names, data,
                                  "as computed by the component scorers (nothing was cached); the trees cannot "
                                  "split on NaN or an infinity: use a component that gives finite scores here")
                    tensors = {f"x{i}": np.ascontiguousarray(x) for i, x in enumerate(block_rows)}
                    metadata = {CHECKSUM_KEY: tensors_checksum(tensors)}
                    cache.mkdir(parents=True, exist_ok=True)
                    save_tensors(path, tensors, functools.partial(save_file, metadata=metadata))
                rows += block_rows
                labels += [g for g, _ in block_kinds]
                kinds += [k for _, k in block_kinds]
                bar.update(len(block))
        return rows, labels, kinds

    def _check_labels(self, job: TrainingJob) -> None:
        """Both kinds of gold label among the training sentences, checked before any feature is computed."""
        splitter = build_plugin("splitter", self.params.splitter, "FusionTrainer splitter")
        seen: set[bool] = set()
        for example in job.train:
            seen.update(bool(g) for g in sentence_kinds(example, splitter.split_all(example.documents))[0])
            if len(seen) == 2:
                return
        what = "no evidence sentence" if True not in seen else "no non-evidence sentence" if seen else "no sentence"
        where = f"{job.train_file}: " if job.train_file else ""
        raise ConfigError(f"{where}FusionTrainer: the training sentences need both evidence and non-evidence labels; "
                          f"the {len(job.train)} training question(s) have {what} (gold supporting facts). "
                          "Give training data with supporting facts, or more questions.")

    def train(self, job: TrainingJob) -> TrainingResult:
        self._check_labels(job)
        scorers, document_scorers, own = self.params.component_specs()
        features = FusionFeatures(scorers, document_scorers)
        features.warm_up()
        train_rows, train_labels, _ = self._features(job, features, job.train, "train")
        dev_rows, dev_labels, dev_kinds = self._features(job, features, job.dev, "dev") if job.dev else ([], [], [])
        x = np.concatenate(train_rows) if train_rows else np.zeros((0, len(features.names)))
        y = np.concatenate(train_labels).astype(np.float64) if train_labels else np.zeros(0)
        dev = (np.concatenate(dev_rows), np.concatenate(dev_labels).astype(np.float64)) if dev_rows else None
        settings = self.params.boosting_settings(job.seed)
        checkpoint = job.checkpoint_dir / "boosting.json"
        done = 0
        if job.resume and checkpoint.is_file():
            done = len(read_json_state(checkpoint)["history"])
        bar = job.progress_bar(settings.steps, "boosting", initial=done)

        def on_step(step: int, entry: dict[str, float]) -> None:
            bar.update(1)
            bar.set_postfix({k: f"{v:.4f}" for k, v in entry.items() if k != "step"})

        with bar:
            ensemble, history = fit_boosting(x, y, settings, dev=dev, checkpoint=checkpoint, checkpoint_every=job.checkpoint_every,
                                             resume=job.resume, on_step=on_step)
        model = FusionModel(features.scorer_specs, features.document_specs, ensemble, features.names)
        model.save(job.output)
        predictions = DevPredictions()
        for example, rows, labels, kinds in zip(job.dev, dev_rows, dev_labels, dev_kinds, strict=True):
            predictions.add(example.id, ensemble.probability(rows) if len(rows) else np.zeros(0), labels, kinds)
        importance = np.zeros(len(features.names))
        for tree in ensemble.trees:
            inner = tree.children_left != -1
            np.add.at(importance, tree.feature[inner], 1)
        return TrainingResult(
            artefacts=[MODEL_FILE],
            history=history,
            dev=predictions if job.dev else None,
            hyperparameters={**self.config(), "seed": job.seed, "training_sentences": int(len(y)),
                             "training_positives": int(y.sum()), "features": features.names},
            base_model=None,
            labels="gold supporting facts: every sentence of every training question (evidence or not)",
            scorer={"name": "learned-fusion", "model": str(Path(job.output)), **({"components": own} if own else {})},
            extra={"splits_per_feature": {n: int(c) for n, c in zip(features.names, importance, strict=True) if c}},
        )
