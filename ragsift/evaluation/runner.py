"""``ragsift evaluate``: compress (and read) every example with every configured compressor,
write one JSON line per example as soon as it is done, then summarise.

Run directory layout::

    RUN_DIR/manifest.json              what produced the run (see ragsift.evaluation.manifest)
    RUN_DIR/config.toml                the config file, byte for byte
    RUN_DIR/predictions/<label>.jsonl  one record per example and compressor
    RUN_DIR/summary.json, summary.md   means, CIs, paired tests, latency

Resuming (``resume=True``) skips the example ids already written, tolerates a truncated last
line, and refuses to continue when the config file, the input file or ``no_reader`` changed.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsift.config import RunConfig, load_config
from ragsift.errors import ConfigError, DataFormatError, OutputError, RagsiftError
from ragsift.evaluation import manifest as mf
from ragsift.evaluation import sweep as sw
from ragsift.evaluation.caches import RunCaches, attach_caches
from ragsift.evaluation.html_report import write_report
from ragsift.evaluation.predictions import PredictionWriter, prediction_paths, read_records
from ragsift.evaluation.report import build_summary, format_markdown, format_table
from ragsift.evaluation.settings import EvaluationSettings
from ragsift.evaluation.timing import timed_compress, timed_read
from ragsift.metrics.base import Metric, MetricInput, MetricOutput
from ragsift.models import OFFLINE_SMOLLM2
from ragsift.output_files import describe_os_error
from ragsift.readers.base import ReaderAnswer
from ragsift.registry import build_plugin
from ragsift.types import Example

__all__ = ["EvaluationInterrupted", "RunOptions", "run_evaluation", "resolve_data", "version_changes"]


class EvaluationInterrupted(RagsiftError):
    """A run stopped on an error; the records written so far are kept for ``--resume``."""


@dataclass
class RunOptions:
    """What the command line adds to a config."""

    config: str | Path
    out: Path
    data: str | Path | None = None
    format: str | None = None
    limit: int | None = None
    resume: bool = False
    #: with ``resume``: continue although ragsift's version or a model file changed
    allow_mixed: bool = False
    no_reader: bool = False
    argv: list[str] | None = None
    progress: bool = True
    echo: Callable[[str], None] = field(default=print)


def resolve_data(config: RunConfig, data: str | Path | None, fmt: str | None) -> tuple[Path, str | None]:
    """(file, loader name or None for detection) by the one rule, :func:`ragsift.datasets.resolve_data`."""
    source = config.data(data, fmt)
    return source.path, source.format


def _load_examples(config: RunConfig, opts: RunOptions, limit: int | None, path: Path) -> list[Example]:
    examples = list(config.data(opts.data, opts.format).load(limit))
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise ConfigError(f"{path}: example id '{ex.id}' occurs twice; evaluation (and --resume) needs unique ids.")
        seen.add(ex.id)
    if not examples:
        raise ConfigError(f"{path}: no examples to evaluate.")
    return examples


def build_metrics(settings: EvaluationSettings, reader: Any, source: str) -> list[Metric]:
    from ragsift.registry import get_registry

    registry = get_registry()
    specs = settings.metric_specs() or [{"name": n} for n in registry.names("metric")]
    tokenizer = settings.tokenizer or (reader.tokenizer_spec() if reader is not None else None) or OFFLINE_SMOLLM2
    metrics = []
    for spec in specs:
        cls = registry.get("metric", spec["name"])
        if reader is None and getattr(cls, "needs_reader", False):
            continue
        spec = dict(spec)
        if "tokenizer" in getattr(getattr(cls, "Params", None), "model_fields", {}) and "tokenizer" not in spec:
            spec["tokenizer"] = tokenizer
        metrics.append(build_plugin("metric", spec, f"{source} [evaluation] metric '{spec['name']}'"))
    return metrics


def _outputs(metrics: Sequence[Metric]) -> dict[str, MetricOutput]:
    out: dict[str, MetricOutput] = {}
    for metric in metrics:
        out.update(type(metric).outputs)
    return out


def _short(digest: object) -> str:
    return f"{digest[:12]}..." if isinstance(digest, str) else repr(digest)


def _check_resume(old: Mapping[str, Any], new: Mapping[str, Any], run_dir: Path) -> None:
    """Refuse to resume when the config, the input file or ``--no-reader`` changed."""
    checks = [
        (old.get("config", {}).get("sha256"), new["config"]["sha256"], "the config file changed", new["config"]["path"]),
        (old.get("input", {}).get("sha256"), new["input"]["sha256"], "the input file changed", new["input"]["path"]),
        (old.get("run", {}).get("no_reader"), new["run"]["no_reader"], "--no-reader differs", None),
    ]
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


def _base_manifest(opts: RunOptions, config: RunConfig, config_bytes: bytes, data: Path, fmt: str | None,
                   settings: EvaluationSettings, limit: int | None, n: int, compressors: Mapping[str, Any],
                   reader: Any, metrics: Sequence[Metric]) -> dict[str, Any]:
    from ragsift.version import __version__

    models = {label: mf.describe_models(list(mf.model_specs(c.config()))) for label, c in compressors.items()}
    tokenizers = sorted({m.params.tokenizer for m in metrics if hasattr(m.params, "tokenizer")})
    return {
        "ragsift_version": __version__,
        "git": mf.git_state(),
        "created_at": mf.now(),
        "status": "running",
        "command_line": mf.command_line(opts.argv),
        "config": {"path": str(config.source), "sha256": mf.sha256_bytes(config_bytes),
                   "text": config_bytes.decode("utf-8", errors="replace"),
                   "compressors": {label: {"name": c.registered_name, **c.config()} for label, c in compressors.items()}},
        "input": {"path": str(data), "sha256": mf.sha256_file(data), "format": fmt, "examples": n},
        "run": {"limit": limit, "no_reader": opts.no_reader, "evaluation": settings.model_dump(mode="json")},
        "reader": None if reader is None else {"name": reader.registered_name, **reader.describe()},
        "metrics": [{"name": m.registered_name, **m.config()} for m in metrics],
        "models": {"compressors": models, "tokenizers": mf.describe_models(tokenizers)},
        "packages": mf.package_versions(),
        "device": mf.device_info(),
    }


def _record(label: str, example: Example, result: Any, answer: Any, read_seconds: float | None,
            metrics: Sequence[Metric]) -> dict[str, Any]:
    prediction = None if answer is None else answer.text
    item = MetricInput(example, result, prediction)
    values: dict[str, float] = {}
    for metric in metrics:
        values.update(metric.compute(item))
    record = result.to_record()
    timings = dict(record.pop("timings"))
    if read_seconds is not None:
        timings["read"] = read_seconds
    return {
        "id": example.id,
        "compressor": label,
        "question": example.question,
        "answers": list(example.answers),
        **record,
        "prediction": prediction,
        "reader": None if answer is None else {"prompt_tokens": answer.prompt_tokens,
                                               "completion_tokens": answer.completion_tokens,
                                               "cached": bool(getattr(answer, "cached", False))},
        "metrics": values,
        "timings": timings,
    }


def _evaluate_compressor(label: str, compressor: Any, reader: Any, examples: list[Example],
                         metrics: Sequence[Metric], settings: EvaluationSettings, path: Path,
                         progress: bool, caches: RunCaches | None = None) -> int:
    from tqdm import tqdm

    done = {r["id"] for r in read_records(path)}
    todo = [ex for ex in examples if ex.id not in done]
    if not todo:
        return 0
    compressor.warm_up()
    if reader is not None:
        reader.warm_up()
    for metric in metrics:
        metric.warm_up()
    position = {ex.id: i for i, ex in enumerate(examples)}
    reader_limit = settings.reader_limit if settings.reader_limit is not None else len(examples)
    written = 0
    bar = tqdm(total=len(examples), initial=len(examples) - len(todo), desc=f"evaluate [{label}]", unit="ex",
               disable=not progress, file=sys.stderr)
    try:
        for _ in range(settings.warmup):  # untimed: caches, lazy imports, CUDA kernels
            with caches.read_only() if caches is not None else contextlib.nullcontext():  # keep cold timings out
                warm = compressor.compress(todo[0])
                if reader is not None and reader_limit > 0:
                    reader.answer_many([todo[0].question], [warm.text])
        with PredictionWriter(path) as writer:
            for start in range(0, len(todo), settings.batch_size):
                batch = todo[start : start + settings.batch_size]
                results = [timed_compress(compressor, ex, settings.repeats) for ex in batch]
                answers: list[ReaderAnswer | None] = [None] * len(batch)
                seconds: list[float | None] = [None] * len(batch)
                read = [i for i, ex in enumerate(batch) if reader is not None and position[ex.id] < reader_limit]
                if read:
                    got, read_seconds = timed_read(reader, [batch[i].question for i in read],
                                                   [results[i].text for i in read], settings.repeats)
                    for i, reply, s in zip(read, got, read_seconds, strict=True):
                        answers[i], seconds[i] = reply, s
                for ex, result, answer, secs in zip(batch, results, answers, seconds, strict=True):
                    writer.write(_record(label, ex, result, answer, secs, metrics))
                    written += 1
                    bar.update(1)
    except (Exception, KeyboardInterrupt) as exc:
        saved = (f"'{label}': {len(done) + written} of {len(examples)} examples are saved in {path}; "
                 "rerun the same command with --resume to finish")
        if isinstance(exc, KeyboardInterrupt):
            print(f"ragsift: interrupted: {saved}.", file=sys.stderr)
            raise
        raise EvaluationInterrupted(f"{_problem(exc)}\n{saved} (after fixing the problem).") from exc
    finally:
        bar.close()
    return written


def _problem(exc: BaseException) -> str:
    """One line for any exception: ragsift's own message, an OS error's path and reason, or
    the type and text of an unexpected error."""
    if isinstance(exc, RagsiftError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def _redact(text: str, reader: Any) -> str:
    """``text`` with every secret the reader holds (its API key) replaced by ``***``."""
    for secret in (reader.secrets() if reader is not None and hasattr(reader, "secrets") else []):
        if secret:
            text = text.replace(secret, "***")
    return text


def _check_run_dir(run_dir: Path, resume: bool) -> dict[str, Any] | None:
    """The manifest of the run in ``run_dir`` to resume (None: a new run). A run directory is
    either new or empty, or a ragsift run that ``--resume`` continues."""
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--out {run_dir} is a file; give a folder (new or empty) for the run.")
    try:
        old = mf.read_manifest(run_dir)
    except (ValueError, OSError) as exc:
        raise DataFormatError(run_dir / mf.MANIFEST_NAME, None, f"cannot read this run's manifest ({exc}).") from None
    if old is not None:
        if not resume:
            raise ConfigError(f"{run_dir} already holds a run ({mf.MANIFEST_NAME}); pass --resume to finish it, "
                              "or choose another --out directory.")
        return old
    if run_dir.is_dir() and any(not p.name.startswith(mf.MANIFEST_NAME + ".tmp") for p in run_dir.iterdir()):
        raise OutputError(f"--out {run_dir} is not empty and holds no ragsift run (no {mf.MANIFEST_NAME}); a run is "
                          "written only into a new or empty folder. Choose another --out directory.")
    return None


def _collect(path: Path, examples: Sequence[Example]) -> list[dict[str, Any]]:
    """The records of ``path`` for ``examples``, each id once."""
    wanted = {ex.id for ex in examples}
    seen: set[str] = set()
    unique = []
    for r in read_records(path, repair=False):
        if r["id"] in wanted and r["id"] not in seen:
            seen.add(r["id"])
            unique.append(r)
    return unique


def run_evaluation(opts: RunOptions) -> dict[str, Any]:
    """Run (or resume) an evaluation; returns the summary (also written to RUN_DIR)."""
    config = load_config(opts.config)
    config_bytes = Path(config.source).read_bytes()
    settings = EvaluationSettings.from_table(config.evaluation, config.source)
    compressors = config.build_compressors()
    # -- sweeps (issue 12): grid points replace the swept compressor --
    compressors, families = sw.expand_sweeps(config.compressor_specs(), compressors, settings.sweep, config.source)
    limits_by_label = sw.limits_by_label(settings.limits, families)
    labels = list(compressors)
    baseline = settings.check_labels(labels, config.source, families=list(families.values()))
    run_dir = Path(opts.out)
    paths = prediction_paths(run_dir, labels, config.source)
    reader = None if opts.no_reader else config.build_reader()
    metrics = build_metrics(settings, reader, config.source)
    limit = opts.limit if opts.limit is not None else settings.limit
    data, fmt = resolve_data(config, opts.data, opts.format)
    examples = _load_examples(config, opts, limit, data)

    old = _check_run_dir(run_dir, opts.resume)
    manifest = _base_manifest(opts, config, config_bytes, data, fmt, settings, limit, len(examples),
                              compressors, reader, metrics)
    if old is not None:
        _check_resume(old, manifest, run_dir)
        changes = version_changes(old, manifest)
        if changes and not opts.allow_mixed:
            raise ConfigError(
                f"{run_dir}: cannot resume: since this run started, " + "; ".join(changes) + ". Resuming would mix "
                "both versions in one run: start a new run in another --out directory, or pass --allow-mixed "
                "if you mean it (the manifest records what changed)."
            )
        manifest["created_at"] = old.get("created_at", manifest["created_at"])
        resumed = {"at": mf.now(), "command_line": manifest["command_line"]}
        if changes:
            resumed["mixed"] = changes
        manifest["resumed"] = [*old.get("resumed", []), resumed]
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        mf.write_manifest(run_dir, manifest)  # first: a folder holding anything else is a run
        (run_dir / "config.toml").write_bytes(config_bytes)
    except OSError as exc:
        raise OutputError(describe_os_error(exc)) from None

    subsets = {label: examples[: limits_by_label.get(label, len(examples))] for label in labels}
    reader, caches = attach_caches(compressors, reader, settings.cache, run_dir, share=sw.sweep_shares(families))
    try:
        for label, compressor in compressors.items():
            _evaluate_compressor(label, compressor, reader, subsets[label], metrics, settings, paths[label],
                                 opts.progress, caches)
        records = {label: _collect(paths[label], subsets[label]) for label in labels}
        summary = build_summary(records, _outputs(metrics), baseline=baseline, samples=settings.bootstrap_samples,
                                confidence=settings.confidence, seed=settings.seed)
        summary = {"run_dir": str(run_dir), "config": str(config.source), "examples": len(examples), **summary}
        for label, family in families.items():  # a sweep's points: one line per family in the report
            summary["compressors"][label]["family"] = family
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        (run_dir / "summary.md").write_text(format_markdown(summary, f"ragsift evaluation: {Path(config.source).name}"),
                                            encoding="utf-8")
    except (Exception, KeyboardInterrupt) as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        manifest.update(status=status, error=_redact(_problem(exc), reader), updated_at=mf.now())
        mf.write_manifest(run_dir, manifest)
        if isinstance(exc, (RagsiftError, KeyboardInterrupt)):
            if isinstance(exc, RagsiftError) and reader is not None:
                exc.args = tuple(_redact(str(a), reader) for a in exc.args)
            raise
        raise EvaluationInterrupted(_redact(_problem(exc), reader)) from exc
    manifest.update(status="complete", updated_at=mf.now(), records={k: len(v) for k, v in records.items()},
                    caches=caches.report(), families=families)
    mf.write_manifest(run_dir, manifest)
    opts.echo(format_table(summary))
    write_report(run_dir, echo=opts.echo)
    return summary
