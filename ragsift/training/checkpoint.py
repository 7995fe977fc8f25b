"""Checkpoints of PyTorch trainers without pickle: weights and optimizer tensors in safetensors,
everything else (step, loss history, optimizer hyper-parameters) in JSON.

A checkpoint folder holds ``model.safetensors``, ``optimizer.safetensors`` and ``state.json``;
``state.json`` is written last (atomically), so a folder without it is an unfinished write and is
ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["save_checkpoint", "load_checkpoint"]


def _optimizer_parts(optimizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch

    state = optimizer.state_dict()
    tensors: dict[str, Any] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, values in state["state"].items():
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{index}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(index), {})[name] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def save_checkpoint(folder: Path, model: Any, optimizer: Any, state: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "state.json"
    if marker.exists():
        marker.unlink()  # the old state must not pair with new tensors if this write is cut short
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(folder / "model.safetensors"))
    tensors, rest = _optimizer_parts(optimizer)
    save_file(tensors, str(folder / "optimizer.safetensors"))
    tmp = folder / "state.json.tmp"
    tmp.write_text(json.dumps({**state, "optimizer": rest}), encoding="utf-8")
    os.replace(tmp, marker)


def load_checkpoint(folder: Path, model: Any, optimizer: Any) -> dict[str, Any] | None:
    """Restore ``model`` and ``optimizer`` from ``folder``; the saved state, or None without one."""
    from safetensors.torch import load_file

    marker = folder / "state.json"
    if not marker.is_file():
        return None
    state = json.loads(marker.read_text(encoding="utf-8"))
    device = next(model.parameters()).device
    model.load_state_dict(load_file(str(folder / "model.safetensors"), device=str(device)))
    tensors = load_file(str(folder / "optimizer.safetensors"), device=str(device))
    rest = state.pop("optimizer")
    per_param: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    for index, values in rest["scalars"].items():
        per_param.setdefault(int(index), {}).update(values)
    optimizer.load_state_dict({"state": per_param, "param_groups": rest["param_groups"]})
    return dict(state)
