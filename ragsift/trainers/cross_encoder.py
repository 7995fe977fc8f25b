"""The cross-encoder trainer: an encoder with a one-logit head (``AutoModelForSequenceClassification``,
``num_labels = 1``) fine-tuned with binary cross-entropy on labelled (query, sentence, own document)
records, loaded afterwards by the ``cross-encoder`` scorer.

Records come from the config's ``[labeler]`` (default: ``exit-pairs`` with one distractor negative
per two positives). Step ``t`` reads records ``[t * batch_size, (t + 1) * batch_size)`` of a sequence
of seeded per-epoch permutations and reseeds torch with ``seed + t`` (dropout), so a resumed run
repeats exactly what an uninterrupted one does. Optimizer: AdamW with linear warm-up and decay.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.lm.sentence_prompt import document_context
from ragsift.models import OFFLINE_MINILM
from ragsift.plugin import Params
from ragsift.registry import build_plugin
from ragsift.scorers.cross_encoder import cross_encoder_inputs, cross_encoder_scores
from ragsift.trainers.base import (
    DevPredictions,
    Trainer,
    TrainingJob,
    TrainingResult,
    sentence_kinds,
)
from ragsift.trainers.checkpoint import load_checkpoint, save_checkpoint

__all__ = ["CrossEncoderTrainer", "CrossEncoderTrainerParams"]

DEFAULT_LABELER = {"name": "exit-pairs", "distractor_negatives": 1}


class CrossEncoderTrainerParams(Params):
    #: the encoder to fine-tune: Hub id, folder or package path (safetensors)
    base_model: str = OFFLINE_MINILM
    steps: int = Field(200, ge=1)
    batch_size: int = Field(16, ge=1)
    learning_rate: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    max_length: int = Field(256, ge=8)
    device: str = "auto"
    dtype: Literal["fp32", "bf16"] = "fp32"
    #: score only the first N development questions for the report (every sentence; CPU cost)
    dev_questions: int | None = Field(None, ge=1)
    eval_batch_size: int = Field(32, ge=1)


def _batch_indices(n: int, step: int, batch_size: int, seed: int) -> list[int]:
    out: list[int] = []
    position = step * batch_size
    while len(out) < batch_size:
        epoch, offset = divmod(position, n)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        take = min(batch_size - len(out), n - offset)
        out.extend(int(i) for i in order[offset : offset + take])
        position += take
    return out


class CrossEncoderTrainer(Trainer):
    """Fine-tunes a cross-encoder (see the module docstring)."""

    Params = CrossEncoderTrainerParams
    extras: ClassVar[tuple[str, ...]] = ("models", "train")
    uses_labeler: ClassVar[bool] = True

    def _load(self) -> tuple[Any, Any]:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from ragsift.models import resolve_device, resolve_dtype, resolve_model

        location = resolve_model(self.params.base_model)
        if location.kind == "gguf":
            raise ConfigError("CrossEncoderTrainer: base_model must be an encoder folder or Hub id, not a GGUF file.")
        source = location.path
        kwargs = location.revision_kwargs()
        model = AutoModelForSequenceClassification.from_pretrained(
            source, num_labels=1, use_safetensors=True, trust_remote_code=False, dtype=resolve_dtype(self.params.dtype), **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
        return model.to(resolve_device(self.params.device)), tokenizer

    def train(self, job: TrainingJob) -> TrainingResult:
        import torch

        labeler, records = self.labelled(job, DEFAULT_LABELER)
        torch.manual_seed(job.seed)  # the new head's initial weights
        model, tokenizer = self._load()
        p = self.params
        decay = [w for n, w in model.named_parameters() if not any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
        rest = [w for n, w in model.named_parameters() if any(k in n for k in ("bias", "LayerNorm", "layer_norm"))]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": p.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                                      lr=p.learning_rate)
        warmup = int(p.warmup_ratio * p.steps)

        def lr_at(step: int) -> float:
            if step < warmup:
                return p.learning_rate * (step + 1) / warmup
            return p.learning_rate * max(0.0, (p.steps - step) / max(1, p.steps - warmup))

        history: list[dict[str, float]] = []
        start = 0
        if job.resume:
            state = load_checkpoint(job.checkpoint_dir, model, optimizer)
            if state is not None:
                start, history = int(state["step"]), list(state["history"])
        device = next(model.parameters()).device
        loss_fn = torch.nn.BCEWithLogitsLoss()
        model.train()
        with job.progress_bar(p.steps, "cross-encoder", initial=start) as bar:
            for step in range(start, p.steps):
                torch.manual_seed(job.seed + step)
                batch = [records[i] for i in _batch_indices(len(records), step, p.batch_size, job.seed)]
                inputs = cross_encoder_inputs(tokenizer, [r.query for r in batch], [r.sentence for r in batch],
                                              [r.context for r in batch], p.max_length).to(device)
                target = torch.tensor([float(r.label) for r in batch], device=device)
                for group in optimizer.param_groups:
                    group["lr"] = lr_at(step)
                loss = loss_fn(model(**inputs).logits[:, 0].float(), target)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                history.append({"step": step + 1, "train_loss": float(loss.item())})
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
                if (step + 1) % job.checkpoint_every == 0 or step + 1 == p.steps:
                    save_checkpoint(job.checkpoint_dir, model, optimizer, {"step": step + 1, "history": history})
        model.eval()
        model.save_pretrained(job.output, safe_serialization=True)
        tokenizer.save_pretrained(job.output)
        predictions = self._dev_predictions(job, model, tokenizer)
        return TrainingResult(
            artefacts=["config.json", "model.safetensors"],
            history=history,
            dev=predictions,
            hyperparameters={**self.config(), "seed": job.seed, "training_records": len(records),
                             "positive_records": sum(r.label for r in records),
                             "epochs": round(p.steps * p.batch_size / len(records), 3)},
            base_model=self.params.base_model,
            labels=self.labels_text(labeler),
            scorer={"name": "cross-encoder", "model": str(job.output), "max_length": p.max_length},
        )

    def _dev_predictions(self, job: TrainingJob, model: Any, tokenizer: Any) -> DevPredictions | None:
        if not job.dev:
            return None
        splitter = build_plugin("splitter", {"name": "presplit", "fallback": "sentencizer"}, "CrossEncoderTrainer")
        examples = job.dev[: self.params.dev_questions] if self.params.dev_questions else job.dev
        predictions = DevPredictions()
        with job.progress_bar(len(examples), "dev scores") as bar:
            for example in examples:
                sentences = splitter.split_all(example.documents)
                logits = cross_encoder_scores(model, tokenizer, [example.question] * len(sentences), [s.text for s in sentences],
                                              [document_context(example.documents[s.doc_index]) for s in sentences],
                                              self.params.max_length, self.params.eval_batch_size)
                labels, kinds = sentence_kinds(example, sentences)
                predictions.add(example.id, 1.0 / (1.0 + np.exp(-logits)), labels, kinds)
                bar.update(1)
        return predictions

