"""Writing an output file without losing input or leaving a truncated file behind.

:func:`check_output` refuses, before anything is opened for writing, an output that is one of
the inputs (also through a symlink or a hard link), a folder, a file in a missing folder, or an
existing file (unless ``force``). :class:`AtomicOutput` writes to a temporary file in the same
folder and renames it into place only on success; a failed or interrupted run keeps what it
wrote under ``NAME.partial`` and never under the final name (:func:`write_atomically`: the
same for a file written in one go, which leaves nothing behind when it fails). Special files (``/dev/stdout``,
``/dev/full``, pipes) are written directly: they cannot be renamed into.

Every name a write may create is checked, not only the output: ``NAME.partial`` (and any
companion file the caller names, such as a manifest beside the output) may not be an input
either, and an existing one is not replaced without ``force``. The temporary name is made by
``mkstemp`` (a new file, created exclusively), so it can never be an existing file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from ragsift.errors import OutputError

__all__ = ["check_output", "AtomicOutput", "describe_os_error", "partial_path", "PARTIAL_SUFFIX", "write_atomically",
           "write_text_atomically", "write_toml_atomically"]

PARTIAL_SUFFIX = ".partial"


def partial_path(path: str | Path) -> Path:
    """``NAME.partial``: where :class:`AtomicOutput` keeps what a failed run wrote."""
    path = Path(path)
    return path.with_name(path.name + PARTIAL_SUFFIX)


def describe_os_error(exc: OSError, path: str | Path | None = None) -> str:
    """``"cannot write PATH: No space left on device"``: one line, the path first."""
    where = path if path is not None else (exc.filename or "")
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason += " (no write permission there)"
    return f"cannot write {where}: {reason}."


def _is_special(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(output: str | Path, inputs: Iterable[str | Path | None] = (), *, force: bool = False,
                 flag: str = "--output", companions: Iterable[str | Path] = ()) -> Path:
    """Check that ``output`` may be written; raise :class:`OutputError` saying why not.

    ``companions``: other files the command writes beside ``output`` (a manifest); they and
    ``NAME.partial`` are checked like the output: never an input, never replaced unless ``force``."""
    path = Path(output)
    sources = [Path(s) for s in inputs if s is not None]
    for source in sources:
        if _same_file(path, source):
            raise OutputError(f"{flag} {path} is the input file {source}; writing it would destroy the input. "
                              "Choose another output file.")
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give the name of a file to write.")
    if _is_special(path):
        return path
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OutputError(f"{flag} {path}: the folder {folder} {what}; create it first.")
    partial = partial_path(path)
    others = [(partial, "where a failed run keeps what it wrote"),
              *((Path(c), "written beside it") for c in companions)]
    for other, role in others:
        for source in sources:
            if _same_file(other, source):
                raise OutputError(f"{flag} {path}: {other} ({role}) is the input file {source}; the run could "
                                  "destroy the input. Choose another output file.")
    if path.exists() and not force:
        raise OutputError(f"{flag} {path} already exists; pass --force to overwrite it, or choose another file.")
    for other, role in others:
        if other.exists() and not force:
            raise OutputError(f"{flag} {path}: {other} ({role}) already exists (perhaps from an earlier run); move "
                              "or delete it, pass --force to overwrite it, or choose another output file.")
    return path


def _mode_for(path: Path) -> int:
    """The permissions the file would get from a plain ``open``: an overwritten file keeps its
    own, a new one gets 0o666 less the umask (``mkstemp`` would give 0o600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomically(path: Path, write: Callable[[str], object]) -> None:
    """``write(name)`` to a temporary name beside ``path``, then rename it to ``path``: a kill or
    a full disk leaves the old file (or none), never a truncated one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(str(tmp))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """:func:`write_atomically` for a text (UTF-8) file."""
    write_atomically(path, lambda name: Path(name).write_text(text, encoding="utf-8"))


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def write_toml_atomically(path: Path, table: Mapping[str, Any]) -> None:
    """A frozen config (``tune``, ``calibrate``) as TOML, written atomically; keys whose value is
    None are left out (TOML has no null)."""
    import tomli_w

    write_text_atomically(path, tomli_w.dumps(_without_none(table)))


class AtomicOutput:
    """A text file written under a temporary name and renamed into place on success.

    On an exception inside the ``with`` block, whatever was written is kept as
    ``NAME.partial`` (``partial_path``) when it is not empty, and the final name is untouched.
    An existing ``NAME.partial`` is replaced only with ``replace_partial`` (the command line's
    ``--force``, after :func:`check_output`); otherwise the first free ``NAME.partial.N`` is used.
    """

    def __init__(self, path: str | Path, *, replace_partial: bool = False) -> None:
        self.path = Path(path)
        self.replace_partial = replace_partial
        self.partial_path: Path | None = None
        self._tmp: Path | None = None
        self._fh: TextIO | None = None
        #: a device or pipe, written directly
        self.special = _is_special(self.path)

    def __enter__(self) -> TextIO:
        try:
            if self.special:
                self._fh = self.path.open("w", encoding="utf-8")
            else:
                fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
                self._tmp = Path(name)
                os.chmod(fd, _mode_for(self.path))
                self._fh = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise OutputError(describe_os_error(exc, self.path)) from None
        return self._fh

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._fh is not None
        fh, tmp = self._fh, self._tmp
        if kind is None:
            try:
                fh.flush()
                if tmp is not None:
                    os.fsync(fh.fileno())
                fh.close()
                if tmp is not None:
                    os.replace(tmp, self.path)
            except OSError as err:
                self._abandon(fh, tmp)
                raise OutputError(describe_os_error(err, self.path)) from None
            return
        self._abandon(fh, tmp)

    def _abandon(self, fh: TextIO, tmp: Path | None) -> None:
        with contextlib.suppress(OSError):  # the write already failed (disk full): nothing more to save
            fh.close()
        if tmp is None or not tmp.exists():
            return
        if tmp.stat().st_size:
            partial = partial_path(self.path)
            number = 0
            while not self.replace_partial and os.path.lexists(partial):
                number += 1
                partial = partial_path(self.path).with_name(f"{self.path.name}{PARTIAL_SUFFIX}.{number}")
            os.replace(tmp, partial)
            self.partial_path = partial
        else:
            tmp.unlink()
