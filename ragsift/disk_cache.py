"""A small content-addressed store of JSON values: one file per key, written atomically.

Used by the score cache (:mod:`ragsift.scorers.caching`) and the reader answer cache
(:mod:`ragsift.readers.caching`); :class:`JsonlStore` keeps the same values as the lines of one
file (a labeler's reader cache, shipped beside its records). A key is the SHA-256 of a canonical JSON of everything that
determines the value (:func:`digest`), so a changed input is simply another key: nothing is ever
invalidated in place, and stale entries are never read.

Safety: each value is written to a temporary file in the same folder and moved over its final
name with ``os.replace`` (atomic on POSIX and Windows), so a reader sees either no entry or a
complete one, never half a write; a killed writer leaves at most a stray ``*.tmp`` file, which
no reader looks at. Two processes writing the same key both write complete files and the last
rename wins (the values are equal: same key, same inputs). An entry that cannot be read back as
the JSON object it should be (a disk fault, a hand edit) counts as missing and is rewritten.
No pickle: values are plain JSON.

Each entry carries the SHA-256 of its value (``checksum``), so a well-formed but altered entry
(an edit; a shared cache that every run and checkout reads) is a miss too: it is named in a
warning and computed again. Where a checksum is expected, a missing or ``null`` one is the same
miss (issue 53): in a cache folder this version started (it writes :data:`MARKER` into a folder
that holds no entry yet) and in a JSONL file with the store's header. Entries of a folder from
before checksums have none; they are read as before (recomputing a shared cache of model scores
would cost hours), and older checkouts read the new entries (the extra field is ignored). A
checksum guards against accidents, not against someone who can write the cache: they can
recompute it.

``JsonStore(None)`` keeps values in memory only (the same interface without a disk).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, OutputError
from ragsift.provenance import sha256_file

__all__ = ["JsonStore", "JsonlStore", "JSONL_HEADER", "MARKER", "check_cache_path", "CacheWrapper", "config_strings", "digest",
           "model_identity", "value_checksum"]

log = logging.getLogger(__name__)
#: the entry fields that are not part of the value its checksum covers
_ENTRY_FIELDS = ("key", "checksum")

#: the file a :class:`JsonStore` writes into a cache folder it starts: every entry there has a checksum
MARKER = ".ragsift-cache.json"

_MODEL_KEYS = ("model", "adapter", "head")
#: keys naming a single weight file of ragsift's own (a Yes/No scorer's ``readout``), keyed by content
_FILE_KEYS = ("readout",)
#: ragsift's own model files that are not safetensors (the learned-fusion scorer's fitted model),
#: keyed by content when a model string names one or a folder that holds one
_OWN_MODEL_FILES = ("fusion.json", "bridge-documents.json")


def digest(parts: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``parts`` (sorted keys, no whitespace)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def value_checksum(entry: Mapping[str, Any]) -> str:
    """The checksum of an entry's value: :func:`digest` of its fields but ``key`` and ``checksum``."""
    return digest({k: v for k, v in entry.items() if k not in _ENTRY_FIELDS})


def config_strings(config: Mapping[str, Any], keys: tuple[str, ...], suffix: str | None = None) -> Iterator[str]:
    """The non-empty strings of a nested plugin config under ``keys`` or a key ending in ``suffix``."""
    for key, value in config.items():
        if isinstance(value, Mapping):
            yield from config_strings(value, keys, suffix)
        elif isinstance(value, str) and value and (key in keys or (suffix is not None and key.endswith(suffix))):
            yield value


def _stamp(spec: str) -> tuple[Any, ...]:
    """Size and modification time of the weight files ``describe_model`` hashes (cheap), so the
    hash below is recomputed when a file changes within a process."""
    from ragsift.models import resolve_model

    try:
        location = resolve_model(spec)
    except Exception:  # noqa: BLE001 - keyed by its error below
        return ()
    if location.kind == "gguf" and location.file is not None:
        files = [location.file]
    elif location.kind == "folder":
        files = sorted(Path(location.path).glob("*.safetensors"))
    else:
        return ()
    stats = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        stats.append((path.name, st.st_size, st.st_mtime_ns))
    return tuple(stats)


@functools.lru_cache(maxsize=64)
def _describe(spec: str, stamp: tuple[Any, ...]) -> str:
    from ragsift.models import try_describe_model

    # hashes weight files once per process and file version; a model that cannot be resolved is keyed by its error
    return json.dumps(try_describe_model(spec), sort_keys=True)


@functools.lru_cache(maxsize=64)
def _file_digest(spec: str, stamp: tuple[Any, ...]) -> str:
    from ragsift.models import resolve_local_path

    try:
        return json.dumps({"file": spec, "sha256": sha256_file(resolve_local_path(spec))})
    except OSError as exc:
        return json.dumps({"file": spec, "error": str(exc)})


def _file_stamp(spec: str) -> tuple[Any, ...]:
    from ragsift.models import resolve_local_path

    try:
        st = resolve_local_path(spec).stat()
    except OSError:
        return ()
    return (st.st_size, st.st_mtime_ns)


def _own_model_files(spec: str) -> Iterator[str]:
    """The files of :data:`_OWN_MODEL_FILES` a model string names, itself or inside its folder
    (as given, so that the key does not hold this checkout's path)."""
    from ragsift.models import resolve_local_path

    path = resolve_local_path(spec)
    if path.is_file() and path.name in _OWN_MODEL_FILES:
        yield spec
    elif path.is_dir():
        yield from (f"{spec.rstrip('/')}/{name}" for name in _OWN_MODEL_FILES if (path / name).is_file())


def model_identity(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Location, revision and weight-file hashes (as the run manifest records them) of every model
    a plugin config names (keys ``model``, ``adapter``, ``head``, ``*_model``), then the SHA-256 of
    every single weight file it names (``readout``) and of ragsift's own model files those models
    are (a learned-fusion ``fusion.json``, a ``bridge-documents.json``), so a retrained file is
    another key. A model known by the hashes of its files is keyed without its local path: the
    same files installed in another checkout's environment give the same key (the shared cache is
    shared); a ``split:`` model by its pin (:func:`_pinned`)."""
    specs = list(dict.fromkeys(config_strings(config, _MODEL_KEYS, "_model")))
    models = [_pinned(spec) or _without_path(json.loads(_describe(spec, _stamp(spec)))) for spec in specs]
    files = dict.fromkeys([*config_strings(config, _FILE_KEYS), *(f for spec in specs for f in _own_model_files(spec))])
    return models + [json.loads(_file_digest(spec, _file_stamp(spec))) for spec in files]


class CacheWrapper:
    """What the score and reader-answer caches share: each behaves as the plugin it wraps (name,
    params, config; any other attribute is the wrapped one's), is keyed by its :meth:`identity`,
    and stores nothing new inside :meth:`read_only` (untimed warm-up runs)."""

    def _wrap(self, inner: Any, store: Any) -> None:
        # no Plugin.__init__: the params are the wrapped plugin's
        self.inner = inner
        self.params = inner.params
        self.registered_name = inner.registered_name
        self.store = store
        self.stats = {"hits": 0, "misses": 0}
        self._identity: dict[str, Any] | None = None
        self._store_new = True

    def config(self) -> dict[str, Any]:
        return self.inner.config()

    def __getattr__(self, name: str) -> Any:  # anything else the plugin offers: the wrapped one's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def identity(self) -> dict[str, Any]:
        """The plugin part of the key: name, config and model identities (computed once)."""
        if self._identity is None:
            config = self.inner.config()
            self._identity = {"name": self.inner.registered_name or type(self.inner).__qualname__,
                              "config": config, "models": model_identity(config)}
        return self._identity

    @contextlib.contextmanager
    def read_only(self) -> Iterator[None]:
        """Within the block, cached values are used but new ones are not stored."""
        before, self._store_new = self._store_new, False
        try:
            yield
        finally:
            self._store_new = before


def _pinned(spec: str) -> dict[str, Any] | None:
    """A ``split:`` model's identity from its pin, as :func:`ragsift.models.describe_model` gives
    it once assembled, without assembling it: the same key with or without its packages (a shipped
    cache is reused on a machine that has only the cache)."""
    if not spec.startswith("split:"):
        return None
    from ragsift.split_models import find_split_model

    try:
        split = find_split_model(spec[len("split:") :])
    except ConfigError:
        return None
    return {"spec": spec, "kind": "gguf", "sha256": {split.filename: split.sha256}, "packages": split.requirements()}


def _without_path(described: dict[str, Any]) -> dict[str, Any]:
    if described.get("sha256"):
        described.pop("path", None)
    return described


class JsonStore:
    """``key -> JSON object`` in ``folder/<key[:2]>/<key>.json`` (``folder=None``: memory only).

    Values read from disk are also kept in memory for the life of the store."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = None if folder is None else Path(folder).expanduser()
        self._memory: dict[str, dict[str, Any]] = {}
        self._checksums_expected: bool | None = None  # whether MARKER is there (looked up once)
        self._marker_checked = False

    def _expects_checksums(self) -> bool:
        if self._checksums_expected is None:
            self._checksums_expected = self.folder is not None and (self.folder / MARKER).is_file()
        return self._checksums_expected

    def _start_folder(self) -> None:
        """Once per store: a folder that holds no entry yet gets :data:`MARKER`, since every entry
        this version writes has a checksum (a folder from before checksums is left as it is)."""
        if self._marker_checked or self.folder is None:
            return
        self._marker_checked = True
        if self._expects_checksums() or any(self.folder.glob("??/*.json")):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / MARKER).write_text(json.dumps({"format": "ragsift-json-cache", "checksums": True}) + "\n")
        self._checksums_expected = True

    def path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key`` (without its checksum), or None (also for an unreadable
        or altered entry)."""
        if key in self._memory:
            return self._memory[key]
        path = self.path(key)
        if path is None:
            return None
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, or not the complete JSON it should be
            return None
        if not isinstance(value, dict) or value.get("key") != key:
            return None
        present = "checksum" in value
        checksum = value.pop("checksum", None)
        if checksum is None and (present or self._expects_checksums()):
            log.warning("%s: this cache entry has no checksum where one is expected (edited or corrupted); it is "
                        "ignored and computed again.", path)
            return None
        if checksum is not None and checksum != value_checksum(value):
            log.warning("%s: this cache entry does not match its checksum (edited or corrupted); it is ignored "
                        "and computed again.", path)
            return None
        self._memory[key] = value
        return value

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` (a JSON object; its ``key`` field is set, and on disk its ``checksum``)."""
        record = {**{k: v for k, v in value.items() if k not in _ENTRY_FIELDS}, "key": key}
        self._memory[key] = record
        record = {**record, "checksum": value_checksum(record)}
        path = self.path(key)
        if path is None:
            return
        self._start_folder()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(record, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError) and not exc.filename:  # a full disk: name this entry, not the caller's file
                exc.filename = str(path)
            raise

    def __len__(self) -> int:
        if self.folder is None:
            return len(self._memory)
        return sum(1 for _ in self.folder.glob("??/*.json"))


#: the first line :class:`JsonlStore` writes into a file it creates: its proof that the file is its
#: own (a ``key`` no lookup uses, so checkouts from before the header read it as an unused entry)
JSONL_HEADER = {"key": "#ragsift-jsonl-cache", "format": "ragsift-jsonl-cache", "version": 1}
_HEADER_LINE = json.dumps({**JSONL_HEADER, "checksum": value_checksum(JSONL_HEADER)}, ensure_ascii=False).encode() + b"\n"


def _not_a_cache(path: Path, why: str) -> ConfigError:
    return ConfigError(f"{path}: not a ragsift cache file ({why}); it was left unchanged. Give 'cache' the name of a "
                       "new file (or of a cache ragsift wrote).")


class JsonlStore:
    """``key -> JSON object`` as the lines of one JSONL file (``path=None``: memory only): each
    value is appended, flushed and synced as it is stored, so a killed writer loses at most the
    line it was writing. Each line carries its value's ``checksum`` as :class:`JsonStore`'s
    entries do: a well-formed but altered line is a miss (named in a warning; the value is
    computed again and appended, and the later line wins when the file is read again).

    The store never changes a file it has not proven to be its own: a file it creates starts with
    :data:`JSONL_HEADER`, and only a file that starts with it has a cut-short last line (a killed
    write) dropped when opened again. A file without the header is used only when every line is
    a complete cache line with a checksum (a cache written before the header); anything else (a
    dataset, a JSON file without a final newline, a line that is not a cache entry) is refused,
    naming the file, and left byte for byte as it was (issue 53). A broken line in a cache is an
    error naming the file and line (nothing is discarded)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = None if path is None else Path(path).expanduser()
        self._memory: dict[str, dict[str, Any]] = {}
        self._proven = False  # whether the file at self.path was read and found to be a cache
        if self.path is not None and self.path.exists():
            self.check(self.path)  # a folder or a file that is not a cache: refused before anything
            self._load(self.path)

    @classmethod
    def check(cls, path: str | Path) -> None:
        """Raise a ConfigError naming ``path`` when it exists and is not a cache this store may
        use (see the class docstring); read only, nothing is written."""
        path = Path(path).expanduser()
        if path.is_dir():
            raise ConfigError(f"{path}: a cache is a file; this is a folder.")
        if path.is_file():
            cls._records(path, path.read_bytes())

    @staticmethod
    def _records(path: Path, data: bytes) -> tuple[bool, list[tuple[int, dict[str, Any]]]]:
        """(whether ``data`` starts with the store's header, the complete lines as records);
        raises a ConfigError for a file the store may not use. Never writes."""
        own = data.startswith(_HEADER_LINE)
        if not own and data and not data.endswith(b"\n"):
            raise _not_a_cache(path, "no header line of a ragsift cache, and no final line break")
        complete = data[: data.rfind(b"\n") + 1]
        try:
            text = complete.decode("utf-8")
        except UnicodeDecodeError:
            raise _not_a_cache(path, "not UTF-8 text") from None
        records: list[tuple[int, dict[str, Any]]] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or (own and number == 1):
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                if not own:
                    raise _not_a_cache(path, f"line {number} is not a JSON line") from None
                raise ConfigError(f"{path}:{number}: not a JSON line of a cache; delete the file or fix the line.") from None
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                if not own:
                    raise _not_a_cache(path, f"line {number} is not a cache entry")
                raise ConfigError(f"{path}:{number}: a cache line is a JSON object with a 'key'.")
            if not own and not isinstance(record.get("checksum"), str):
                raise _not_a_cache(path, f"line {number} has no checksum")
            records.append((number, record))
        return own, records

    def _load(self, path: Path) -> None:
        data = path.read_bytes()
        own, records = self._records(path, data)
        if own and not data.endswith(b"\n"):  # our own write cut short by a kill: appends start on a fresh line
            with path.open("r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)
        for number, record in records:
            present = "checksum" in record
            checksum = record.pop("checksum", None)
            if checksum is None and (present or own):  # every line after the header has one: a deleted one is corrupt
                log.warning("%s:%d: this cache line has no checksum where one is expected (edited or corrupted); it "
                            "is ignored and computed again.", path, number)
                continue
            if checksum is not None and checksum != value_checksum(record):
                log.warning("%s:%d: this cache line does not match its checksum (edited or corrupted); it is ignored "
                            "and computed again.", path, number)
                continue
            self._memory[record["key"]] = record
        self._proven = True

    def get(self, key: str) -> dict[str, Any] | None:
        return self._memory.get(key)

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` (a JSON object) as the line ``{"key": key, **value, "checksum": ...}``."""
        record = {"key": key, **{k: v for k, v in value.items() if k not in _ENTRY_FIELDS}}
        self._memory[key] = record
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({**record, "checksum": value_checksum(record)}, ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            # "x" first: a file this store creates gets the header (its proof of ownership) before any line
            try:
                with self.path.open("xb") as fh:
                    fh.write(_HEADER_LINE + line)
                    fh.flush()
                    os.fsync(fh.fileno())
                self._proven = True
                return
            except FileExistsError:
                if not self._proven:  # appeared since this store was opened: proven before it is appended to
                    self.check(self.path)
                    self._proven = True
            if self.path.stat().st_size == 0:  # an empty file of ours (or a fresh one): nothing to lose
                line = _HEADER_LINE + line
            with self.path.open("ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:  # a full disk: the error names this file, not whatever the caller writes
            if not exc.filename:
                exc.filename = str(self.path)
            raise

    def __len__(self) -> int:
        return len(self._memory)


def check_cache_path(cache: str | Path, others: Iterable[str | Path | None] = (), *, flag: str = "cache") -> Path:
    """Check that a JSONL cache a command appends to (a labeler's ``cache``) may be used; raise
    :class:`OutputError` saying why not. The checks of :func:`ragsift.output_files.check_output`,
    for a file that is extended, not replaced: never one of ``others`` (the command's inputs and
    outputs, also through a link or before an output exists), not a folder or a special file, and
    an existing file only when it is a cache ragsift wrote (:meth:`JsonlStore.check`, which reads
    it and changes nothing). No ``--force``: a file that is not a cache is never used."""
    from ragsift.output_files import _is_special, _same_file

    path = Path(cache).expanduser()
    for other in (Path(o) for o in others if o is not None):
        if _same_file(path, other) or path.resolve() == other.resolve():
            raise OutputError(f"{flag} {path} is also {other}, a file this command reads or writes; appending cache "
                              "lines to it would destroy it. Choose another cache file.")
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give the name of a cache file.")
    if _is_special(path):
        raise OutputError(f"{flag} {path} is not a regular file; give the name of a cache file.")
    try:
        JsonlStore.check(path)
    except ConfigError as exc:
        raise OutputError(f"{flag} {exc}") from None
    return path
