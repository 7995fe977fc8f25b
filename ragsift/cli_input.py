"""What ``ragsift compress`` reads beyond a file: standard input (``-i -``), and how many examples
its progress bar may expect."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import BinaryIO

from ragsift.datasets.loading import DataSource, bundled_sample_path
from ragsift.errors import DataFormatError, RagsiftError, UsageError

__all__ = ["STDIN", "STDIN_NAME", "stdin_to_file", "count_examples"]

#: the ``--input`` value that means standard input
STDIN = "-"
#: how errors name it
STDIN_NAME = "standard input (-i -)"


def stdin_to_file(folder: Path, stream: BinaryIO | None = None) -> Path:
    """Standard input copied to ``folder/stdin``. Spooled to a file, not streamed: every loader
    reads a path (a JSON array is parsed whole, errors name its line), and the format is detected
    from the file's first bytes by the loaders' own sniffers, as for any file."""
    if stream is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("--input - reads the dataset from standard input, which is a terminal here: pipe a file "
                             "into it (ragsift compress -c bm25 -i - < data.jsonl) or give its path with --input.")
        stream = sys.stdin.buffer
    path = folder / "stdin"
    with open(path, "wb") as out:
        shutil.copyfileobj(stream, out, 1 << 20)
    with open(path, "rb") as copied:
        head = copied.read(65536)
    if not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise DataFormatError(STDIN_NAME, None, "nothing arrived (or only blank space); pipe a dataset file into it.")
    return path


def count_examples(source: DataSource) -> int | None:
    """How many examples ``source`` holds when that is cheap to know, else None: a named dataset's
    catalogue count (the bundled sample is one), or the non-blank lines of a JSONL file read by a
    one-record-per-example loader (a byte scan, far cheaper than compressing). A JSON array is not
    counted: that would parse it twice."""
    from ragsift.datasets.catalogue import CATALOGUE
    from ragsift.datasets.file_loader import JsonRecordsLoader
    from ragsift.datasets.json_records import read_head
    from ragsift.datasets.loading import detect_format
    from ragsift.registry import get_registry

    dataset = source.dataset
    if dataset is None and source.path == bundled_sample_path():
        dataset = next((d for d in CATALOGUE.values() if d.shipped and d.file == source.path.name), None)
    if dataset is not None:
        return dataset.n if source.format in (None, dataset.format) else None
    if not source.path.is_file():  # a FIFO or a device: opening it to count could block; loading says what it is
        return None
    try:
        if read_head(source.path, 4096).lstrip("\ufeff \t\r\n").startswith("["):
            return None
        loader = get_registry().get("dataset", source.format or detect_format(source.path))
        if not (isinstance(loader, type) and issubclass(loader, JsonRecordsLoader)):
            return None
        with open(source.path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except (OSError, LookupError, ValueError, RagsiftError):
        return None  # no count: the bar shows the rate without a total, and loading says what is wrong
