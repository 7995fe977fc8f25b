"""Checking model files without loading weights (``ragsift config validate``, and before a load).

A GGUF file must be complete: magic bytes, version, metadata, tensor table, tensor offsets
inside the file (read with a few ``struct`` calls: ``gguf.GGUFReader`` maps every tensor and
takes seconds on a 100 MB file). A model folder must hold a config or tokenizer, valid JSON and
readable safetensors headers. A Hub id must be in the local cache when the Hub is offline.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import struct
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragsift.errors import ConfigError

__all__ = ["check_location", "check_gguf_file"]

_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class _Cursor:
    """Reads little-endian GGUF header fields, failing with a message on a short file."""

    def __init__(self, fh: Any, size: int) -> None:
        self.fh, self.size = fh, size

    def take(self, fmt: str) -> Any:
        data = self.fh.read(struct.calcsize(fmt))
        if len(data) != struct.calcsize(fmt):
            raise ValueError("the file ends inside its header (truncated)")
        return struct.unpack(fmt, data)[0]

    def string(self) -> str:
        length = self.take("<Q")
        if length > self.size:
            raise ValueError(f"a header string claims {length} bytes, more than the file holds (truncated or corrupted)")
        return self.fh.read(length).decode("utf-8", errors="replace")

    def value(self, kind: int, depth: int = 0) -> None:
        if kind in _GGUF_SCALARS:
            self.take(_GGUF_SCALARS[kind])
        elif kind == 8:
            self.string()
        elif kind == 9 and depth < 4:
            item, count = self.take("<I"), self.take("<Q")
            if count > self.size:
                raise ValueError(f"a header array claims {count} items, more than the file holds (truncated or corrupted)")
            if item in _GGUF_SCALARS:
                        self.fh.seek(struct.calcsize(_GGUF_SCALARS[item]) * count, 1)
            else:
                for _ in range(count):
                    self.value(item, depth + 1)
        else:
            raise ValueError(f"unknown metadata value type {kind}")


def check_gguf_file(path: Path) -> None:
    """Check that ``path`` is a complete GGUF file (magic, version, metadata and tensor table,
    tensor offsets inside the file) without reading the weights; ValueError says what is wrong."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        cursor = _Cursor(fh, size)
        if fh.read(4) != b"GGUF":
            raise ValueError("it does not start with the GGUF magic bytes (not a GGUF file, or corrupted)")
        version = cursor.take("<I")
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        tensors, entries = cursor.take("<Q"), cursor.take("<Q")
        if tensors > size or entries > size:
            raise ValueError("the header's counts are larger than the file (corrupted)")
        alignment = 32
        for _ in range(entries):
            key, kind = cursor.string(), cursor.take("<I")
            if key == "general.alignment" and kind == 4:
                alignment = cursor.take("<I")
            else:
                cursor.value(kind)
        last = 0
        for _ in range(tensors):
            cursor.string()
            dims = cursor.take("<I")
            if dims > 8:
                raise ValueError(f"a tensor claims {dims} dimensions (corrupted)")
            for _ in range(dims):
                cursor.take("<Q")
            cursor.take("<I")
            last = max(last, cursor.take("<Q"))
        start = -(-fh.tell() // max(alignment, 1)) * max(alignment, 1)
        if start + last >= size and tensors:
            raise ValueError("its tensor data ends before the last tensor starts (truncated)")


def _check_folder(folder: Path) -> None:
    markers = ("config.json", "adapter_config.json", "modules.json", "tokenizer.json", "tokenizer_config.json")
    if not any((folder / name).is_file() for name in markers):
        raise ValueError(f"the folder holds none of {', '.join(markers)} (not a model folder)")
    for path in sorted(folder.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path.name} is not valid JSON ({exc})") from None
    for path in sorted(folder.glob("*.safetensors")):
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="numpy"):
                pass
        except Exception as exc:  # safetensors raises its own error types
            raise ValueError(f"{path.name} is not a readable safetensors file ({exc})") from None


def _check_tokenizer_file(path: Path) -> None:
    """A tokenizer.json: valid JSON holding a tokenizer ``model`` (what the tokenizers library reads)."""
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(table, dict) or not isinstance(table.get("model"), dict):
        raise ValueError("not a tokenizer.json file (no 'model' table; a tokenizer saved by the tokenizers library or "
                         "transformers has one)")


def _hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


#: seconds to wait for one TCP connection to the Hub (one try, no retries) when a Hub id is not cached
HUB_PROBE_SECONDS = 3.0


@functools.lru_cache(maxsize=8)
def _hub_reachable(endpoint: str) -> bool:
    """Whether one TCP connection to the Hub's host opens within :data:`HUB_PROBE_SECONDS`
    (once per process and endpoint): without it, a model would be fetched only after the Hub
    client's retries (minutes) and then fail."""
    parts = urlsplit(endpoint)
    host, port = parts.hostname or "huggingface.co", parts.port or (80 if parts.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS):
            return True
    except OSError:
        return False


def _check_hub(location: Any, names: tuple[str, ...] = ("config.json", "adapter_config.json", "modules.json",
                                                        "tokenizer_config.json")) -> str | None:
    """The cached copy of the first of ``names`` in a Hub repository, else None when the Hub is
    reachable; a ValueError saying why when it is not."""
    from huggingface_hub import try_to_load_from_cache

    for name in names:
        cached = try_to_load_from_cache(location.path, name, revision=location.revision)
        if isinstance(cached, str):
            return cached
    if _hub_offline():
        raise ValueError("a Hugging Face Hub id that is not in the local cache, and the Hub is offline "
                         "(HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE): download it first, or name a local folder or GGUF file")
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if not _hub_reachable(endpoint):
        raise ValueError(f"a Hugging Face Hub id that is not in the local cache, and the Hub ({endpoint}) cannot be "
                         "reached from here, so it cannot be checked offline (loading it would fail after the Hub "
                         "client's retries): download it where the Hub is reachable, set HF_HUB_OFFLINE=1 to fail at "
                         "once, or name a local folder or GGUF file")
    return None


def check_hub_file(spec: str, location: Any, filename: str) -> Path:
    """``filename`` of the Hub repository ``location`` names (a :class:`ragsift.models.ModelLocation`
    of kind ``hub``): the cached copy, else downloaded by ``huggingface_hub``; ConfigError naming
    ``spec`` when the Hub is offline or unreachable, or the repository has no such file."""
    try:
        cached = _check_hub(location, (filename,))
    except ValueError as exc:
        raise ConfigError(f"Model '{spec}': {location.path}: {exc}.") from None
    if cached is not None:
        return Path(cached)
    import huggingface_hub

    try:
        return Path(huggingface_hub.hf_hub_download(location.path, filename, revision=location.revision))
    except Exception as exc:  # noqa: BLE001 - huggingface_hub's own error types (not found, HTTP, offline) vary by version
        raise ConfigError(f"Model '{spec}': cannot fetch {filename} from the Hub repository {location.path} "
                          f"({type(exc).__name__}: {str(exc)[:300]}).") from None


def check_location(spec: str, location: Any) -> None:
    """Check, without loading weights, that a resolved model (a :class:`ragsift.models.ModelLocation`)
    names something loadable: files exist and are readable in the format their name claims (GGUF
    header, model folder with valid JSON and safetensors headers, tokenizer.json file; a Hub id is
    in the local cache when offline). Raises ConfigError naming the model ``spec``."""
    try:
        if location.kind == "gguf" and location.file is not None:
            check_gguf_file(location.file)
        elif location.kind == "folder":
            _check_folder(Path(location.path))
        elif location.kind == "tokenizer":
            _check_tokenizer_file(Path(location.path))
        else:
            _check_hub(location)
    except OSError as exc:
        raise ConfigError(f"Model '{spec}': cannot read it ({exc.strerror or exc}).") from None
    except ValueError as exc:
        where = location.file if location.kind == "gguf" else location.path
        raise ConfigError(f"Model '{spec}': {where}: {exc}.") from None
