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
from ragsift.datasets import DataSource
from ragsift.errors import ConfigError, DataFormatError, OutputError, RagsiftError
from ragsift.evaluation import manifest as mf
from ragsift.evaluation import sweep as sw
from ragsift.evaluation.caches import RunCaches, attach_caches
from ragsift.evaluation.html_report import write_report
from ragsift.evaluation.plan import RunPlan, build_metrics, build_plugins, make_record
from ragsift.evaluation.predictions import PredictionWriter, prediction_paths, read_records
from ragsift.evaluation.report import build_summary, format_markdown, format_table
from ragsift.evaluation.settings import EvaluationSettings
from ragsift.evaluation.shards import Shard, select_shard
from ragsift.evaluation.timing import timed_compress, timed_read
from ragsift.metrics.base import Metric, MetricOutput
from ragsift.output_files import describe_os_error
from ragsift.readers.base import ReaderAnswer
from ragsift.remote import redact_secrets
from ragsift.types import Example

__all__ = ["EvaluationInterrupted", "RunOptions", "RunPlan", "run_evaluation", "plan_run", "summarise",
           "version_changes", "check_run_dir", "collect_records", "problem", "build_metrics"]


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
    #: ``--shard i/N``: only the examples at positions p with p % N == i (:mod:`ragsift.evaluation.shards`)
    shard: Shard | None = None
    #: also write predictions and per-sentence scores as Parquet (``[evaluation] parquet`` too)
    parquet: bool = False
    #: ``local`` (this process) or ``ray`` (:mod:`ragsift.evaluation.ray_engine`)
    engine: str = "local"


def _load_examples(source: DataSource, limit: int | None) -> list[Example]:
    path = source.path
    examples = list(source.load(limit))
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise ConfigError(f"{path}: example id '{ex.id}' occurs twice; evaluation (and --resume) needs unique ids.")
        seen.add(ex.id)
    if not examples:
        raise ConfigError(f"{path}: no examples to evaluate.")
    return examples


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
        (old.get("run", {}).get("shard"), new["run"]["shard"], "--shard differs", None),
    ]
    included_before = {i["path"]: i["sha256"] for i in old.get("config", {}).get("includes", [])}
    for item in new["config"]["includes"]:
        checks.append((included_before.pop(item["path"], None), item["sha256"], "a file the config includes changed",
                       item["path"]))
    checks.extend((sha, None, "the config no longer includes a file it included", path)
                  for path, sha in included_before.items())
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
                   "includes": [{"path": str(p), "sha256": mf.sha256_file(p), "text": p.read_text(encoding="utf-8", errors="replace")}
                                for p in config.included_files],
                   "compressors": {label: {"name": c.registered_name, **c.config()} for label, c in compressors.items()}},
        "input": {"path": str(data), "sha256": mf.sha256_file(data), "format": fmt, "examples": n},
        "run": {"limit": limit, "no_reader": opts.no_reader, "evaluation": settings.model_dump(mode="json"),
                "shard": None if opts.shard is None else opts.shard.to_dict(), "engine": opts.engine},
        "reader": None if reader is None else {"name": reader.registered_name, **reader.describe()},
        "metrics": [{"name": m.registered_name, **m.config()} for m in metrics],
        "models": {"compressors": models, "tokenizers": mf.describe_models(tokenizers)},
        "packages": mf.package_versions(),
        "device": mf.device_info(),
    }


def _evaluate_compressor(label: str, compressor: Any, reader: Any, examples: list[Example],
                         metrics: Sequence[Metric], settings: EvaluationSettings, path: Path,
                         progress: bool, caches: RunCaches | None = None,
                         positions: Mapping[str, int] | None = None) -> int:
    """Compress (and read) the examples not yet in ``path``; ``positions``: each example's place
    in the whole run (a shard's examples keep theirs, so ``reader_limit`` reads the same ones)."""
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
    position = dict(positions) if positions is not None else {ex.id: i for i, ex in enumerate(examples)}
    reader_limit = settings.reader_limit if settings.reader_limit is not None else len(position)
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
                    writer.write(make_record(label, ex, result, answer, secs, metrics))
                    written += 1
                    bar.update(1)
    except (Exception, KeyboardInterrupt) as exc:
        saved = (f"'{label}': {len(done) + written} of {len(examples)} examples are saved in {path}; "
                 "rerun the same command with --resume to finish")
        if isinstance(exc, KeyboardInterrupt):
            print(f"ragsift: interrupted: {saved}.", file=sys.stderr)
            raise
        first = describe_os_error(exc, path) if isinstance(exc, OSError) and not exc.filename else problem(exc)
        raise EvaluationInterrupted(f"{first}\n{saved} (after fixing the problem).") from exc
    finally:
        bar.close()
    return written


def problem(exc: BaseException) -> str:
    """One line for any exception: ragsift's own message, an OS error's path and reason, or
    the type and text of an unexpected error."""
    if isinstance(exc, RagsiftError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def _redact(text: str, reader: Any) -> str:
    """``text`` with every secret the reader holds (its API key, and any prefix of it that a
    clipped message may end in: :func:`ragsift.remote.redact_secrets`) replaced by ``***``."""
    return redact_secrets(text, reader.secrets() if reader is not None and hasattr(reader, "secrets") else [])


def check_run_dir(run_dir: Path, resume: bool, *, resumable: bool = True) -> dict[str, Any] | None:
    """The manifest of the run in ``run_dir`` to resume (None: a new run). A run directory is
    either new or empty, or a ragsift run that ``--resume`` continues (``resumable=False``: a
    command without ``--resume``, such as ``merge``, which never suggests it)."""
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--out {run_dir} is a file; give a folder (new or empty) for the run.")
    try:
        old = mf.read_manifest(run_dir)
    except (ValueError, OSError) as exc:
        raise DataFormatError(run_dir / mf.MANIFEST_NAME, None, f"cannot read this run's manifest ({exc}).") from None
    if old is not None:
        if not resume:
            hint = "pass --resume to finish it, or choose" if resumable else "choose"
            raise ConfigError(f"{run_dir} already holds a run ({mf.MANIFEST_NAME}); {hint} another --out directory.")
        return old
    if run_dir.is_dir() and any(not p.name.startswith(mf.MANIFEST_NAME + ".tmp") for p in run_dir.iterdir()):
        raise OutputError(f"--out {run_dir} is not empty and holds no ragsift run (no {mf.MANIFEST_NAME}); a run is "
                          "written only into a new or empty folder. Choose another --out directory.")
    return None


def collect_records(path: Path, examples: Sequence[Example]) -> list[dict[str, Any]]:
    """The records of ``path`` for ``examples``, each id once, in the order of ``examples``
    (whatever order they were written in: an engine may finish them out of order)."""
    wanted = {ex.id for ex in examples}
    by_id: dict[str, dict[str, Any]] = {}
    for r in read_records(path, repair=False):
        if r["id"] in wanted and r["id"] not in by_id:
            by_id[r["id"]] = r
    return [by_id[ex.id] for ex in examples if ex.id in by_id]


def plan_run(opts: RunOptions) -> RunPlan:
    """Build every plugin, read the data and check the settings, writing nothing."""
    config = load_config(opts.config)
    config_bytes = Path(config.source).read_bytes()
    settings, compressors, families, reader, metrics = build_plugins(config, opts.no_reader)
    limits_by_label = sw.limits_by_label(settings.limits, families)
    labels = list(compressors)
    baseline = settings.check_labels(labels, config.source, families=list(families.values()))
    prediction_paths(Path(opts.out), labels, config.source)  # labels that would share a file are refused
    limit = opts.limit if opts.limit is not None else settings.limit
    source = config.data(opts.data, opts.format)  # the one rule: ragsift.datasets.resolve_data
    data, fmt = source.path, source.format
    examples = _load_examples(source, limit)
    subsets = {label: examples[: limits_by_label.get(label, len(examples))] for label in labels}
    if opts.shard is not None:
        subsets = {label: select_shard(subset, opts.shard) for label, subset in subsets.items()}
        opts.shard.check_not_empty(len(examples), data)
    return RunPlan(config, config_bytes, settings, compressors, families, labels, baseline, reader, metrics, limit,
                   data, fmt, examples, subsets, {ex.id: i for i, ex in enumerate(examples)}, opts.shard)


def summarise(plan: RunPlan, run_dir: Path, records: Mapping[str, Sequence[Mapping[str, Any]]], *,
              config_path: str | None = None, parquet: bool = False) -> dict[str, Any]:
    """The summary of ``records`` (label -> records, in example order), written as summary.json
    and summary.md (and the predictions as Parquet when asked); shared by every engine and by
    ``ragsift merge``, so that all of them summarise alike."""
    settings = plan.settings
    summary = build_summary(records, _outputs(plan.metrics), baseline=plan.baseline, samples=settings.bootstrap_samples,
                            confidence=settings.confidence, seed=settings.seed)
    examples = plan.run_examples()
    summary = {"run_dir": str(run_dir), "config": config_path or str(plan.config.source), "examples": examples, **summary}
    for label, family in plan.families.items():  # a sweep's points: one line per family in the report
        summary["compressors"][label]["family"] = family
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    title = f"ragsift evaluation: {Path(config_path or plan.config.source).name}"
    (run_dir / "summary.md").write_text(format_markdown(summary, title), encoding="utf-8")
    if parquet or settings.parquet:
        from ragsift.evaluation.columnar import write_parquet

        paths = prediction_paths(run_dir, plan.labels)
        for label, recs in records.items():
            write_parquet(paths[label], recs)
    return summary


def run_evaluation(opts: RunOptions) -> dict[str, Any]:
    """Run (or resume) an evaluation; returns the summary (also written to RUN_DIR)."""
    plan = plan_run(opts)
    config, config_bytes, settings, compressors, reader, metrics = (
        plan.config, plan.config_bytes, plan.settings, plan.compressors, plan.reader, plan.metrics)
    run_dir = Path(opts.out)
    paths = prediction_paths(run_dir, plan.labels, config.source)
    engine = opts.engine
    if engine not in ("local", "ray"):
        raise ConfigError(f"--engine: expected 'local' or 'ray'; got '{engine}'.")
    if engine == "ray":
        from ragsift.evaluation.ray_engine import check_ray

        check_ray(settings)

    old = check_run_dir(run_dir, opts.resume)
    manifest = _base_manifest(opts, config, config_bytes, plan.data, plan.format, settings, plan.limit,
                              len(plan.examples), compressors, reader, metrics)
    if opts.shard is not None:
        manifest["run"]["shard"]["examples"] = plan.run_examples()
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
        resumed = {"at": mf.now(), "command_line": manifest["command_line"], "engine": engine}
        if changes:
            resumed["mixed"] = changes
        manifest["resumed"] = [*old.get("resumed", []), resumed]
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        mf.write_manifest(run_dir, manifest)  # first: a folder holding anything else is a run
        (run_dir / "config.toml").write_bytes(config_bytes)
    except OSError as exc:
        raise OutputError(describe_os_error(exc)) from None

    caches: RunCaches | None = None
    engine_report: dict[str, Any] = {}
    try:
        if engine == "ray":
            from ragsift.evaluation.ray_engine import evaluate_with_ray

            engine_report = evaluate_with_ray(plan, run_dir, paths, opts.progress)
        else:
            reader, caches = attach_caches(compressors, reader, settings.cache, run_dir,
                                           share=sw.sweep_shares(plan.families))
            for label, compressor in compressors.items():
                _evaluate_compressor(label, compressor, reader, plan.subsets[label], metrics, settings, paths[label],
                                     opts.progress, caches, plan.positions)
        records = {label: collect_records(paths[label], plan.subsets[label]) for label in plan.labels}
        summary = summarise(plan, run_dir, records, parquet=opts.parquet)
    except (Exception, KeyboardInterrupt) as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        manifest.update(status=status, error=_redact(problem(exc), reader), updated_at=mf.now())
        notes = []
        if isinstance(exc, OSError):  # e.g. the summary on a full disk: every record is saved all the same
            notes.append(f"the records written so far are kept in {run_dir / 'predictions'}; rerun the same "
                         "command with --resume to finish (after fixing the problem)")
        try:
            mf.write_manifest(run_dir, manifest)
        except OSError as err:  # the disk that failed the run fails this too: keep the first error in front
            notes.append(f"(the manifest could not be updated either: {describe_os_error(err)})")
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, RagsiftError):
            if exc.args:
                exc.args = tuple(_redact(str(a), reader) for a in ("\n".join([str(exc.args[0]), *notes]), *exc.args[1:]))
            raise
        raise EvaluationInterrupted(_redact("\n".join([problem(exc), *notes]), reader)) from exc
    manifest.update(status="complete", updated_at=mf.now(), records={k: len(v) for k, v in records.items()},
                    caches=caches.report() if caches is not None else engine_report, families=plan.families)
    mf.write_manifest(run_dir, manifest)
    opts.echo(format_table(summary))
    write_report(run_dir, echo=opts.echo)
    return summary
