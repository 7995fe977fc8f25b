"""Checkpoints of PyTorch trainers without pickle: weights and optimizer tensors in safetensors,
everything else (step, loss history, optimizer hyper-parameters) in JSON.

A checkpoint folder holds ``model.safetensors``, ``optimizer.safetensors`` and ``state.json``;
``state.json`` is written last (atomically), so a folder without it is an unfinished write and is
ignored. :func:`step_loop` is the trainers' resumable step loop, checkpointing as it goes;
:func:`run_steps` its plain form with a linearly decaying learning rate.

Every checkpoint and feature-cache file is written under a temporary name and renamed into
place (:func:`ragsift.output_files.write_atomically`), so a kill mid-write never leaves a truncated file under its
name; one that cannot be read all the same (a disk fault, an edit) is reported by
:func:`read_saved` naming the file and what to delete before resuming.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ragsift.errors import DataFormatError
from ragsift.output_files import write_atomically, write_text_atomically

__all__ = ["save_checkpoint", "load_checkpoint", "TrainableParameters", "step_loop", "run_steps",
           "save_tensors", "read_saved", "read_json_state", "tensors_checksum", "CHECKSUM_KEY"]

T = TypeVar("T")


def save_tensors(path: Path, tensors: dict[str, Any], save_file: Callable[[dict[str, Any], str], object]) -> None:
    """``save_file(tensors, name)`` (safetensors' numpy or torch writer) through :func:`write_atomically`."""
    write_atomically(path, lambda name: save_file(tensors, name))


def read_saved(path: Path, read: Callable[[str], T], remove: Path | None = None) -> T:
    """``read(str(path))``; a file that cannot be read (cut short, corrupted, missing beside its
    state) is a :class:`DataFormatError` naming it and saying to delete ``remove`` (default: the
    file) and resume, which computes what it held again."""
    try:
        return read(str(path))
    except Exception as exc:  # noqa: BLE001 - safetensors' own error, a JSON or OS error: the file is unusable
        target = remove or path
        raise DataFormatError(path, None, f"cannot read this checkpoint or cache file ({type(exc).__name__}: {exc}); "
                              f"it was cut short or corrupted. Delete {target} and run the same command with "
                              "--resume: what it held is computed again.") from None


#: the safetensors metadata key of a feature-cache file's content checksum (:func:`tensors_checksum`)
CHECKSUM_KEY = "ragsift_sha256"


def tensors_checksum(tensors: Mapping[str, Any]) -> str:
    """SHA-256 of numpy arrays' names, dtypes, shapes and bytes (in name order): what a cached
    feature block holds, so that an edit is seen when it is read back. It guards against accidents
    (an edit, a disk fault), not against someone who recomputes it (docs/threat-model.md)."""
    import numpy as np

    digest = hashlib.sha256()
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        digest.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def read_json_state(path: Path, remove: Path | None = None) -> dict[str, Any]:
    """A checkpoint's JSON state through :func:`read_saved`."""
    state = read_saved(path, lambda name: json.loads(Path(name).read_text(encoding="utf-8")), remove)
    if not isinstance(state, dict):
        raise DataFormatError(path, None, f"not a checkpoint state (a JSON object); delete {remove or path} and resume.")
    return state


class TrainableParameters:
    """The trainable (e.g. LoRA) parameters of a model, for checkpoints of those alone."""

    def __init__(self, model: Any) -> None:
        self.named = {n: w for n, w in model.named_parameters() if w.requires_grad}

    def parameters(self) -> Any:
        return iter(self.named.values())

    def state_dict(self) -> dict[str, Any]:
        return dict(self.named)

    def load_state_dict(self, tensors: dict[str, Any]) -> None:
        import torch

        with torch.no_grad():
            for name, value in tensors.items():
                self.named[name].copy_(value)


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
    marker.unlink(missing_ok=True)  # the old state must not pair with new tensors if this write is cut short
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_tensors(folder / "model.safetensors", weights, save_file)
    tensors, rest = _optimizer_parts(optimizer)
    save_tensors(folder / "optimizer.safetensors", tensors, save_file)
    write_text_atomically(marker, json.dumps({**state, "optimizer": rest}))


def load_checkpoint(folder: Path, model: Any, optimizer: Any) -> dict[str, Any] | None:
    """Restore ``model`` and ``optimizer`` from ``folder``; the saved state, or None without one."""
    from safetensors.torch import load_file

    marker = folder / "state.json"
    if not marker.is_file():
        return None
    state = read_json_state(marker, folder)
    device = next(model.parameters()).device
    weights = read_saved(folder / "model.safetensors", lambda name: load_file(name, device=str(device)), folder)
    model.load_state_dict(weights)
    tensors = read_saved(folder / "optimizer.safetensors", lambda name: load_file(name, device=str(device)), folder)
    rest = state.pop("optimizer")
    per_param: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    for index, values in rest["scalars"].items():
        per_param.setdefault(int(index), {}).update(values)
    optimizer.load_state_dict({"state": per_param, "param_groups": rest["param_groups"]})
    return dict(state)


def step_loop(job: Any, folder: Path, model: Any, optimizer: Any, optimize: Callable[[int], float], *, steps: int,
              lr_at: Callable[[int], float], name: str, evaluate: Callable[[], dict[str, float]] | None = None,
              eval_every: int = 0) -> list[dict[str, float]]:
    """``steps`` optimizer steps, resumed from the checkpoint in ``folder`` (when ``job.resume``).
    Step ``i`` sets every parameter group's learning rate to ``lr_at(i)``, then ``optimize(i)`` runs
    the step (gradients, optimizer update) and returns its training loss; ``evaluate()`` gives the
    development figures joined to the history every ``eval_every`` steps (0: never) and at the last;
    a checkpoint of ``model`` and ``optimizer`` every ``job.checkpoint_every`` steps and at the
    last. Returns the loss history."""
    history: list[dict[str, float]] = []
    start = 0
    if job.resume:
        state = load_checkpoint(folder, model, optimizer)
        if state is not None:
            start, history = int(state["step"]), list(state["history"])
    with job.progress_bar(steps, name, initial=start) as bar:
        for step in range(start, steps):
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
            entry = {"step": step + 1, "train_loss": float(optimize(step))}
            if evaluate is not None and ((eval_every and (step + 1) % eval_every == 0) or step + 1 == steps):
                entry.update(evaluate())
            history.append(entry)
            bar.update(1)
            bar.set_postfix(loss=f"{entry['train_loss']:.4f}")
            if (step + 1) % job.checkpoint_every == 0 or step + 1 == steps:
                save_checkpoint(folder, model, optimizer, {"step": step + 1, "history": history})
    return history


def run_steps(job: Any, params: Any, folder: Path, model: Any, optimizer: Any, train_loss: Callable[[int], Any],
              evaluate: Callable[[], dict[str, float]], name: str) -> list[dict[str, float]]:
    """:func:`step_loop` with ``params.steps`` plain steps (``train_loss(step)`` is the step's loss,
    back-propagated whole) at ``params.learning_rate`` decaying linearly to zero, evaluated every
    ``params.eval_every`` steps."""
    steps = params.steps

    def optimize(step: int) -> float:
        loss = train_loss(step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step_loop(job, folder, model, optimizer, optimize, steps=steps, name=name, evaluate=evaluate,
                     eval_every=params.eval_every, lr_at=lambda step: params.learning_rate * (steps - step) / steps)
