"""The ``dual-encoder`` trainer's ``encoder = "lora"`` mode: InfoNCE fine-tuning of the encoder itself.

A peft LoRA adapter (rank ``lora_r``) on the attention and feed-forward projections
(``lora_targets``: BERT's query / key / value and its three ``dense`` layers) of the encoder's top
``train_layers`` layers. The layers below them do not change, so their output for every training
and development text is computed once and cached (``checkpoint/states``, resumable like the
frozen mode's embeddings); a step runs only the top layers, forward and backward, on the cached
states of its batch (:class:`ragsift.scorers.encoder_adapter.LayerSplit`). On MiniLM (6 layers)
with one layer trained that is about a sixth of a full fine-tuning step's cost, which fits a CPU.

Batches, negatives, loss (sentence-transformers' ``MultipleNegativesRankingLoss``), learning-rate
decay and seeds are the frozen mode's (:mod:`ragsift.trainers.dual_encoder`); dropout (BERT's
and LoRA's) is on while training, reseeded with ``seed + step`` so a resumed run repeats an
uninterrupted one. Every ``eval_every`` steps the development loss, and with ``eval_k`` the
top-``eval_k`` evidence recall over every sentence of the development questions, join the loss
history. The adapter (``adapter/``: ``adapter_config.json`` + ``adapter_model.safetensors``) loads
into the ``dual-encoder`` scorer with ``adapter = "<folder>"``; the development scores reported are
computed from the cached states exactly as the scorer's whole-model pass computes them (tested).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragsift.errors import ConfigError
from ragsift.output_files import write_text_atomically
from ragsift.trainers.base import DevPredictions, TrainingJob
from ragsift.trainers.checkpoint import TrainableParameters, read_json_state, read_saved, run_steps, save_tensors

if TYPE_CHECKING:
    from ragsift.scorers.dual_encoder import DualEncoderScorer

__all__ = ["EncoderLoraFit", "ADAPTER_FOLDER"]

ADAPTER_FOLDER = "adapter"
OWNER = "DualEncoderTrainer (encoder = lora)"


class EncoderLoraFit:
    """One LoRA fine-tuning run of a dual encoder's top layers on cached lower-layer states."""

    def __init__(self, params: Any, job: TrainingJob, scorer: DualEncoderScorer) -> None:
        import torch
        from peft import LoraConfig, get_peft_model

        from ragsift.scorers.encoder_adapter import LayerSplit, transformer_layers

        self.p, self.job, self.scorer = params, job, scorer
        scorer.warm_up()
        encoder = scorer._sentence_encoder
        assert encoder is not None
        self.encoder = encoder
        base = copy.deepcopy(self.encoder.transformer)  # the loader's model is shared in the process
        layers = len(transformer_layers(base, OWNER))
        if params.train_layers > layers:
            raise ConfigError(f"{OWNER}: train_layers = {params.train_layers} but the encoder has {layers} layers.")
        self.start = layers - params.train_layers
        torch.manual_seed(job.seed)  # the adapter's initial weights
        config = LoraConfig(r=params.lora_r, lora_alpha=params.lora_alpha, lora_dropout=params.lora_dropout, bias="none",
                            target_modules=list(params.lora_targets), layers_to_transform=list(range(self.start, layers)),
                            layers_pattern="layer")
        try:
            self.model = get_peft_model(base, config)
        except ValueError as exc:
            raise ConfigError(f"{OWNER}: LoRA targets {params.lora_targets} on {type(base).__name__}: {exc}") from None
        self.split = LayerSplit(self.model.base_model.model, self.start, OWNER)
        self.states: list[Any] = []

    # -- the cached lower-layer states ---------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        p = self.p
        return {"model": p.base_model, "pooling": p.pooling, "max_length": p.max_length, "query_prefix": p.query_prefix,
                "sentence_prefix": p.sentence_prefix, "layer": self.start}

    def cache_states(self, items: Sequence[tuple[str, str]]) -> int:
        """The states entering the first trained layer for every (role, text); how many came from the checkpoint."""
        import torch
        from safetensors.torch import load_file, save_file

        folder = self.job.checkpoint_dir / "states"
        known: dict[tuple[str, str], Any] = {}
        if self.job.resume and (folder / "state.json").is_file():
            state = read_json_state(folder / "state.json", folder)
            if state.get("encoder") != self.settings():
                raise ConfigError(f"{folder}: the checkpoint holds states of another encoder or layer ({state.get('encoder')}); "
                                  "use a new --output.")
            stored = read_saved(folder / "states.safetensors", load_file, folder)["states"]
            for (role, text), piece in zip(state["texts"], torch.split(stored, state["lengths"]), strict=True):
                known[(role, text)] = piece
        reused = sum(item in known for item in items)
        missing = sorted({item for item in items if item not in known}, key=lambda it: (len(it[1]), it))
        size = self.p.encode_batch_size
        starts = range(0, len(missing), size)
        prefix = {"q": self.p.query_prefix, "s": self.p.sentence_prefix}
        with self.job.progress_bar(len(starts), "states") as bar:
            for n, start in enumerate(starts, 1):
                chunk = missing[start : start + size]
                features = self.encoder.tokenize([prefix[role] + text for role, text in chunk])
                states = self.split.bottom(features).float().cpu()
                lengths = features["attention_mask"].sum(dim=1).tolist()
                for item, row, length in zip(chunk, states, lengths, strict=True):
                    known[item] = row[: int(length)].clone()
                bar.update(1)
                if n % self.job.checkpoint_every == 0 or n == len(starts):
                    folder.mkdir(parents=True, exist_ok=True)
                    (folder / "state.json").unlink(missing_ok=True)  # no old state beside new tensors
                    save_tensors(folder / "states.safetensors", {"states": torch.cat(list(known.values()))}, save_file)
                    write_text_atomically(folder / "state.json", json.dumps({"encoder": self.settings(), "texts": list(known),
                                       "lengths": [int(t.shape[0]) for t in known.values()]}))
        self.states = [known[item] for item in items]
        return reused

    # -- the top layers ------------------------------------------------------------------------
    def embed(self, rows: Sequence[int]) -> Any:
        """Pooled embeddings of the texts ``rows`` (with gradients when enabled), in that order."""
        import torch

        order = sorted(range(len(rows)), key=lambda i: self.states[rows[i]].shape[0])
        out: list[Any] = [None] * len(rows)
        size = self.p.encode_batch_size
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            pieces = [self.states[rows[i]] for i in chunk]
            padded = torch.nn.utils.rnn.pad_sequence(pieces, batch_first=True)
            mask = torch.zeros(padded.shape[:2], dtype=torch.long)
            for j, piece in enumerate(pieces):
                mask[j, : piece.shape[0]] = 1
            pooled = self.encoder.pool(self.split.top(padded, mask), mask)
            for j, i in enumerate(chunk):
                out[i] = pooled[j]
        return torch.stack(out)

    def dev_predictions(self, items: list[Any], *, adapter: bool = True) -> DevPredictions | None:
        """Every development sentence's score with the adapter (as the scorer computes it) or without."""
        import contextlib

        import torch

        if not items:
            return None
        rows = sorted({r for _, q, s, _, _ in items for r in (q, *s)})
        self.model.eval()
        with torch.no_grad(), (contextlib.nullcontext() if adapter else self.model.disable_adapter()):
            embedded = self.embed(rows).numpy()
        where = {r: i for i, r in enumerate(rows)}
        out = DevPredictions()
        for example, q, s, labels, kinds in items:
            out.add(example.id, self.scorer.similarities(embedded[where[q]], embedded[[where[r] for r in s]]), labels, kinds)
        return out

    # -- training ------------------------------------------------------------------------------
    def fit(self, draw: Callable[[list[int]], np.ndarray], dev_rows: list[np.ndarray],
            dev_items: list[Any]) -> list[dict[str, float]]:
        """Train (resuming from ``checkpoint/adapter``) and return the loss history."""
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules.normalize import Normalize
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        p, job = self.p, self.job
        trainable = TrainableParameters(self.model)
        optimizer = torch.optim.AdamW(trainable.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)
        loss_model = MultipleNegativesRankingLoss(SentenceTransformer(modules=[Normalize()], device="cpu"), scale=p.scale)

        def batch_loss(rows: np.ndarray) -> Any:
            unique, inverse = np.unique(rows, return_inverse=True)
            embedded = self.embed([int(r) for r in unique])
            where = torch.from_numpy(inverse.reshape(rows.shape))
            return loss_model.compute_loss_from_embeddings([embedded[where[:, c]] for c in range(rows.shape[1])], torch.empty(0))

        def train_loss(step: int) -> Any:
            self.model.train()
            torch.manual_seed(job.seed + step)  # dropout
            return batch_loss(draw([job.seed, 0, step]))

        history = run_steps(job, p, job.checkpoint_dir / ADAPTER_FOLDER, trainable, optimizer, train_loss,
                            lambda: self._evaluate(batch_loss, dev_rows, dev_items), "dual-encoder")
        self.model.eval()
        return history

    def _evaluate(self, batch_loss: Callable[[np.ndarray], Any], dev_rows: list[np.ndarray],
                  dev_items: list[Any]) -> dict[str, float]:
        import torch

        out: dict[str, float] = {}
        self.model.eval()
        if dev_rows:
            with torch.no_grad():
                out["dev_loss"] = float(np.mean([batch_loss(r).item() for r in dev_rows]))
        if self.p.eval_k and dev_items:
            from ragsift.trainers.selection import selection_curves

            dev = self.dev_predictions(dev_items)
            assert dev is not None
            out[f"dev_recall_at_{self.p.eval_k}"] = float(selection_curves(dev)["top_k"][self.p.eval_k]["recall"])
        return out

    def save(self) -> list[str]:
        """Write the adapter into ``output/adapter``; the files written (relative to the output)."""
        folder = self.job.output / ADAPTER_FOLDER
        self.model.peft_config["default"].base_model_name_or_path = self.p.base_model
        self.model.save_pretrained(str(folder), safe_serialization=True, save_embedding_layers=False)
        (folder / "README.md").unlink(missing_ok=True)  # peft's template card; the model card is the output's README
        return [f"{ADAPTER_FOLDER}/adapter_config.json", f"{ADAPTER_FOLDER}/adapter_model.safetensors"]
