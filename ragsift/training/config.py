"""Training configs (``configs/train/<name>.toml``)::

    description = "..."
    [trainer]                 # a registered trainer and its params
    name = "fusion"
    steps = 300
    [labeler]                 # optional: for trainers that learn from labelled records
    name = "exit-pairs"
    [data]
    train = "data/training/hotpotqa-train-pool.json"
    dev = "data/training/hotpotqa-dev-pool.json"   # thresholds and k are chosen here
    [training]
    output = "models/fusion-trained"
    seed = 0
    checkpoint_every = 50

Relative paths are read from the working directory, else from the repository that holds this
package. The evaluation file (``ragsift/data/hotpotqa-dev-sf100.json``) is refused as training
or development data.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error

__all__ = ["TrainConfig", "TrainData", "TrainSettings", "load_train_config", "resolve_path", "REPOSITORY"]

REPOSITORY = Path(__file__).resolve().parents[2]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainData(_Strict):
    train: str
    dev: str | None = None
    #: dataset loader name (default: detected from each file)
    format: str | None = None
    #: only the first N training / development questions
    limit: int | None = Field(None, ge=1)
    dev_limit: int | None = Field(None, ge=1)


class TrainSettings(_Strict):
    output: str
    seed: int = 0
    checkpoint_every: int = Field(50, ge=1)
    #: choose only thresholds that keep nothing on at most this share of development questions
    max_empty: float | None = Field(None, ge=0, le=1)


class TrainConfig(_Strict):
    description: str = ""
    trainer: dict[str, Any]
    labeler: dict[str, Any] | None = None
    data: TrainData
    training: TrainSettings
    source: str = ""


def resolve_path(path: str | Path) -> Path:
    """``path`` as given when it exists (or is absolute), else relative to the repository."""
    from ragsift.models import resolve_local_path

    return resolve_local_path(path)


def find_train_config(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.is_file():
        return path
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    for folder in (Path.cwd() / "configs" / "train", REPOSITORY / "configs" / "train"):
        if (folder / f"{stem}.toml").is_file():
            return folder / f"{stem}.toml"
    names = sorted({p.stem for d in (Path.cwd() / "configs" / "train", REPOSITORY / "configs" / "train") if d.is_dir() for p in d.glob("*.toml")})
    raise ConfigError(f"No training config '{name_or_path}': not a file, and not a name in configs/train/ ({', '.join(names) or 'none'}).")


def load_train_config(name_or_path: str | Path) -> TrainConfig:
    path = find_train_config(name_or_path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from None
    try:
        return TrainConfig(**raw, source=str(path))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, sorted(TrainConfig.model_fields))) from None
