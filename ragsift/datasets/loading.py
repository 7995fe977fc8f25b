"""Loading examples from a file by format name, or by detecting the format."""

from __future__ import annotations

import importlib.resources
import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragsift.errors import DataFormatError
from ragsift.types import Example

__all__ = ["BUNDLED_SAMPLE", "bundled_sample_path", "detect_format", "load_examples"]

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
    from ragsift.registry import get_registry

    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, "no such file; give the path of a dataset file.")
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


def load_examples(
    source: str | Path | None,
    format: str | None = None,
    limit: int | None = None,
    params: Mapping[str, Any] | None = None,
) -> Iterator[Example]:
    """Examples of ``source`` read by the loader named ``format`` (detected when None).

    ``source=None`` reads the bundled HotpotQA sample. ``limit`` keeps the first examples only;
    ``params`` are the loader's params (e.g. ``{"top_k": 5}`` for ``retrieval``).
    """
    from ragsift.registry import get_registry

    if limit is not None and limit < 0:
        raise ValueError(f"load_examples: 'limit' must be >= 0 or None; got {limit}.")
    if source is None:
        path = bundled_sample_path()
        name = format or "hotpotqa"
    else:
        path = Path(source)
        if not path.is_file():
            raise DataFormatError(path, None, "no such file; give the path of a dataset file.")
        name = format or detect_format(path)
    loader = get_registry().create("dataset", name, dict(params or {}))
    examples = loader.load(path)
    return examples if limit is None else itertools.islice(examples, limit)
