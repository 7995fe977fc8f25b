"""What every built-in loader shares: the optional ``path`` param and format sniffing helpers."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from pathlib import Path

from ragsift.datasets.base import DatasetLoader
from ragsift.datasets.json_records import Record, iter_json_or_jsonl
from ragsift.errors import ConfigError, DataFormatError
from ragsift.plugin import Params
from ragsift.types import Example

__all__ = ["LoaderParams", "FileLoader", "JsonRecordsLoader", "head_has_keys", "head_starts_with", "check_input_file"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_input_file(path: Path, expected: str = "the path of a dataset file") -> None:
    """Nothing when ``path`` is a regular file (or a link to one); else a :class:`DataFormatError`
    saying what it is: missing, a folder, a FIFO, a device, unreadable."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataFormatError(path, None, f"no such file; give {expected}.") from None
    except OSError as exc:
        raise DataFormatError(path, None, f"cannot be opened ({exc.strerror or exc}); give {expected}.") from None
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise DataFormatError(path, None, f"this is {what}, not a file; give {expected}.")


class LoaderParams(Params):
    """``path``: the file read when ``load()`` is called without one (a config's ``[dataset]``
    table may name it)."""

    path: str | None = None


class FileLoader(DatasetLoader):
    """A loader of one file format; subclasses implement :meth:`read`."""

    Params = LoaderParams
    #: a human name of the format, used in error messages
    format_name: str = "dataset"

    def load(self, path: str | Path | None = None) -> Iterator[Example]:
        """Examples of ``path`` (or of the ``path`` param), in file order."""
        chosen = path if path is not None else self.params.path
        if chosen is None:
            raise ConfigError(f"{type(self).__name__}: no file to read: pass a path to load() or set the 'path' param.")
        resolved = Path(chosen)
        check_input_file(resolved, f"a {self.format_name} file")
        return self.read(resolved)

    def read(self, path: Path) -> Iterator[Example]:  # pragma: no cover - abstract in practice
        raise NotImplementedError


class JsonRecordsLoader(FileLoader):
    """A loader of one record per example, as a JSON array or JSONL; subclasses implement
    :meth:`to_example` and name their records (``records_name``, used in error messages)."""

    records_name: str = "records"

    def read(self, path: Path) -> Iterator[Example]:
        for record in iter_json_or_jsonl(path, self.records_name):
            yield self.to_example(record)

    def to_example(self, record: Record) -> Example:  # pragma: no cover - abstract in practice
        raise NotImplementedError


def head_has_keys(head: str, *keys: str) -> bool:
    """Whether every ``"key":`` occurs in ``head`` (exact key names: ``"ctxs"`` does not match
    ``"positive_ctxs"``)."""
    return all(re.search(r'"' + re.escape(k) + r'"\s*:', head) for k in keys)


def head_starts_with(head: str, chars: str) -> bool:
    """Whether the first non-blank character of ``head`` is one of ``chars``."""
    stripped = head.lstrip("\ufeff \t\r\n")
    return bool(stripped) and stripped[0] in chars
