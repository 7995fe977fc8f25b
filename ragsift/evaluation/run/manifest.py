"""The run manifest: everything needed to know what produced a run directory.

ragsift version and git commit, the config text with its SHA-256 and the resolved config, the
input file's SHA-256, model ids / revisions / file hashes, package versions, the device and the
command line. Secrets never enter it: readers describe themselves without keys (the OpenAI
reader records only the *name* of the environment variable that holds its key).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.disk_cache import config_strings
from ragsift.errors import ConfigError, DataFormatError, OutputError
from ragsift.output_files import describe_os_error, write_text_atomically
from ragsift.provenance import device_info, git_state, now, package_versions, sha256_bytes, sha256_file, stamp
from ragsift.remote import redact_config_table, redact_config_text

if TYPE_CHECKING:
    from ragsift.evaluation.run.plan import RunPlan

__all__ = [
    "MANIFEST_NAME", "sha256_file", "sha256_bytes", "git_state", "package_versions", "device_info", "model_specs",
    "describe_models", "read_manifest", "open_run_dir", "write_manifest", "now", "command_line", "run_manifest", "check_resume",
    "version_changes", "check_run_dir", "input_record",
]

MANIFEST_NAME = "manifest.json"

_MODEL_KEYS = ("model", "adapter")


def model_specs(config: Mapping[str, Any]) -> Iterator[str]:
    """Model strings named anywhere in a plugin config (keys ``model``, ``adapter``, ``*_model``)."""
    return config_strings(config, _MODEL_KEYS, "_model")


@functools.lru_cache(maxsize=64)
def _describe(spec: str) -> str:
    """JSON of ``describe_model(spec)``, hashed once per process (GGUF files are large)."""
    from ragsift.models import try_describe_model

    return json.dumps(try_describe_model(spec))  # the manifest records problems instead of failing the run


def describe_models(specs: Iterator[str] | list[str]) -> list[dict[str, Any]]:
    """``describe_model`` of each distinct spec; a spec that cannot be resolved records its error."""
    return [json.loads(_describe(spec)) for spec in dict.fromkeys(specs)]


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest of the run in ``run_dir`` (None: there is none); an unreadable one is a
    :class:`DataFormatError` naming it."""
    path = run_dir / MANIFEST_NAME
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise DataFormatError(path, None, f"cannot read this run's manifest ({exc}).") from None


def open_run_dir(run_dir: Path, manifest: Mapping[str, Any], config_bytes: bytes) -> None:
    """Make ``run_dir`` and write the manifest first (a folder holding anything else is a run),
    then the config file byte for byte; a failed write is an :class:`OutputError`."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_manifest(run_dir, manifest)
        (run_dir / "config.toml").write_bytes(config_bytes)
    except OSError as exc:
        raise OutputError(describe_os_error(exc)) from None


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> Path:
    """Write atomically (a killed run never leaves half a manifest); a failed write (a full disk)
    removes its temporary file and raises the OSError with the manifest's path."""
    path = run_dir / MANIFEST_NAME
    try:
        write_text_atomically(path, json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n")
    except OSError as exc:
        if not exc.filename:
            exc.filename = str(path)
        raise
    return path


def command_line(argv: list[str] | None = None) -> list[str]:
    return list(argv if argv is not None else sys.argv)


def run_manifest(plan: RunPlan) -> dict[str, Any]:
    """The manifest of a run starting now: everything about ``plan`` (status ``running``)."""
    opts, config = plan.options, plan.config
    (_, config_bytes), *included = config.files
    models = {label: describe_models(list(model_specs(c.config()))) for label, c in plan.compressors.items()}
    tokenizers = sorted({m.params.tokenizer for m in plan.metrics if hasattr(m.params, "tokenizer")})
    shard = None if plan.shard is None else {**plan.shard.to_dict(), "examples": plan.run_examples()}
    provenance = stamp()
    return {
        "ragsift_version": provenance["ragsift_version"],
        "git": provenance["git"],
        "created_at": provenance["created_at"],
        "status": "running",
        "command_line": command_line(opts.argv),
        # URL passwords and inline keys (of a [reader] that --no-reader leaves unchecked, say) never
        # enter the manifest; the hashes are the files' own
        "config": {"path": str(config.source), "sha256": sha256_bytes(config_bytes),
                   "text": redact_config_text(config_bytes.decode("utf-8", errors="replace")),
                   "includes": [{"path": str(p), "sha256": sha256_bytes(b),
                                 "text": redact_config_text(b.decode("utf-8", errors="replace"))} for p, b in included],
                   "overrides": [redact_config_text(o) for o in config.overrides],
                   "resolved": redact_config_table(config.table()),
                   "compressors": redact_config_table({label: {"name": c.registered_name, **c.config()}
                                                       for label, c in plan.compressors.items()})},
        "input": input_record(plan),
        "run": {"limit": plan.limit, "no_reader": opts.no_reader, "evaluation": plan.settings.model_dump(mode="json"),
                "shard": shard, "engine": opts.engine},
        "reader": None if plan.reader is None else {"name": plan.reader.registered_name, **plan.reader.describe()},
        "metrics": [{"name": m.registered_name, **m.config()} for m in plan.metrics],
        "models": {"compressors": models, "tokenizers": describe_models(tokenizers)},
        "packages": provenance["packages"],
        "device": device_info(),
    }


def input_record(plan: RunPlan) -> dict[str, Any]:
    """What the run reads: its file (hash, format, examples read) or, for a suite, every dataset's,
    under one SHA-256 over theirs (so that ``--resume`` and ``merge`` refuse a change to any)."""
    if not plan.parts:
        return {"path": str(plan.data), "sha256": sha256_file(plan.data), "format": plan.format,
                "examples": len(plan.examples)}
    datasets = [part.to_dict() for part in plan.parts]
    combined = sha256_bytes("".join(f"{d['name']}:{d['sha256']}\n" for d in datasets).encode())
    return {"path": str(plan.data), "sha256": combined, "format": plan.format, "examples": len(plan.examples),
            "data": ",".join(d["spec"] for d in datasets), "datasets": datasets}


def _short(digest: object) -> str:
    return f"{digest[:12]}..." if isinstance(digest, str) else repr(digest)


def _beside(path: str, config: str | None) -> str:
    """``path`` relative to the folder of the config that includes it (as given when it is elsewhere)."""
    if not config:
        return path
    return os.path.relpath(path, os.path.dirname(config)) if os.path.isabs(path) == os.path.isabs(config) else path


def check_resume(old: Mapping[str, Any], new: Mapping[str, Any], run_dir: Path) -> None:
    """Refuse to resume when the config, the input file, the compressors or ``--no-reader`` changed."""
    checks = [
        (old.get("config", {}).get("sha256"), new["config"]["sha256"], "the config file changed", new["config"]["path"]),
        (old.get("input", {}).get("sha256"), new["input"]["sha256"], "the input file changed", new["input"]["path"]),
        (old.get("run", {}).get("no_reader"), new["run"]["no_reader"], "--no-reader differs", None),
        (old.get("run", {}).get("shard"), new["run"]["shard"], "--shard differs", None),
        (old.get("config", {}).get("overrides", []), new["config"]["overrides"], "the --set overrides differ", None),
    ]
    if "compressors" in old.get("config", {}):  # the labels run: --compressors or CONFIG#LABEL chose other ones
        checks.append((sorted(old["config"]["compressors"]), sorted(new["config"]["compressors"]),
                       "the compressors differ (--compressors, CONFIG#LABEL)", None))
    # A file may be included several times (by each compressor that includes it): compare by path.
    # ... and relative to the config's folder, so that a checkout moved to another folder or machine resumes
    included_before = {_beside(i["path"], old.get("config", {}).get("path")): i["sha256"]
                       for i in old.get("config", {}).get("includes", [])}
    included_now = {_beside(i["path"], new["config"]["path"]): i["sha256"] for i in new["config"]["includes"]}
    checks.extend((included_before.get(path), sha, "a file the config includes changed", path)
                  for path, sha in included_now.items())
    checks.extend((sha, None, "the config no longer includes a file it included", path)
                  for path, sha in included_before.items() if path not in included_now)
    for before, now_, why, path in checks:
        if before != now_:
            shown = f"{path}: sha256 {_short(before)} -> {_short(now_)}" if path else f"run: {before!r}, now: {now_!r}"
            raise ConfigError(
                f"{run_dir}: cannot resume: {why} ({shown}). Resume with the same "
                "config, data and flags, or start a new run in another --out directory."
            )


def _model_hashes(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Model spec -> its file hashes (or its resolution error), over compressors and tokenizers."""
    models = manifest.get("models") or {}
    described = [d for ds in (models.get("compressors") or {}).values() for d in ds] + list(models.get("tokenizers") or [])
    out: dict[str, dict[str, Any]] = {}
    for d in described:
        if isinstance(d, Mapping) and "spec" in d:
            out[str(d["spec"])] = dict(d.get("sha256") or {}) if "error" not in d else {"(error)": d["error"]}
    return out


def version_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What changed since ``old`` was written that mixes two versions into one run: ragsift's
    version and the files of every model the run uses (named, with shortened hashes)."""
    changes = []
    if old.get("ragsift_version") != new.get("ragsift_version"):
        changes.append(f"ragsift {old.get('ragsift_version')} -> {new.get('ragsift_version')}")
    before, now_ = _model_hashes(old), _model_hashes(new)
    for spec in sorted(set(before) & set(now_)):
        files_before, files_now = before[spec], now_[spec]
        for name in sorted(set(files_before) | set(files_now)):
            a, b = files_before.get(name), files_now.get(name)
            if a == b:
                continue
            if a is None:
                changes.append(f"model '{spec}': file {name} is new")
            elif b is None:
                changes.append(f"model '{spec}': file {name} is gone")
            else:
                changes.append(f"model '{spec}': file {name} changed (sha256 {_short(a)} -> {_short(b)})")
    return changes


def _failed_before_any_record(run_dir: Path, manifest: Mapping[str, Any]) -> bool:
    """Whether the run in ``run_dir`` ended (failed or interrupted) before it wrote any prediction
    record: a failed model load, a missing package. Such a run holds nothing to resume."""
    if manifest.get("status") not in ("failed", "interrupted"):
        return False  # running (maybe in another process), paused or complete: never restarted silently
    predictions = run_dir / "predictions"
    return not predictions.exists() or (predictions.is_dir() and not any(
        p.is_file() and p.stat().st_size > 0 for p in predictions.rglob("*")))


def _clear_failed_run(run_dir: Path) -> None:
    """Remove what a run that failed before its first record wrote: its manifest, its copy of the
    config and its empty prediction files (caches, if any, stay: they are keyed by content)."""
    try:
        for name in (MANIFEST_NAME, "config.toml"):
            (run_dir / name).unlink(missing_ok=True)
        predictions = run_dir / "predictions"
        if predictions.is_dir():
            for path in sorted(predictions.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
            predictions.rmdir()
    except OSError as exc:
        raise OutputError(f"--out {run_dir} holds a run that failed before its first record; it could not be cleared "
                          f"to start again ({describe_os_error(exc)}). Remove it, or choose another --out directory.") from None


def check_run_dir(run_dir: Path, resume: bool, *, resumable: bool = True) -> dict[str, Any] | None:
    """The manifest of the run in ``run_dir`` to resume (None: a new run). A run directory is
    either new or empty, or a ragsift run that ``--resume`` continues (``resumable=False``: a
    command without ``--resume``, such as ``merge``, which never suggests it). A run that failed
    before it wrote any prediction record is started again (with or without ``--resume``): there
    is nothing to keep, and the fix of its failure (a package installed, a model file replaced)
    must not block the retry."""
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--out {run_dir} is a file; give a folder (new or empty) for the run.")
    old = read_manifest(run_dir)
    if old is not None and _failed_before_any_record(run_dir, old):
        _clear_failed_run(run_dir)  # nothing to resume or to lose: start it again, whatever the flags
        return None
    if old is not None:
        if not resume:
            hint = "pass --resume to finish it, or choose" if resumable else "choose"
            raise ConfigError(f"{run_dir} already holds a run ({MANIFEST_NAME}); {hint} another --out directory.")
        return old
    if run_dir.is_dir() and any(not p.name.startswith(f".{MANIFEST_NAME}.tmp") for p in run_dir.iterdir()):
        raise OutputError(f"--out {run_dir} is not empty and holds no ragsift run (no {MANIFEST_NAME}); a run is "
                          "written only into a new or empty folder. Choose another --out directory.")
    return None
