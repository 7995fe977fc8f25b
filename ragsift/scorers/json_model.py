"""What the scorers of ragsift's own JSON model files share (``learned-fusion``'s ``fusion.json``,
``bridge-documents``' ``bridge-documents.json``): reading and checking the file, and a scorer
base that locates it (a file, a folder, ``package:`` or a Hub id), loads it on first use, lets
``config validate`` check it without loading anything else, and scores in ``[0, 1]``.

A model file names its component features from a closed vocabulary
(:mod:`ragsift.scorers.feature_components`); the specs behind the names come from ragsift's table
or the scorer's ``components`` in the user's config, never from the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import Field

from ragsift.errors import ConfigError
from ragsift.plugin import Params
from ragsift.scorers.base import Scorer
from ragsift.types import Example, Sentence

__all__ = ["read_model_json", "write_model_json", "JsonModel", "JsonModelScorer", "JsonModelParams"]


def read_model_json(location: str | Path, filename: str, fmt: str, version: int, owner: str,
                    train_hint: str) -> tuple[Path, dict[str, Any]]:
    """``(path, data)`` of the model file at ``location`` (the file, or a folder holding
    ``filename``): a ConfigError naming the file (and line) when it is missing, not JSON, of
    another format than ``fmt`` or of another version."""
    path = Path(location)
    if path.is_dir():
        path = path / filename
    if not path.is_file():
        raise ConfigError(f"{owner}: no model file {path}; {train_hint}.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}).") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise ConfigError(f"{path}: not a {fmt.removeprefix('ragsift-')} model file (format '{fmt}').")
    if data.get("version") != version:
        why = ""
        if data.get("version") == 1 and version == 2:  # version 1 named plugin specs (issue 53)
            why = (" Version 1 named its component scorers as plugin specs, which a model file may no longer do "
                   "(docs/threat-model.md): replace each spec by its feature name (e.g. \"scorers\": [\"bm25\"]) and set "
                   "\"version\": 2, or train it again.")
        raise ConfigError(f"{path}: model format version {data.get('version')!r}; this ragsift reads {version}.{why}")
    return path, data


def write_model_json(folder: str | Path, filename: str, data: dict[str, Any]) -> Path:
    """Write ``data`` as ``folder/filename`` (one line of JSON); return the path."""
    path = Path(folder) / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return path


class JsonModel(Protocol):
    """A loaded model: its component features warm up, and it scores sentences."""

    @property
    def features(self) -> Any: ...

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray: ...


class JsonModelParams(Params):
    #: the model's component features beyond ragsift's own table (``bm25``, ``dual-encoder:minilm``):
    #: feature name -> scorer spec. A model file names features; only this table (your config)
    #: says what a name it names builds (docs/threat-model.md)
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)


class JsonModelScorer(Scorer):
    """A scorer of a model in one of ragsift's own JSON formats: subclasses name the file
    (``model_file``) and the model class whose ``load(path, components)`` reads it
    (``model_class``); params hold ``model`` and ``components``."""

    needs_model: ClassVar[bool] = True
    model_file: ClassVar[str]
    model_class: ClassVar[Any]

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._model: JsonModel | None = None

    def load_model(self, path: Path) -> JsonModel:
        return self.model_class.load(path, components=self.params.components)

    def warm_up(self) -> None:
        if self._model is None:
            self._model = self.load_model(self._model_path())
            self._model.features.warm_up()

    def score_range(self) -> tuple[float, float] | None:
        return (0.0, 1.0)  # probabilities

    def check_model_files(self) -> None:
        """Read and check the model file (no component loads): ``config validate`` calls this
        instead of the generic model check, since the folder is ragsift's own format."""
        self.load_model(self._model_path())

    def _model_path(self) -> Path:
        """The model file: a file, a folder, ``package:`` or a Hub id (:func:`ragsift.models.fetch_model_file`)."""
        from ragsift.models import fetch_model_file

        return fetch_model_file(self.params.model, self.model_file, type(self).__name__)

    def score(self, example: Example, sentences: Sequence[Sentence]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        self.warm_up()
        assert self._model is not None
        return self._model.score(example, sentences)
