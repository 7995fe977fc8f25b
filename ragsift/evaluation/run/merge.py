"""``ragsift merge``: the run directories of ``ragsift evaluate --shard i/N`` put back together.

Before anything is written, the shards are checked: each is a finished shard run; all of them come
from the same config file, input file, limit, ``--no-reader``, ragsift version, git commit and
model files (SHA-256 in their manifests) and use the same N; their shard numbers are 0..N-1, each
once; and their records cover every example of the whole run exactly once per compressor (the
run is planned again from the recorded config and the input file, as ``ragsift evaluate`` plans it).
Anything else is refused, naming the run directories. The merged directory is a run directory
like any other: predictions in example order, summary, paired tests and report computed by the
same code as an unsharded run (:func:`ragsift.evaluation.run.run_summary.summarise`). The run is
planned from the config the shards' manifests record (include-resolved): no config file is read
again, so an included file edited since the shards ran changes nothing.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.config import RunConfig
from ragsift.errors import ConfigError, OutputError
from ragsift.evaluation.predictions import prediction_paths, read_predictions, record_line
from ragsift.evaluation.report.html import write_report
from ragsift.evaluation.report.pooling import suite_table
from ragsift.evaluation.run import manifest as mf
from ragsift.evaluation.run.manifest import check_run_dir, version_changes
from ragsift.evaluation.run.plan import RunOptions, RunPlan, plan_run
from ragsift.evaluation.run.result import RunResult
from ragsift.evaluation.run.run_summary import summarise
from ragsift.output_files import describe_os_error, write_text_atomically

__all__ = ["merge_runs", "read_run", "recorded_config", "write_run"]


def _short(value: object) -> str:
    return f"{value[:12]}..." if isinstance(value, str) and len(value) > 16 else repr(value)


def read_run(run_dir: Path) -> dict[str, Any]:
    """The manifest of the run in ``run_dir``; a missing folder or manifest is a :class:`ConfigError`
    naming it (``merge`` and ``compare`` read their runs with this)."""
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir}: no such run directory.")
    manifest = mf.read_manifest(run_dir)
    if manifest is None:
        raise ConfigError(f"{run_dir}: not a ragsift run (no {mf.MANIFEST_NAME}).")
    return manifest


def _read_shard(run_dir: Path) -> dict[str, Any]:
    manifest = read_run(run_dir)
    shard = (manifest.get("run") or {}).get("shard")
    if not shard:
        raise ConfigError(f"{run_dir}: not a shard (it was run without --shard); merge takes the run directories of "
                          "'ragsift evaluate --shard i/N', one per shard.")
    if manifest.get("status") != "complete":
        raise ConfigError(f"{run_dir}: shard {shard['index']}/{shard['count']} did not finish (status: "
                          f"{manifest.get('status')}); finish it with the same 'ragsift evaluate ... --shard "
                          f"{shard['index']}/{shard['count']}' command and --resume, then merge.")
    return manifest


#: what every shard must share: (what, how to read it from a manifest)
_SAME: tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...] = (
    ("the config file (sha256)", lambda m: m.get("config", {}).get("sha256")),
    ("the files the config includes (sha256)",
     lambda m: [(i["path"], i["sha256"]) for i in m.get("config", {}).get("includes", [])]),
    ("the --set overrides", lambda m: m.get("config", {}).get("overrides", [])),
    ("the input file (sha256)", lambda m: m.get("input", {}).get("sha256")),
    ("the input format", lambda m: m.get("input", {}).get("format")),
    ("the limit", lambda m: m.get("run", {}).get("limit")),
    ("--no-reader", lambda m: m.get("run", {}).get("no_reader")),
    ("the number of shards N", lambda m: m.get("run", {}).get("shard", {}).get("count")),
    ("ragsift's version", lambda m: m.get("ragsift_version")),
    ("the git commit", lambda m: (m.get("git") or {}).get("commit")),
)


def _check_same(shards: Sequence[tuple[Path, Mapping[str, Any]]]) -> None:
    first_dir, first = shards[0]
    for run_dir, manifest in shards[1:]:
        for what, get in _SAME:
            if get(first) != get(manifest):
                raise ConfigError(f"cannot merge: {first_dir} and {run_dir} differ in {what} ({_short(get(first))} vs "
                                  f"{_short(get(manifest))}); merge only the shards of one run.")
        changes = version_changes(first, manifest)
        if changes:
            raise ConfigError(f"cannot merge: {first_dir} and {run_dir} differ: " + "; ".join(changes) + ".")


def _check_cover(shards: Sequence[tuple[Path, Mapping[str, Any]]]) -> None:
    count = shards[0][1]["run"]["shard"]["count"]
    owners: dict[int, Path] = {}
    for run_dir, manifest in shards:
        index = manifest["run"]["shard"]["index"]
        if index in owners:
            raise ConfigError(f"cannot merge: {owners[index]} and {run_dir} are both shard {index}/{count} "
                              "(the same examples twice); give each shard once.")
        owners[index] = run_dir
    missing = [f"{i}/{count}" for i in range(count) if i not in owners]
    if missing:
        raise ConfigError(f"cannot merge: shard(s) {', '.join(missing)} missing (got {len(owners)} of {count}: "
                          f"{', '.join(str(d) for d in owners.values())}); give the run directory of every shard.")


def recorded_config(manifest: Mapping[str, Any]) -> RunConfig:
    """The config a run ran, as its manifest records it: the include-resolved table (and
    the config file's text, which the merged run directory keeps as config.toml); no file is read."""
    recorded = manifest.get("config") or {}
    text = str(recorded.get("text", ""))
    table = recorded.get("resolved")
    if table is None:  # a manifest written before the resolved config was recorded
        if recorded.get("includes"):
            raise ConfigError(f"the run's manifest predates ragsift recording the resolved config, and its config "
                              f"{recorded.get('path')} includes other files; rerun it.")
        table = tomllib.loads(text)
    source = str(recorded.get("path", ""))
    return RunConfig.from_table(table, source, [(Path(source), text.encode("utf-8"))], recorded.get("overrides") or [])


def _records(plan: RunPlan, shards: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """label -> records in example order, after checking that the shards hold every example of
    the run exactly once per compressor."""
    out: dict[str, list[dict[str, Any]]] = {}
    for label in plan.labels:
        where: dict[str, Path] = {}
        by_id: dict[str, dict[str, Any]] = {}
        wanted = {ex.id for ex in plan.subsets[label]}
        for run_dir, _ in shards:
            path = prediction_paths(run_dir, plan.labels)[label]
            seen: set[str] = set()
            for record in read_predictions(path):
                example_id = str(record["id"])
                if example_id in seen:  # the shard's own summary used its first record too
                    continue
                seen.add(example_id)
                if example_id not in wanted:
                    raise ConfigError(f"cannot merge: {path} holds example '{example_id}', which is not in the run "
                                      f"(compressor '{label}'); the shard does not belong to this data and config.")
                if example_id in where:
                    raise ConfigError(f"cannot merge: example '{example_id}' (compressor '{label}') is in both "
                                      f"{where[example_id]} and {run_dir}; the shards overlap.")
                where[example_id] = run_dir
                by_id[example_id] = record
        missing = [ex.id for ex in plan.subsets[label] if ex.id not in by_id]
        if missing:
            shown = ", ".join(f"'{i}' (shard {plan.positions[i] % len(shards)})" for i in missing[:5])
            raise ConfigError(f"cannot merge: compressor '{label}' has no record for {len(missing)} example(s) of the "
                              f"run: {shown}{' ...' if len(missing) > 5 else ''}; finish those shards with --resume.")
        out[label] = [by_id[ex.id] for ex in plan.subsets[label]]
    return out


def _refuse_earlier_merge(out: Path) -> None:
    """A merge's folder from an earlier merge (issue 53 row 16): the refusal says how to go on. A
    complete one may only lack its report (a kill while it was written); an unfinished one holds
    nothing that the shards cannot give again."""
    old = mf.read_manifest(out) if out.is_dir() else None
    if old is None or old.get("merged_from") is None:
        return
    if old.get("status") == "complete":
        raise ConfigError(f"{out} already holds a complete merge; 'ragsift report {out}' writes its report again "
                          "(if the merge was stopped while writing it). To merge again, choose another --out directory.")
    raise ConfigError(f"{out} holds a merge that did not finish (status '{old.get('status')}': stopped while it wrote "
                      f"the records or the summary). Everything in it comes from the shards: delete {out} and run "
                      "the merge again, or choose another --out directory.")


def merge_runs(run_dirs: Sequence[Path], out: Path, *, parquet: bool = False, argv: list[str] | None = None,
               echo: Callable[[str], None] | None = print) -> RunResult:
    """Check the shard runs ``run_dirs`` and write their merged run into ``out``; returns its result."""
    if not run_dirs:
        raise ConfigError("merge: give the run directories of the shards.")
    shards = [(Path(d), _read_shard(Path(d))) for d in run_dirs]
    _check_same(shards)
    _check_cover(shards)
    first = shards[0][1]
    plan = plan_run(RunOptions(config=recorded_config(first), out=out, data=first["input"].get("data") or first["input"]["path"],
                               format=first["input"].get("format"), limit=first["run"].get("limit"),
                               no_reader=bool(first["run"].get("no_reader")), parquet=parquet, argv=argv))
    now_sha = mf.input_record(plan)["sha256"]
    if now_sha != first["input"]["sha256"]:
        raise ConfigError(f"cannot merge: the input file {plan.data} changed since the shards ran (sha256 "
                          f"{_short(first['input']['sha256'])} -> {_short(now_sha)}).")
    records = _records(plan, shards)
    _refuse_earlier_merge(out)
    check_run_dir(out, resume=False, resumable=False)

    manifest = json.loads(json.dumps(first))
    manifest.update(created_at=mf.now(), status="running", command_line=mf.command_line(argv))
    manifest.pop("resumed", None)
    manifest.pop("error", None)
    manifest["run"]["shard"] = None
    manifest["merged_from"] = [
        {"run_dir": str(d), "shard": m["run"]["shard"], "created_at": m.get("created_at"), "updated_at": m.get("updated_at"),
         "engine": m["run"].get("engine", "local"), "device": m.get("device"), "git": m.get("git"),
         "command_line": m.get("command_line"), "resumed": m.get("resumed", []), "caches": m.get("caches")}
        for d, m in sorted(shards, key=lambda s: s[1]["run"]["shard"]["index"])
    ]
    return write_run(plan, out, manifest, records, echo=echo)


def write_run(plan: RunPlan, out: Path, manifest: dict[str, Any], records: Mapping[str, list[dict[str, Any]]], *,
              echo: Callable[[str], None] | None = print,
              table: Callable[[dict[str, Any]], str] | None = suite_table) -> RunResult:
    """Write a run made of records already made (``merge``, ``compare``) into ``out``, as a run
    writes its own: the manifest (status running, then complete) and config.toml first, the
    predictions, the summary (:func:`summarise`) and the report; ``echo`` gets ``table(summary)``
    (unless ``table`` is None) and where the report is."""
    paths = prediction_paths(out, plan.labels)
    mf.open_run_dir(out, manifest, plan.config.files[0][1])
    try:
        for label, recs in records.items():
            paths[label].parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(paths[label], "".join(record_line(record) + "\n" for record in recs))
    except OSError as exc:
        raise OutputError(describe_os_error(exc)) from None
    summary = summarise(plan, out, records)
    manifest.update(status="complete", updated_at=mf.now(), records={k: len(v) for k, v in records.items()},
                    families=plan.families)
    mf.write_manifest(out, manifest)
    result = RunResult(plan, out, summary, dict(records), manifest)
    if echo is not None and table is not None:
        echo(table(summary))
    write_report(out, echo=echo, data=result.report_data())
    return result
