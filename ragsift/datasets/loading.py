"""Loading examples from a file by format name, or by detecting the format; which file and
format a run reads (:func:`resolve_data`: a file, or a named dataset of
:mod:`ragsift.datasets.catalogue`)."""

from __future__ import annotations

import importlib.resources
import itertools
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsift.datasets.catalogue import CATALOGUE, NamedDataset, named_dataset
from ragsift.datasets.file_loader import check_input_file
from ragsift.errors import ConfigError, DataFormatError
from ragsift.provenance import sha256_file
from ragsift.registry import get_registry
from ragsift.suggestions import did_you_mean
from ragsift.types import Example

__all__ = ["warn_empty_questions", "BUNDLED_SAMPLE", "DataSource", "bundled_sample_path", "detect_format", "load_examples", "named_source",
           "resolve_data"]

#: the evaluation sample shipped inside the package (100 HotpotQA dev questions)
BUNDLED_SAMPLE = "hotpotqa-dev-sf100.json"


def bundled_sample_path() -> Path:
    """Path of the bundled HotpotQA evaluation sample (``ragsift/data/hotpotqa-dev-sf100.json``)."""
    resource = importlib.resources.files("ragsift").joinpath("data", BUNDLED_SAMPLE)
    path = Path(str(resource))
    if not path.is_file():
        raise DataFormatError(path, None, "the bundled sample is missing from this installation; reinstall ragsift.")
    return path


def detect_format(path: str | Path) -> str:
    """The name of the registered dataset loader whose ``sniff`` accepts ``path``."""
    from ragsift.datasets.json_records import read_head

    path = Path(path)
    check_input_file(path)
    head = read_head(path)
    if not head.lstrip("\ufeff \t\r\n"):
        raise DataFormatError(path, None, "the file is empty; expected a dataset file.")
    registry = get_registry()
    names = registry.names("dataset")
    for name in names:
        loader_cls: Any = registry.get("dataset", name)
        if loader_cls.sniff(path, head):
            return name
    raise DataFormatError(
        path,
        None,
        "could not detect the dataset format; name it with format=... (CLI: --format). "
        f"Known formats: {', '.join(names)}.",
    )


def warn_empty_questions(examples: Iterable[Example], where: str | Path) -> Iterator[Example]:
    """``examples`` unchanged, saying on standard error which have an empty question (a reader
    asked nothing answers nothing: a data problem worth knowing, not a reason to stop a run)."""
    empty = 0
    for ex in examples:
        if not ex.question.strip():
            empty += 1
            if empty <= 3:
                print(f"ragsift: warning: {where}: example '{ex.id}' has an empty question.", file=sys.stderr)
        yield ex
    if empty > 3:
        print(f"ragsift: warning: {where}: {empty} examples have an empty question.", file=sys.stderr)


def load_examples(
    source: str | Path | None,
    format: str | None = None,
    limit: int | None = None,
    params: Mapping[str, Any] | None = None,
) -> Iterator[Example]:
    """Examples of ``source`` read by the loader named ``format`` (detected when None).

    ``source=None`` reads the bundled HotpotQA sample; a named dataset (``"musique-dev"``, ``ragsift
    datasets``) that is not a file is read by its own loader. ``limit`` keeps the first examples
    only; ``params`` are the loader's params (e.g. ``{"top_k": 5}`` for ``retrieval``).
    """
    if limit is not None and limit < 0:
        raise ValueError(f"load_examples: 'limit' must be >= 0 or None; got {limit}.")
    if source is not None and str(source) in CATALOGUE and not Path(source).exists():
        named = named_source(str(source), format, params)
        source, format = named.path, named.format
    if source is None:
        path = bundled_sample_path()
        name = format or "hotpotqa"
    else:
        path = Path(source)
        check_input_file(path)
        name = format or detect_format(path)
    loader = get_registry().create("dataset", name, dict(params or {}))
    examples = loader.load(path)
    return examples if limit is None else itertools.islice(examples, limit)


@dataclass(frozen=True)
class DataSource:
    """A file, the loader that reads it (None: detected) and the loader's params; ``name`` is the
    named dataset the file is (``ragsift datasets``), None for a file given by its path."""

    path: Path
    format: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    name: str | None = None

    def load(self, limit: int | None = None) -> Iterator[Example]:
        return load_examples(self.path, self.format, limit, self.params)

    def sha256(self) -> str:
        """The SHA-256 of the file (a named dataset's is the one its catalogue entry records)."""
        return sha256_file(self.path)

    @property
    def dataset(self) -> NamedDataset | None:
        """The catalogue entry of a named dataset (its role, labels, source, licence), else None."""
        return None if self.name is None else named_dataset(self.name)


def named_source(name: str, format: str | None = None, params: Mapping[str, Any] | None = None) -> DataSource:
    """What a run reads for the named dataset ``name``: its file and loader (``format`` overrides
    the loader); a ConfigError listing the named datasets for an unknown name."""
    found = named_dataset(name)
    return DataSource(found.path(), format or found.format, dict(params or {}), name=found.name)


def _looks_like_a_name(text: str) -> bool:
    """A string with no folder and no file extension: what a named dataset looks like."""
    path = Path(text)
    return len(path.parts) == 1 and not path.suffix and not text.startswith(("~", "."))


def resolve_data(dataset: Mapping[str, Any] | None, source: str | Path | None = None,
                 format: str | None = None) -> DataSource:
    """What a run reads, from a config's ``[dataset]`` table and the command line's file and format.

    The file: ``source``, else the table's ``path``, else the bundled HotpotQA sample. The loader:
    ``format``, else the table's ``name``, else detected (the bundled sample: ``hotpotqa``), with
    the table's other keys as its params; when ``source`` is another file than the table's path,
    the table does not describe it, so its format is detected and its params are not used.

    ``source`` (or the table's ``path``) may name a dataset of the catalogue (``hotpotqa-eval``,
    ``ragsift datasets``): a file that exists wins, else the named dataset (read by its own loader
    unless ``format`` names another), else the file as given (loading it says it is missing; a
    name-like string that names no dataset is refused here, listing the named datasets).
    """
    spec = dict(dataset or {})
    name, path = spec.pop("name", None), spec.pop("path", None)
    if source is not None and format is None and path is not None and Path(source) != Path(path):
        name, spec = None, {}
    from_table = source is None and path is not None
    if from_table:  # a config's path: relative to its file (anchored), cwd, shipped data
        from ragsift.models import resolve_local_path

        source = resolve_local_path(Path(path).expanduser())
    if source is None:
        return DataSource(bundled_sample_path(), format or name or "hotpotqa", spec)
    chosen = Path(source).expanduser()
    text = str(source)
    if not chosen.exists() and text in CATALOGUE:
        if from_table:  # the table describes this name: its loader name and params apply
            return named_source(text, format or name, spec)
        return named_source(text, format)
    if not chosen.exists() and _looks_like_a_name(text):
        raise ConfigError(f"'{text}' is neither a file nor a named dataset. Named datasets: {', '.join(CATALOGUE)} "
                          f"(see 'ragsift datasets'); or give the path of a data file.{did_you_mean(text, CATALOGUE)}")
    return DataSource(chosen, format or name, spec)
