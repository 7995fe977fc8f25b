"""The readout file: a linear read of a causal LM's final hidden state, ``sigmoid(weight . h + bias)``.

Safetensors, fp32: ``weight`` (a vector of the model's hidden size) and ``bias`` (one value).
Written by the ``yes-no-readout`` and ``judge-readout`` trainers, read by the ``causal-yes-no``
scorer and the ``causal`` judge (which hand it to the Yes/No engine as ``readout``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError

__all__ = ["save_readout", "load_readout"]


def save_readout(path: Path, weight: Any, bias: float) -> None:
    """Write a readout file (safetensors, fp32): ``weight`` [hidden] and ``bias`` [1]."""
    import torch
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)  # a trainer's output folder may not exist yet
    save_file({"weight": torch.as_tensor(weight, dtype=torch.float32).reshape(-1).contiguous(),
               "bias": torch.tensor([float(bias)], dtype=torch.float32)}, str(path))


def load_readout(path: str, owner: str = "CausalYesNoScorer") -> tuple[Any, float]:
    """(weight, bias) of a readout file (a ``.safetensors`` file, a folder or a Hub repository holding
    ``readout.safetensors``); a clear error for a missing or malformed one."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from ragsift.models import fetch_model_file

    file = fetch_model_file(path, "readout.safetensors", owner)  # a file, a folder holding it, or a Hub id
    if not file.is_file():
        raise ConfigError(f"{owner}: readout file {path} not found.")
    try:
        tensors = load_file(str(file))
    except (SafetensorError, OSError) as exc:
        raise ConfigError(f"{owner}: {file}: not a safetensors readout file ({exc}).") from None
    if set(tensors) != {"weight", "bias"} or tensors["weight"].dim() != 1 or tensors["bias"].numel() != 1:
        raise ConfigError(f"{owner}: {file}: a readout file holds 'weight' (a vector) and 'bias' (one value); "
                          f"found {sorted(tensors)}.")
    return tensors["weight"].float(), float(tensors["bias"])
