"""Readout-only training of EXIT's Yes/No classifier: the causal LM stays frozen and only the
vector and bias read from its last hidden state are learned.

With the model frozen, EXIT's score ``sigmoid(l_yes - l_no)`` is ``sigmoid((w_yes - w_no) . h)`` of
the final hidden state ``h`` at the prompt's last position, so learning that vector (and a bias) is
a logistic regression on ``h``. The trainer runs each labelled record's prompt once through the
Yes/No engine (:meth:`ragsift.lm.YesNoEngine.hidden_states`, the prompt encoding of the scorer),
keeping ``h`` (checkpointed every ``checkpoint_every`` batches; ``--resume`` continues the
forward passes), then fits the logistic regression by full-batch L-BFGS in float64 on standardized
features with an L2 penalty, and folds the standardization back into ``weight`` and ``bias``.
The result, ``readout.safetensors``, is loaded by the ``causal-yes-no`` scorer's ``readout``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.lm import EXIT_TEMPLATE, YesNoEngine, YesNoPromptEncoder, resolve_max_length
from ragsift.lm.readout import save_readout
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.output_files import write_text_atomically
from ragsift.plugin import Params
from ragsift.registry import build_plugin
from ragsift.scorers.causal_yes_no import CausalYesNoScorer
from ragsift.trainers.base import (
    DevPredictions,
    Trainer,
    TrainingJob,
    TrainingResult,
    sentence_kinds,
)
from ragsift.trainers.checkpoint import read_json_state, read_saved, save_tensors

__all__ = ["YesNoReadoutTrainer", "YesNoReadoutTrainerParams", "fit_readout", "dev_predictions"]

DEFAULT_LABELER = {"name": "exit-pairs"}
ARTEFACT = "readout.safetensors"


class YesNoReadoutTrainerParams(Params):
    #: the frozen causal LM: Hub id, folder, GGUF file or package:PKG/PATH
    base_model: str = OFFLINE_SMOLLM2
    #: the scorer's prompt, with {query}, {context} and {sentence}
    template: str = EXIT_TEMPLATE
    #: prompts per forward pass
    batch_size: int = Field(8, ge=1)
    device: str = "auto"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    overflow: Literal["error", "head-tail"] = "error"
    max_length: int | None = Field(None, ge=8)
    #: L-BFGS iterations of the logistic regression
    steps: int = Field(100, ge=1)
    #: L2 penalty on the (standardized) weights, added to the mean log loss as l2 / 2 * |w|^2
    l2: float = Field(1e-2, ge=0)
    #: score only the first N development questions for the report (every sentence; CPU cost)
    dev_questions: int | None = Field(None, ge=1)


def fit_readout(features: np.ndarray, labels: np.ndarray, steps: int, l2: float,
                progress: Any = None) -> tuple[np.ndarray, float, list[dict[str, float]]]:
    """Logistic regression of ``labels`` on ``features`` (rows): (weight, bias, loss per step)."""
    import torch

    x = torch.as_tensor(features, dtype=torch.float64)
    y = torch.as_tensor(labels, dtype=torch.float64)
    mean, std = x.mean(0), x.std(0, unbiased=False).clamp_min(1e-6)
    z = (x - mean) / std
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], lr=1.0, max_iter=1, line_search_fn="strong_wolfe")

    def objective() -> Any:
        return torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + 0.5 * l2 * (w @ w)

    def closure() -> Any:
        optimizer.zero_grad()
        loss = objective()
        loss.backward()
        return loss

    history = []
    for step in range(steps):
        optimizer.step(closure)
        with torch.no_grad():
            logits = z @ w + b
            loss = float(torch.nn.functional.binary_cross_entropy_with_logits(logits, y))
            accuracy = float(((logits > 0).double() == y).double().mean())
        history.append({"step": step + 1, "train_loss": loss, "train_accuracy": accuracy})
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{loss:.4f}")
    with torch.no_grad():
        weight = (w / std).numpy()
        bias = float(b[0] - (w * mean / std).sum())
    return weight, bias, history


class YesNoReadoutTrainer(Trainer):
    """Fits the readout of a frozen causal LM's Yes/No classifier (see the module docstring)."""

    Params = YesNoReadoutTrainerParams
    extras: ClassVar[tuple[str, ...]] = ("models", "train")
    uses_labeler: ClassVar[bool] = True

    def _features(self, job: TrainingJob, engine: YesNoEngine, prompts: list[Any]) -> np.ndarray:
        from safetensors.numpy import load_file, save_file

        folder = job.checkpoint_dir
        done: list[np.ndarray] = []
        if job.resume and (folder / "state.json").is_file():
            state = read_json_state(folder / "state.json", folder)
            if state.get("records") != len(prompts):
                raise ConfigError(f"{folder}: the checkpoint holds features of {state.get('records')} records; "
                                  f"this run has {len(prompts)}. Use a new --output.")
            done = [read_saved(folder / "features.safetensors", load_file, folder)["features"]]
        size = self.params.batch_size
        batches = range(sum(len(d) for d in done), len(prompts), size)
        total = len(range(0, len(prompts), size))
        with job.progress_bar(total, "features", initial=total - len(batches)) as bar:
            for n, start in enumerate(batches, 1):
                done.append(engine.hidden_states(prompts[start : start + size]).astype(np.float32))
                bar.update(1)
                if n % job.checkpoint_every == 0 or n == len(batches):
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "state.json").unlink(missing_ok=True)  # no old state beside new features
                    save_tensors(folder / "features.safetensors", {"features": np.concatenate(done)}, save_file)
                    write_text_atomically(folder / "state.json", json.dumps({"records": len(prompts)}))
        return np.concatenate(done) if done else np.zeros((0, 0), dtype=np.float32)

    def train(self, job: TrainingJob) -> TrainingResult:
        from ragsift.models import load_causal_lm

        p = self.params
        labeler, records = self.labelled(job, DEFAULT_LABELER)
        model, tokenizer = load_causal_lm(p.base_model, device=p.device, dtype=p.dtype)
        owner = type(self).__name__
        encoder = YesNoPromptEncoder(tokenizer, p.template, resolve_max_length(p.max_length, model.config, tokenizer), p.overflow, owner)
        engine = YesNoEngine(model, tokenizer, "Yes", "No", batch_size=p.batch_size, owner=owner)
        prompts = [encoder.encode_record(r.query, r.context, r.sentence, f"record {i} (example '{r.example_id}')")
                   for i, r in enumerate(records)]
        features = self._features(job, engine, prompts)
        labels = np.array([r.label for r in records], dtype=np.float64)
        with job.progress_bar(p.steps, "readout") as bar:
            weight, bias, history = fit_readout(features, labels, p.steps, p.l2, bar)
        save_readout(job.output / ARTEFACT, weight, bias)
        scorer_spec = {"name": "causal-yes-no", "model": p.base_model, "adapter": "", "readout": str(job.output / ARTEFACT),
                       "template": p.template, "overflow": p.overflow, "batch_size": p.batch_size, "dtype": p.dtype,
                       **({"max_length": p.max_length} if p.max_length else {})}
        scorer = CausalYesNoScorer.from_model(model, tokenizer, **{k: v for k, v in scorer_spec.items() if k != "name"})
        return TrainingResult(
            artefacts=[ARTEFACT],
            history=history,
            dev=dev_predictions(job, scorer, p.dev_questions, owner),
            hyperparameters={**self.config(), "seed": job.seed, "training_records": len(records),
                             "positive_records": int(labels.sum()), "hidden_size": int(features.shape[1])},
            base_model=p.base_model,
            labels=self.labels_text(labeler),
            scorer=scorer_spec,
            extra={"train_accuracy": history[-1]["train_accuracy"], "forward_passes_per_record": 1},
        )


def dev_predictions(job: TrainingJob, scorer: CausalYesNoScorer, limit: int | None, owner: str) -> DevPredictions | None:
    """The scorer's scores of every sentence of the first ``limit`` development questions."""
    if not job.dev:
        return None
    splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, owner)
    predictions = DevPredictions()
    examples = job.dev[:limit] if limit else job.dev
    with job.progress_bar(len(examples), "dev scores") as bar:
        for example in examples:
            sentences = splitter.split_all(example.documents)
            labels, kinds = sentence_kinds(example, sentences)
            predictions.add(example.id, scorer.score(example, sentences), labels, kinds)
            bar.update(1)
    return predictions
