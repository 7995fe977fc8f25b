"""The two-hop document ranker's trainer: boosted trees (:mod:`ragsift.trainers.boosting`) on
document rows labelled by whether the document holds gold supporting facts.

Each training question gives rows for three kinds of state of the greedy ranking (teacher forcing):
nothing kept yet (every document, first-hop features only); each gold document kept (every other
document, with the second-hop features given it: the bridge is found from the first gold
document); and the best non-gold document by the first component scorer kept (every other
document: the ranking recovers from a wrong first choice). How many documents a question has and
how many of them are gold is whatever the data says; no feature counts either.

The trees are monotone by default: a document's probability never falls as its similarity to the
question or to a kept document grows. HotpotQA's distractors were retrieved by the question, so
there a document that shares nothing with the question is likely the bridge; free trees learn
that (a document about anything at all would then rank first), which retrieval by the question
never shows. The constraint leaves the bridge to the second hop, where it belongs.

The development questions are ranked greedily by the fitted model (as the scorer ranks them); the
report's predictions are their documents' scores, and the card's ``extra`` holds the share of
development questions with every gold document in the top 2 / 3 / 4 / 5. The evaluation file is
refused by content hash and by question id, whatever it is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from ragsift.datasets.holdout import evaluation_ids, refuse_evaluation_data
from ragsift.errors import ConfigError
from ragsift.registry import build_plugin
from ragsift.scorers.bridge_documents import MODEL_FILE, BridgeDocumentModel, decreasing, greedy_ranking
from ragsift.scorers.bridge_features import BridgeContext, BridgeFeatures
from ragsift.scorers.feature_components import split_components
from ragsift.trainers.base import DevPredictions, Trainer, TrainingJob, TrainingResult
from ragsift.trainers.boosting import BoostingParams, fit_boosting
from ragsift.types import Example, Sentence

__all__ = ["BridgeDocumentTrainer", "BridgeDocumentTrainerParams", "gold_documents", "all_gold_within", "training_rows"]

RECALL_AT = (2, 3, 4, 5)


def gold_documents(example: Example) -> set[int]:
    """The documents that hold a gold evidence span."""
    return {span.doc_index for span in example.evidence or ()}


def all_gold_within(order: list[int], gold: set[int], k: int) -> bool:
    """Whether every gold document is among the first ``k`` of ``order``."""
    return gold <= set(order[:k])


def training_rows(features: BridgeFeatures, ctx: BridgeContext, gold: set[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One question's rows and labels (see the module docstring): nothing kept; each gold document
    kept; the first component's best non-gold document kept."""
    n = ctx.n_docs
    label = np.array([float(j in gold) for j in range(n)])
    xs, ys = [features.rows(ctx, range(n), None)], [label]
    first = ctx.first_hop[:, 2] if features.scorer_specs else ctx.first_hop[:, 0]  # the first component's rank
    distractors = [j for j in np.argsort(-first, kind="stable") if j not in gold]
    for kept in sorted(gold) + distractors[:1]:
        others = [j for j in range(n) if j != kept]
        if others:
            xs.append(features.rows(ctx, others, features.second_hop(ctx, kept)))
            ys.append(label[others])
    return xs, ys


class BridgeDocumentTrainerParams(BoostingParams):
    #: component sentence scorers whose best sentence per document are first-hop features: feature
    #: names (ragsift's ``bm25``, ``dual-encoder:minilm``, or a name of ``components``), or a
    #: ``label -> scorer spec`` table; the model file keeps the names only
    scorers: list[str] | dict[str, dict[str, Any]] = Field(default_factory=lambda: {"bm25": {"name": "bm25"}})
    #: component features of this config's own: feature name -> scorer spec (the trained model's
    #: scorer config must give them again as its ``components``)
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: how questions are split into sentences for the component scorers
    splitter: dict[str, Any] = Field(default_factory=lambda: {"name": "presplit", "fallback": "sentencizer"})
    steps: int = Field(200, ge=1)
    #: every feature but ``has_kept`` may only raise a document's probability as it grows (see the
    #: module docstring); false: free trees
    monotone: bool = True

    @model_validator(mode="after")
    def _known_components(self) -> BridgeDocumentTrainerParams:
        split_components(self.scorers, self.components, "BridgeDocumentTrainer scorers")
        return self


class BridgeDocumentTrainer(Trainer):
    """Fits the ``bridge-documents`` scorer (see the module docstring)."""

    Params = BridgeDocumentTrainerParams

    def _refuse_evaluation(self, job: TrainingJob) -> None:
        if job.train_file:
            refuse_evaluation_data(Path(job.train_file), job.train, "the bridge-documents trainer")
        shared = sorted({e.id for e in [*job.train, *job.dev]} & evaluation_ids())
        if shared:
            raise ConfigError(f"BridgeDocumentTrainer: {len(shared)} question(s) of the evaluation file (e.g. {shared[0]}) "
                              "in the training or development data; never train or choose on them. Use data/training/.")

    def _check_labels(self, job: TrainingJob) -> None:
        unlabelled = [e.id for e in job.train if e.evidence is None]
        where = f"{job.train_file}: " if job.train_file else ""
        if unlabelled:
            raise ConfigError(f"{where}BridgeDocumentTrainer: {len(unlabelled)} training question(s) have no gold evidence "
                              f"(e.g. {unlabelled[0]}); the ranker learns which documents hold supporting facts.")
        if not any(gold_documents(e) for e in job.train) or all(gold_documents(e) >= set(range(len(e.documents)))
                                                               for e in job.train):
            raise ConfigError(f"{where}BridgeDocumentTrainer: the training documents need both gold and non-gold ones.")

    def train(self, job: TrainingJob) -> TrainingResult:
        self._refuse_evaluation(job)
        self._check_labels(job)
        p = self.params
        scorers, own = split_components(p.scorers, p.components, "BridgeDocumentTrainer scorers")
        features = BridgeFeatures(scorers)
        features.warm_up()
        splitter = build_plugin("splitter", p.splitter, "BridgeDocumentTrainer splitter")

        def contexts(examples: list[Example], split: str) -> list[BridgeContext]:
            out = []
            with job.progress_bar(len(examples), f"features [{split}]") as bar:
                for example in examples:
                    sentences: list[Sentence] = splitter.split_all(example.documents)
                    out.append(features.context(example, sentences))
                    bar.update(1)
            return out

        train_ctx = contexts(job.train, "train")
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        for example, ctx in zip(job.train, train_ctx, strict=True):
            x, y = training_rows(features, ctx, gold_documents(example))
            xs += x
            ys += y
        x_train, y_train = np.concatenate(xs), np.concatenate(ys)
        dev_ctx = contexts(job.dev, "dev") if job.dev else []
        dev = None
        if dev_ctx:
            dx, dy = [], []
            for example, ctx in zip(job.dev, dev_ctx, strict=True):
                x, y = training_rows(features, ctx, gold_documents(example))
                dx += x
                dy += y
            dev = (np.concatenate(dx), np.concatenate(dy))
        settings = p.boosting_settings(job.seed, features.monotone if p.monotone else None)
        checkpoint = job.checkpoint_dir / "boosting.json"
        bar = job.progress_bar(settings.steps, "boosting")
        with bar:
            ensemble, history = fit_boosting(x_train, y_train, settings, dev=dev, checkpoint=checkpoint,
                                             checkpoint_every=job.checkpoint_every, resume=job.resume,
                                             on_step=lambda step, entry: bar.update(1))
        model = BridgeDocumentModel(features.scorer_specs, ensemble, features.names)
        model.save(job.output)

        predictions = DevPredictions()
        hits = dict.fromkeys(RECALL_AT, 0)
        for example, ctx in zip(job.dev, dev_ctx, strict=True):
            order, chosen = greedy_ranking(features, ensemble, ctx, range(ctx.n_docs))
            gold = gold_documents(example)
            for k in RECALL_AT:
                hits[k] += all_gold_within(order, gold, k)
            score = dict(zip(order, decreasing(chosen), strict=True))
            labels = np.array([j in gold for j in range(ctx.n_docs)])
            predictions.add(example.id, np.array([score[j] for j in range(ctx.n_docs)]), labels,
                            ["positive" if g else "distractor_negative" for g in labels])
        importance = np.zeros(len(features.names))
        for tree in ensemble.trees:
            inner = tree.children_left != -1
            np.add.at(importance, tree.feature[inner], 1)
        n_dev = len(job.dev)
        return TrainingResult(
            artefacts=[MODEL_FILE],
            history=history,
            dev=predictions if job.dev else None,
            hyperparameters={**self.config(), "seed": job.seed, "training_rows": int(len(y_train)),
                             "training_positives": int(y_train.sum()), "features": features.names},
            base_model=None,
            labels="gold documents (those holding a supporting fact); rows for nothing kept, each gold document kept, "
                   "and the first component's best non-gold document kept",
            scorer={"name": "bridge-documents", "model": str(Path(job.output)), **({"components": own} if own else {})},
            extra={"splits_per_feature": {n: int(c) for n, c in zip(features.names, importance, strict=True) if c},
                   "development_all_gold_within": {str(k): round(hits[k] / n_dev, 4) for k in RECALL_AT} if n_dev else {}},
        )
