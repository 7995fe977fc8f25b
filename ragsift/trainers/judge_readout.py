"""Readout training of ECoRAG's evaluator (the ``causal`` judge): is this evidence set enough?

ECoRAG fine-tunes Flan-T5-large to emit ``<EVI>`` when the collected evidence suffices. Its
training data is not public; here, as for EXIT's readout, the judge's causal LM stays frozen and
only a vector and bias read from its last hidden state after the judge's own prompt are learned
(a logistic regression by L-BFGS, :func:`ragsift.trainers.yes_no_readout.fit_readout`), so the
trained judge runs at exactly the zero-shot judge's cost.

Training sets mimic what the reflection selector shows the judge: each question's sentences
(HotpotQA's own) ranked by the ``ranker`` scorer (BM25 by default), candidate sets top-``step``,
top-2 x ``step``, ... up to ``max_sentences`` (the selector's :func:`candidate_sizes`), each
sentence shown through the selector's ``evidence_template``; plus the gold supporting facts alone
(in document order), so every question has an evidential set. Label (a proxy for "the reader can
answer", documented as such): a set is evidential when it holds every supporting fact.

Checkpoints hold the hidden states computed so far (``checkpoint/features.safetensors``, every
``checkpoint_every`` batches); ``--resume`` continues the forward passes and the deterministic fit
gives the same readout. The report's items are candidate sets, not sentences: read its ROC-AUC
and threshold curve (the judge's ``threshold``), not its top-k rows.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.evidence import evidence_mask
from ragsift.judges.causal import CausalJudge
from ragsift.lm import YesNoEngine
from ragsift.lm.readout import save_readout
from ragsift.plugin import Params, PluginSpec
from ragsift.registry import build_plugin
from ragsift.selectors.base import rank_by_score
from ragsift.selectors.reflection import candidate_sizes
from ragsift.trainers.base import DevPredictions, TrainingJob, TrainingResult
from ragsift.trainers.yes_no_readout import YesNoReadoutTrainer, fit_readout
from ragsift.types import Example

__all__ = ["JudgeReadoutTrainer", "JudgeReadoutTrainerParams", "evidence_sets"]

ARTEFACT = "readout.safetensors"


class JudgeReadoutTrainerParams(Params):
    #: the ``causal`` judge whose readout is trained (its model, template, chat settings)
    judge: dict[str, Any] = Field(default_factory=lambda: {"name": "causal"})
    #: the scorer that ranks sentences into candidate sets (ECoRAG: its dual encoder)
    ranker: PluginSpec = Field(default_factory=lambda: {"name": "bm25"})
    step: int = Field(4, ge=1)
    max_sentences: int = Field(20, ge=1)
    evidence_template: str = "{title}: {sentence}"
    #: prompts per forward pass
    batch_size: int = Field(8, ge=1)
    #: L-BFGS iterations of the logistic regression
    steps: int = Field(100, ge=1)
    l2: float = Field(1e-2, ge=0)
    #: sets of only the first N development questions for the report (CPU cost)
    dev_questions: int | None = Field(None, ge=1)


def evidence_sets(example: Example, ranker: Any, step: int, max_sentences: int,
                  template: str) -> tuple[list[list[str]], list[bool]]:
    """The reflection's candidate sets of ``example`` under ``ranker`` plus the gold set, and whether
    each holds every supporting fact."""
    from ragsift.splitters.presplit import PresplitSplitter

    sentences = PresplitSplitter(fallback="sentencizer").split_all(example.documents)
    gold = np.asarray(evidence_mask(sentences, example.evidence or ()), dtype=bool)
    if not gold.any():
        return [], []
    items = [template.format(title=example.documents[s.doc_index].title, sentence=s.text) for s in sentences]
    ranked = rank_by_score(ranker.score(example, sentences))
    sets, labels = [], []
    for k in candidate_sizes(len(ranked), step, max_sentences):
        sets.append([items[i] for i in ranked[:k]])
        labels.append(bool(gold[ranked[:k]].sum() == gold.sum()))
    sets.append([items[i] for i in np.flatnonzero(gold)])
    labels.append(True)
    return sets, labels


class JudgeReadoutTrainer(YesNoReadoutTrainer):
    """Fits the readout of a frozen ``causal`` judge (see the module docstring)."""

    Params = JudgeReadoutTrainerParams  # type: ignore[assignment]
    uses_labeler: ClassVar[bool] = False

    def _judge(self) -> CausalJudge:
        judge = build_plugin("judge", {k: v for k, v in self.params.judge.items() if k != "readout"}, "JudgeReadoutTrainer judge")
        if not isinstance(judge, CausalJudge):
            raise ConfigError(f"JudgeReadoutTrainer: judge '{self.params.judge.get('name')}' is not the 'causal' judge; "
                              "a readout is trained on a causal LM's hidden state.")
        if judge.params.backend != "torch":
            raise ConfigError(f"JudgeReadoutTrainer: a readout is trained on the torch engine's hidden states; the judge's "
                              f"backend is {judge.params.backend!r}: use backend = \"torch\" (the default).")
        return judge

    def _sets(self, examples: list[Example], judge: CausalJudge) -> tuple[list[Any], np.ndarray, list[int]]:
        p = self.params
        ranker = build_plugin("scorer", p.ranker, "JudgeReadoutTrainer ranker")
        prompts: list[Any] = []
        labels: list[bool] = []
        per_question: list[int] = []
        for example in examples:
            sets, set_labels = evidence_sets(example, ranker, p.step, p.max_sentences, p.evidence_template)
            prompts.extend(judge.encoded_prompts(example.question, sets) if sets else [])
            labels.extend(set_labels)
            per_question.append(len(sets))
        return prompts, np.asarray(labels, dtype=np.float64), per_question

    def train(self, job: TrainingJob) -> TrainingResult:
        p = self.params
        judge = self._judge()
        prompts, labels, _ = self._sets(job.train, judge)
        if len(set(labels.tolist())) < 2:
            raise ConfigError("JudgeReadoutTrainer: the training sets are all evidential or all not; check the data.")
        engine = judge.engine
        assert isinstance(engine, YesNoEngine)  # _judge refuses other backends before any model loads
        features = self._features(job, engine, prompts)
        with job.progress_bar(p.steps, "readout") as bar:
            weight, bias, history = fit_readout(features, labels, p.steps, p.l2, bar)
        save_readout(job.output / ARTEFACT, weight, bias)
        judge_spec = {**judge.config(), "name": p.judge["name"], "readout": str(job.output / ARTEFACT)}
        return TrainingResult(
            artefacts=[ARTEFACT],
            history=history,
            dev=self._dev(job, judge, weight, bias),
            hyperparameters={**self.config(), "seed": job.seed, "training_sets": len(prompts),
                             "evidential_sets": int(labels.sum()), "hidden_size": int(features.shape[1])},
            base_model=judge.params.model,
            labels="candidate sets of the reflection selector (ranked by the ranker) plus the gold set; "
                   "evidential = holds every supporting fact",
            scorer=judge_spec,
            extra={"train_accuracy": history[-1]["train_accuracy"]},
        )

    def _dev(self, job: TrainingJob, judge: CausalJudge, weight: np.ndarray, bias: float) -> DevPredictions | None:
        if not job.dev:
            return None
        examples = job.dev[: self.params.dev_questions] if self.params.dev_questions else job.dev
        prompts, labels, counts = self._sets(examples, judge)
        if not prompts:
            return None
        hidden = judge.engine.hidden_states(prompts).astype(np.float64)
        scores = 1.0 / (1.0 + np.exp(-(hidden @ weight.astype(np.float64) + bias)))
        predictions, start = DevPredictions(), 0
        for example, n in zip(examples, counts, strict=True):
            if n:
                y = labels[start : start + n].astype(bool)
                predictions.add(example.id, scores[start : start + n], y,
                                ["evidential" if v else "not_evidential" for v in y])
            start += n
        return predictions
