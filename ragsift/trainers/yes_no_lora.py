"""EXIT's classifier trained the EXIT way: a LoRA adapter (peft) on a causal LM, taught to answer
"Yes" or "No" after the scorer's prompt.

Loss: the cross-entropy of the answer token at the prompt's last position, "Yes" for evidence and
"No" otherwise; ``loss = "vocabulary"`` (default, EXIT's supervised fine-tuning) normalises over
the whole vocabulary, ``loss = "two-way"`` over the two answer tokens only (the scorer's
``sigmoid(l_yes - l_no)``). Defaults are EXIT's hyper-parameters: r 64, alpha 32, dropout 0.05,
learning rate 1e-5, weight decay 0.1, 3% linear warm-up then linear decay, one epoch, micro-batches
of 8 with 8 accumulation steps (64 records per optimizer step). Target modules (our choice; EXIT's
published adapter is not readable offline): every attention and MLP projection of Llama / Gemma /
Qwen style models, the QLoRA recipe, not the output layer or embeddings.

Records come from the config's ``[labeler]`` (default ``exit-pairs``). Optimizer step ``t`` reads
a fixed slice of seeded per-epoch permutations and reseeds torch with ``seed + t`` (dropout), so
a run resumed from a checkpoint (the adapter weights and AdamW state, every ``checkpoint_every``
optimizer steps) ends with the same adapter as an uninterrupted one. Precision: fp32 on CPU;
on CUDA ``dtype = "auto"`` trains under bf16 autocast where the GPU supports it, else fp16 with
loss scaling. The output folder is a peft adapter (``adapter_model.safetensors``) that the
``causal-yes-no`` scorer loads unchanged with ``adapter = "<folder>"``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.lm import EXIT_TEMPLATE, YesNoPromptEncoder, resolve_max_length, single_token_id
from ragsift.lm.layouts import padded_batch
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.plugin import Params
from ragsift.scorers.causal_yes_no import CausalYesNoScorer
from ragsift.trainers.base import Trainer, TrainingJob, TrainingResult
from ragsift.trainers.checkpoint import TrainableParameters, step_loop
from ragsift.trainers.cross_encoder import _batch_indices
from ragsift.trainers.yes_no_readout import dev_predictions

__all__ = ["YesNoLoraTrainer", "YesNoLoraTrainerParams", "LORA_TARGETS"]

DEFAULT_LABELER = {"name": "exit-pairs"}
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class YesNoLoraTrainerParams(Params):
    #: the causal LM the adapter is trained on: Hub id, folder, GGUF file or package:PKG/PATH
    base_model: str = OFFLINE_SMOLLM2
    template: str = EXIT_TEMPLATE
    r: int = Field(64, ge=1)
    alpha: float = Field(32, gt=0)
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: list[str] = Field(default_factory=lambda: list(LORA_TARGETS), min_length=1)
    learning_rate: float = Field(1e-5, gt=0)
    weight_decay: float = Field(0.1, ge=0)
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    epochs: float = Field(1.0, gt=0)
    #: optimizer steps; default: ``epochs`` over the records
    steps: int | None = Field(None, ge=1)
    #: records per forward pass, and forward passes per optimizer step
    batch_size: int = Field(8, ge=1)
    grad_accum: int = Field(8, ge=1)
    loss: Literal["vocabulary", "two-way"] = "vocabulary"
    device: str = "auto"
    #: auto: fp32 on CPU; bf16 autocast on a GPU that supports it, else fp16 with loss scaling
    dtype: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    overflow: Literal["error", "head-tail"] = "error"
    max_length: int | None = Field(None, ge=8)
    dev_questions: int | None = Field(None, ge=1)
    eval_batch_size: int = Field(8, ge=1)


def _precision(dtype: str, device: Any) -> Any:
    """The autocast dtype (None = fp32)."""
    import torch

    if device.type != "cuda":
        if dtype in ("bf16", "fp16"):
            raise ConfigError(f"YesNoLoraTrainer: dtype {dtype} needs a CUDA device; on CPU use fp32 (or auto).")
        return None
    if dtype == "auto":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


class YesNoLoraTrainer(Trainer):
    """Trains a LoRA adapter for the ``causal-yes-no`` scorer (see the module docstring)."""

    Params = YesNoLoraTrainerParams
    extras: ClassVar[tuple[str, ...]] = ("models", "train")
    uses_labeler: ClassVar[bool] = True

    def train(self, job: TrainingJob) -> TrainingResult:
        import torch
        from peft import LoraConfig, get_peft_model

        from ragsift.models import load_causal_lm

        p, owner = self.params, type(self).__name__
        labeler, records = self.labelled(job, DEFAULT_LABELER)
        base, tokenizer = load_causal_lm(p.base_model, device=p.device, dtype="fp32", fresh=True)
        torch.manual_seed(job.seed)  # the adapter's initial weights
        model = get_peft_model(base, LoraConfig(r=p.r, lora_alpha=p.alpha, lora_dropout=p.dropout, bias="none",
                                                target_modules=list(p.target_modules), task_type="CAUSAL_LM"))
        device = next(model.parameters()).device
        autocast = _precision(p.dtype, device)
        encoder = YesNoPromptEncoder(tokenizer, p.template, resolve_max_length(p.max_length, base.config, tokenizer), p.overflow, owner)
        prompts = [encoder.encode_record(r.query, r.context, r.sentence, f"record {i} (example '{r.example_id}')").ids
                   for i, r in enumerate(records)]
        answers = (single_token_id(tokenizer, "Yes", owner), single_token_id(tokenizer, "No", owner))
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else (tokenizer.pad_token_id or 0)
        per_step = p.batch_size * p.grad_accum
        steps = p.steps or max(1, math.ceil(p.epochs * len(records) / per_step))
        trainable = TrainableParameters(model)
        decay = [w for n, w in trainable.named.items() if "bias" not in n]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": p.weight_decay},
                                       {"params": [w for n, w in trainable.named.items() if "bias" in n], "weight_decay": 0.0}],
                                      lr=p.learning_rate)
        warmup = int(p.warmup_ratio * steps)

        def lr_at(step: int) -> float:
            if step < warmup:
                return p.learning_rate * (step + 1) / warmup
            return p.learning_rate * max(0.0, (steps - step) / max(1, steps - warmup))

        scaler = torch.amp.GradScaler("cuda", enabled=autocast is torch.float16)

        def optimize(step: int) -> float:
            torch.manual_seed(job.seed + step)
            chosen = _batch_indices(len(records), step, per_step, job.seed)
            optimizer.zero_grad()
            total = 0.0
            for part in range(0, per_step, p.batch_size):
                rows = chosen[part : part + p.batch_size]
                ids, mask, positions = padded_batch([prompts[i] for i in rows], pad, device)
                target = torch.tensor([0 if records[i].label else 1 for i in rows], device=device)
                with torch.autocast(device.type, dtype=autocast or torch.float32, enabled=autocast is not None):
                    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1).logits[:, -1].float()
                if p.loss == "two-way":
                    loss = torch.nn.functional.cross_entropy(logits[:, list(answers)], target)
                else:
                    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(answers, device=device)[target])
                scaler.scale(loss * len(rows) / per_step).backward()
                total += float(loss.item()) * len(rows) / per_step
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(list(trainable.parameters()), 1.0)
            scaler.step(optimizer)
            scaler.update()
            return total

        model.train()
        history = step_loop(job, job.checkpoint_dir, trainable, optimizer, optimize, steps=steps, lr_at=lr_at, name="yes-no-lora")
        model.eval()
        model.save_pretrained(str(job.output), safe_serialization=True)
        scorer_spec = {"name": "causal-yes-no", "model": p.base_model, "adapter": str(job.output), "template": p.template,
                       "overflow": p.overflow, "batch_size": p.eval_batch_size, **({"max_length": p.max_length} if p.max_length else {})}
        scorer = CausalYesNoScorer.from_model(model, tokenizer, **{k: v for k, v in scorer_spec.items() if k != "name"})
        return TrainingResult(
            artefacts=["adapter_config.json", "adapter_model.safetensors"],
            history=history,
            dev=dev_predictions(job, scorer, p.dev_questions, owner),
            hyperparameters={**self.config(), "seed": job.seed, "optimizer_steps": steps, "training_records": len(records),
                             "positive_records": sum(r.label for r in records),
                             "epochs_run": round(steps * per_step / len(records), 3),
                             "precision": str(autocast or "fp32").replace("torch.", "")},
            base_model=p.base_model,
            labels=self.labels_text(labeler),
            scorer=scorer_spec,
        )
