"""A fine-tuned sentence encoder shipped as a LoRA adapter, and an encoder run in two parts.

The ``dual-encoder`` trainer (``encoder = "lora"``) fine-tunes the encoder itself with a peft LoRA
adapter on the attention and feed-forward projections of its top ``train_layers`` layers; only
the adapter is saved (``adapter_config.json`` + ``adapter_model.safetensors``, a few hundred KB
for MiniLM), and the ``dual-encoder`` scorer loads the base encoder plus the adapter
(``adapter = "FOLDER"``), merged into a private copy of the encoder, so a zero-shot scorer of the
same model in the same process is untouched.

:class:`LayerSplit` runs a BERT-style encoder (``embeddings`` + ``encoder.layer``) in two parts:
the layers below ``start`` once per text (their output is cached: with the adapter only above
them it never changes), and the layers from ``start`` on, with gradients, on cached states. The
two parts go through the model's own ``forward`` (its own attention-mask handling) with the
layer list cut, so the result is the whole model's, up to float rounding.

Loading is safe by default: the adapter folder must hold ``adapter_model.safetensors`` (a pickled
``adapter_model.bin`` is refused) and nothing runs remote code.
"""

from __future__ import annotations

import copy as _copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError

__all__ = ["apply_adapter", "check_adapter_folder", "transformer_layers", "LayerSplit"]

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def check_adapter_folder(path: str | Path) -> Path:
    """The adapter folder, resolved; a clear error when it is not a safetensors peft adapter."""
    from ragsift.models import resolve_local_path

    folder = resolve_local_path(path)
    missing = [name for name in ADAPTER_FILES if not (folder / name).is_file()]
    if missing:
        raise ConfigError(f"Encoder adapter '{path}': expected a folder with {' and '.join(ADAPTER_FILES)} (written by "
                          f"the dual-encoder trainer with encoder = \"lora\"); missing {', '.join(missing)}.")
    return folder


def transformer_layers(model: Any, owner: str) -> Any:
    """The ``nn.ModuleList`` of a BERT-style encoder's layers (``model.encoder.layer``)."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if layers is None or not hasattr(model, "embeddings"):
        raise ConfigError(f"{owner}: the encoder ({type(model).__name__}) has no embeddings + encoder.layer; "
                          "adapters on the top layers need a BERT-style encoder (BERT, MiniLM, RoBERTa, ...).")
    return layers


def apply_adapter(model: Any, path: str | Path, *, copy: bool = True) -> Any:
    """``model`` (a transformers encoder) with the LoRA adapter in ``path`` merged into it: into a
    copy of it unless ``copy`` is false (the loaders cache models per process: never change a shared one)."""
    from peft import PeftModel

    folder = check_adapter_folder(path)
    private = _copy.deepcopy(model) if copy else model
    try:
        with warnings.catch_warnings():  # peft asks the model a deprecated transformers question: not the user's concern
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            merged = PeftModel.from_pretrained(private, str(folder), is_trainable=False).merge_and_unload()
    except (ValueError, RuntimeError, OSError, KeyError) as exc:
        raise ConfigError(f"Encoder adapter '{path}': cannot be loaded onto {type(model).__name__} ({exc}); "
                          "was it trained on this encoder?") from None
    return merged.eval()


class _Passthrough:
    """Stands in for the embeddings module: hands the cached hidden states on unchanged."""

    def __call__(self, *args: Any, inputs_embeds: Any = None, **kwargs: Any) -> Any:
        return inputs_embeds


class LayerSplit:
    """``model``'s layers below ``start`` (:meth:`bottom`) and from ``start`` on (:meth:`top`)."""

    def __init__(self, model: Any, start: int, owner: str = "LayerSplit") -> None:
        self.model = model
        self.layers = transformer_layers(model, owner)
        if not 0 <= start < len(self.layers):
            raise ConfigError(f"{owner}: the encoder has {len(self.layers)} layers; cannot train from layer {start}.")
        self.start = start

    @contextmanager
    def _cut(self, layers: list[Any], passthrough: bool) -> Iterator[None]:
        import torch

        encoder, embeddings = self.model.encoder, self.model.embeddings
        full = encoder.layer
        encoder.layer = torch.nn.ModuleList(layers)
        if passthrough:
            object.__setattr__(self.model, "embeddings", _Passthrough())  # not a submodule: nothing to register
        try:
            yield
        finally:
            encoder.layer = full
            if passthrough:
                object.__delattr__(self.model, "embeddings")
                assert self.model.embeddings is embeddings

    def bottom(self, features: dict[str, Any]) -> Any:
        """Token states entering layer ``start`` (``features``: the tokenizer's tensors)."""
        import torch

        with torch.no_grad(), self._cut(list(self.layers[: self.start]), passthrough=False):
            return self.model(**features).last_hidden_state

    def top(self, states: Any, attention_mask: Any) -> Any:
        """Token states after the last layer, from the states entering layer ``start``."""
        with self._cut(list(self.layers[self.start :]), passthrough=True):
            return self.model(inputs_embeds=states, attention_mask=attention_mask).last_hidden_state
