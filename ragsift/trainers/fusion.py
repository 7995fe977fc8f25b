"""The learned-fusion trainer: features from other scorers (:mod:`ragsift.scorers.fusion_features`)
and gradient-boosted trees (:mod:`ragsift.trainers.boosting`) on every sentence of every training
question, labelled by its gold supporting facts.

Features are the slow part (component scorers may run a model); they are cached per block of
questions under ``OUTPUT/cache/`` (safetensors), so ``--resume`` recomputes none that were
finished. The fitted model is ``OUTPUT/fusion.json`` (loaded by the ``learned-fusion`` scorer):
it names its component features, never their specs; a component of this config's own
(``components``, or a ``label -> spec`` table under ``scorers``) must be given again in the
scorer's ``components`` (the card's ``scorer`` entry says so).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from ragsift.errors import ConfigError
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
from ragsift.trainers.checkpoint import read_json_state, read_saved, save_tensors
from ragsift.types import Example

__all__ = ["FusionTrainer", "FusionTrainerParams"]

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


class FusionTrainer(Trainer):
    """Fits the learned-fusion scorer (see the module docstring)."""

    Params = FusionTrainerParams

    def _features(self, job: TrainingJob, features: FusionFeatures, examples: list[Example], split: str
                  ) -> tuple[list[np.ndarray], list[np.ndarray], list[list[str]]]:
        from safetensors.numpy import load_file, save_file

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
                if path.is_file():
                    stored = read_saved(path, load_file)
                    block_rows = [stored[f"x{i}"] for i in range(len(block))]
                else:
                    block_rows = [features.compute(e, s) for e, s in zip(block, split_sentences, strict=True)]
                    cache.mkdir(parents=True, exist_ok=True)
                    save_tensors(path, {f"x{i}": np.ascontiguousarray(x) for i, x in enumerate(block_rows)}, save_file)
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
