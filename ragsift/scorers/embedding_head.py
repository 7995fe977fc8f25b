"""A trained head on top of a frozen sentence encoder: a sentence-transformers ``Dense`` module.

The ``dual-encoder`` trainer learns a linear map on the encoder's embeddings, stored as a
sentence-transformers ``Dense`` folder (``config.json`` + ``model.safetensors``, a few hundred KB
for MiniLM) rather than a fine-tuned copy of the whole encoder (~90 MB). The ``dual-encoder`` scorer
applies it to the query and sentence embeddings (``head = "FOLDER"``), so query and sentences
still share one encoder, as in ECoRAG.

Loading is safe by default: the folder must hold ``model.safetensors`` (a pickled
``pytorch_model.bin`` is refused), and the activation must be a ``torch.nn`` module class
(sentence-transformers' rule with ``trust_remote_code=False``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragsift.errors import ConfigError

__all__ = ["new_head", "load_head", "save_head", "apply_head"]


def new_head(dimension: int) -> Any:
    """A residual linear head that starts as the identity: ``x + W x + b`` with ``W = 0``, ``b = 0``
    (weight decay on ``W`` then pulls it back towards the encoder's own space)."""
    import torch
    from sentence_transformers.base.modules.dense import Dense

    return Dense(dimension, dimension, bias=True, activation_function=None, use_residual=True,
                 init_weight=torch.zeros(dimension, dimension), init_bias=torch.zeros(dimension))


def save_head(head: Any, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    head.save(str(folder), safe_serialization=True)


def load_head(path: str | Path) -> Any:
    """The ``Dense`` module saved in ``path`` (eval mode, CPU, float32)."""
    from sentence_transformers.base.modules.dense import Dense

    from ragsift.models import resolve_local_path

    folder = resolve_local_path(path)
    if not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
        raise ConfigError(f"Embedding head '{path}': expected a folder with config.json and model.safetensors "
                          "(written by the dual-encoder trainer).")
    try:
        head = Dense.load(str(folder), local_files_only=True, trust_remote_code=False)
    except (ValueError, RuntimeError, OSError, TypeError) as exc:
        raise ConfigError(f"Embedding head '{path}': cannot be loaded: {exc}") from None
    return head.float().eval()


def apply_head(head: Any, embeddings: np.ndarray) -> np.ndarray:
    """``head`` applied to each row of ``embeddings`` (float32 in, float32 out)."""
    import torch

    if embeddings.size == 0:
        return embeddings
    if embeddings.shape[1] != head.in_features:
        raise ConfigError(f"Embedding head: it takes {head.in_features}-dim embeddings but the encoder gives "
                          f"{embeddings.shape[1]}-dim ones; train the head on this encoder.")
    with torch.inference_mode():
        out = head({"sentence_embedding": torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))})
    return np.asarray(out["sentence_embedding"].numpy(), dtype=np.float32)
