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

``include = "other.toml"`` (or a list, relative to this file) starts from another training config
and lays this file's tables over it key by key, as run configs do (docs/training.md): a variant
names only what it changes. Relative paths (``[data]`` files, model locations) are read relative
to the folder of the config file that names them,
else from the working directory, else from ragsift's shipped data (the source tree's root or the
copy inside the installed package: :mod:`ragsift.config_files`); ``[training] output`` is relative
to the working directory. ``train`` and ``dev`` may name a named dataset (``2wiki-dev``). The evaluation data
(:func:`ragsift.datasets.holdout.refuse_evaluation_data`) is refused as training or development data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragsift.config_files import REPOSITORY, find_config_file, read_with_includes
from ragsift.errors import ConfigError
from ragsift.plugin import format_validation_error, merge_spec

__all__ = ["TrainConfig", "TrainData", "TrainSettings", "load_train_config", "resolve_path", "REPOSITORY"]

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
    #: the files ``source`` includes, directly or through another include, in reading order
    included: list[str] = Field(default_factory=list)

    def resolved_table(self) -> dict[str, Any]:
        """The config as trained: one table with every include merged in (what TOML can write)."""
        return self.model_dump(exclude={"source", "included"}, exclude_none=True)


def resolve_path(path: str | Path) -> Path:
    """``path`` as given when it exists (or is absolute), else relative to ragsift's shipped data."""
    from ragsift.models import resolve_local_path

    return resolve_local_path(path)


def load_train_config(name_or_path: str | Path) -> TrainConfig:
    path = find_config_file(name_or_path, "train", "training config")
    files: list[tuple[Path, bytes]] = []
    raw = read_with_includes(path, lambda base, over: merge_spec(base, over, deep=True), files)
    try:
        return TrainConfig(**raw, source=str(path), included=[str(p) for p, _ in files[1:]])
    except ValidationError as exc:
        raise ConfigError(format_validation_error(str(path), exc, sorted(TrainConfig.model_fields))) from None
