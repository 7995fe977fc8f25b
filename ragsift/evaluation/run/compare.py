"""``ragsift compare RUN RUN ... --out DIR``: runs made separately, on the same data and reader,
combined into one run folder, exactly as if their compressors had been evaluated in one run.

Before anything is written, the runs are checked (:mod:`ragsift.evaluation.run.compare_checks`):
the same input data (SHA-256 and format; a suite's datasets), the same reader (model and every
setting that changes an answer; where it ran may differ), the same metrics, the same limit and
finished runs. Then one config is made of theirs: the first run's config with the compressors of
every run (``RUN#LABEL`` takes one compressor of a run, ``--rename RUN#LABEL=NEW`` renames one), is
planned as ``ragsift evaluate`` plans a run (the data read again and checked against the recorded
SHA-256), and each compressor's records are taken from its run, by question id. The summary,
paired tests and report are then computed by the code of every run
(:func:`ragsift.evaluation.run.merge.write_run`), so they equal those of one run holding every
compressor. With ``common_questions``, unfinished runs and runs of different limits are taken too,
and everything is paired on the questions every compressor answered, which the manifest, summary.md
and the terminal state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.config import RunConfig
from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import prediction_path
from ragsift.evaluation.report.pooling import suite_table
from ragsift.evaluation.run import manifest as mf
from ragsift.evaluation.run.compare_checks import check_comparable, refuse_unfinished
from ragsift.evaluation.run.merge import read_run, recorded_config, write_run
from ragsift.evaluation.run.plan import RunOptions, RunPlan, plan_run
from ragsift.evaluation.run.result import RunResult
from ragsift.evaluation.run.run_summary import collect_records
from ragsift.evaluation.run.settings import EvaluationSettings
from ragsift.provenance import stamp
from ragsift.suggestions import did_you_mean

__all__ = ["compare_runs", "parse_run", "parse_rename"]


def parse_run(text: str) -> tuple[Path, str | None]:
    """``RUN`` -> (RUN, None); ``RUN#LABEL`` -> (RUN, LABEL), cut at the last ``#`` whose left side
    is a folder (a label may hold ``#``), else at the last ``#``."""
    if "#" not in text or Path(text).is_dir():
        return Path(text), None
    cut = text.rfind("#")
    while cut > 0 and not Path(text[:cut]).is_dir():
        cut = text.rfind("#", 0, cut)
    if cut <= 0:
        cut = text.rfind("#")
    base, label = text[:cut], text[cut + 1 :]
    if not base.strip() or not label.strip():
        raise ConfigError(f"'{text}': give RUN or RUN#LABEL, a run folder and the label of one of its compressors "
                          "(e.g. 'runs/exit#exit').")
    return Path(base), label


def parse_rename(text: str) -> tuple[Path, str, str]:
    """``--rename RUN#LABEL=NEW`` -> (RUN, LABEL, NEW), cut at the last ``=`` (a sweep point's label
    holds ``=``: ``RUN#bm25@k=3=bm25-k3``)."""
    left, eq, new = text.rpartition("=")
    run_dir, label = parse_run(left) if eq else (Path(text), None)
    if label is None or not new.strip():
        raise ConfigError(f"--rename '{text}': give RUN#LABEL=NEW (e.g. 'runs/b#bm25=bm25-k3').")
    return run_dir, label, new.strip()


@dataclass
class _Source:
    """One run of the comparison: its folder, manifest, recorded config and which of its
    compressors it brings, under which label (config label -> label in the comparison)."""

    run_dir: Path
    manifest: dict[str, Any]
    config: RunConfig
    labels: dict[str, str]

    def record_labels(self) -> dict[str, str]:
        """Its labels in its predictions (a sweep's points) -> their labels in the comparison."""
        recorded = self.manifest.get("config", {}).get("compressors") or self.manifest.get("records") or {}
        families = self.manifest.get("families") or {}
        out = {}
        for old in recorded:
            owner = old if old in self.labels else families.get(old)
            if owner in self.labels:
                out[old] = self.labels[owner] + old[len(owner):]
        return out


def _sources(runs: Sequence[str], renames: Sequence[str]) -> list[_Source]:
    picked: dict[Path, list[str] | None] = {}
    for text in runs:
        run_dir, label = parse_run(text)
        if run_dir in picked and (label is None or picked[run_dir] is None or label in (picked[run_dir] or [])):
            raise ConfigError(f"{run_dir} is given twice ('{text}'); give a run once, or RUN#LABEL once for each "
                              "compressor it brings.")
        picked[run_dir] = None if label is None else [*(picked.get(run_dir) or []), label]
    wanted = {(run_dir, label): new for run_dir, label, new in map(parse_rename, renames)}
    sources = []
    for run_dir, labels in picked.items():
        manifest = read_run(run_dir)
        config = recorded_config(manifest)
        specs = config.compressor_specs()
        for label in labels or []:
            if label not in specs:
                raise ConfigError(f"{run_dir}#{label}: the run has no compressor labelled '{label}' (it has: "
                                  f"{', '.join(specs)}).{did_you_mean(label, specs)}")
        chosen = {label: wanted.pop((run_dir, label), label) for label in (labels or specs)}
        sources.append(_Source(run_dir, manifest, config, chosen))
    for run_dir, label in wanted:
        where = "is not among the runs given" if run_dir not in picked else "does not bring it"
        raise ConfigError(f"--rename {run_dir}#{label}=...: no compressor '{label}' to rename ({run_dir} {where}).")
    owners: dict[str, Path] = {}
    for source in sources:
        for old, new in source.labels.items():
            if new in owners:
                others = [o for o in source.labels if o != old]
                pick = f"{source.run_dir}#{others[0]}" if others else f"{owners[new]}#LABEL"
                raise ConfigError(f"compressor label '{new}' is in both {owners[new]} and {source.run_dir}; a comparison "
                                  f"holds each label once. Take only some compressors of a run with RUN#LABEL (e.g. "
                                  f"{pick}), or rename one: --rename {source.run_dir}#{old}=NEW.")
            owners[new] = source.run_dir
    return sources


def _baseline(first: _Source, labels: Sequence[str], baseline: str | None) -> str:
    """``--baseline``, else the first run's baseline (under its label in the comparison)."""
    if baseline is not None:
        if baseline not in labels:
            raise ConfigError(f"--baseline '{baseline}' is not a compressor of the comparison ({', '.join(labels)})."
                              f"{did_you_mean(baseline, labels)}")
        return baseline
    settings = EvaluationSettings.from_table(first.config.evaluation, first.config.source)
    families = first.manifest.get("families") or {}
    own = settings.check_labels(list(first.config.compressor_specs()), first.config.source,
                                families=sorted(set(families.values())))
    if own not in first.labels:
        raise ConfigError(f"the first run's baseline '{own}' ({first.run_dir}) is not among the compressors compared "
                          f"({', '.join(labels)}); name one with --baseline LABEL.")
    return first.labels[own]


def _combined_table(sources: Sequence[_Source], baseline: str | None, echo: Callable[[str], None] | None) -> dict[str, Any]:
    """The config of the comparison: the first run's, with every run's compressors (renamed), their
    sweeps and limits, the baseline, and the first run's primary comparison when its compressor is in."""
    first = sources[0]
    table = first.config.table()
    table.pop("compressor", None)
    table["compressors"] = {}
    evaluation = dict(table.get("evaluation") or {})
    sweep: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for source in sources:
        specs = source.config.compressor_specs()
        own = source.config.evaluation
        families = source.manifest.get("families") or {}
        for old, new in source.labels.items():
            table["compressors"][new] = specs[old]
            if old in (own.get("sweep") or {}):
                sweep[new] = own["sweep"][old]
            for key, value in (own.get("limits") or {}).items():
                if key == old or families.get(key) == old:
                    limits[new + key[len(old):]] = value
    evaluation.update(sweep=sweep, limits=limits, baseline=_baseline(first, list(table["compressors"]), baseline))
    evaluation = {k: v for k, v in evaluation.items() if v not in ({}, None)}
    primary = evaluation.get("primary")
    primary_label = primary.get("compressor") if isinstance(primary, dict) else primary
    if primary_label is not None:
        if primary_label in first.labels and first.labels[primary_label] != evaluation["baseline"]:
            new = first.labels[primary_label]
            evaluation["primary"] = {**primary, "compressor": new} if isinstance(primary, dict) else new
        else:
            evaluation.pop("primary")
            evaluation.pop("primary_chosen_on", None)
            if echo is not None:
                echo(f"note: the first run's primary comparison ('{primary_label}') is not made: its compressor is not "
                     "compared, or is the baseline.")
    table["evaluation"] = evaluation
    table["description"] = "compare: " + ", ".join(str(s.run_dir) for s in sources)
    return table


def _records(plan: RunPlan, sources: Sequence[_Source], common: bool) -> dict[str, list[dict[str, Any]]]:
    """label -> its records (from its run), in the plan's example order; without ``common``, each
    compressor must hold every question of the run."""
    out: dict[str, list[dict[str, Any]]] = {}
    for source in sources:
        for old, new in source.record_labels().items():
            path = prediction_path(source.run_dir, old)
            records = [{**r, "compressor": new} for r in collect_records(path, plan.subsets[new])]
            missing = len(plan.subsets[new]) - len(records)
            if missing and not common:
                held = {r["id"] for r in records}
                first = next(ex.id for ex in plan.subsets[new] if ex.id not in held)
                raise ConfigError(f"cannot compare: {path} has no record for {missing} of the run's "
                                  f"{len(plan.subsets[new])} questions (e.g. '{first}'); finish that run with --resume, "
                                  "or pass --common-questions to pair on the questions every run answered.")
            out[new] = records
    return out


def _keep_common(plan: RunPlan, records: dict[str, list[dict[str, Any]]]) -> tuple[RunPlan, dict[str, int]]:
    """The plan and records cut to the questions every compressor answered; label -> how many it
    answered that were left out."""
    ids = set.intersection(*({r["id"] for r in recs} for recs in records.values()))
    if not ids:
        raise ConfigError("cannot compare: no question was answered by every compressor compared.")
    left_out = {label: len(recs) - len(ids) for label, recs in records.items()}
    for label, recs in records.items():
        records[label] = [r for r in recs if r["id"] in ids]
    plan.examples = [ex for ex in plan.examples if ex.id in ids]
    plan.subsets = {label: [ex for ex in subset if ex.id in ids] for label, subset in plan.subsets.items()}
    plan.positions = {ex.id: i for i, ex in enumerate(plan.examples)}
    return plan, left_out


def _manifest(plan: RunPlan, sources: Sequence[_Source], out: Path, text: str, argv: list[str] | None,
              questions: dict[str, Any]) -> dict[str, Any]:
    """The comparison's manifest: the first run's, with the combined config, its own provenance,
    and the runs it was made of (folders relative to it, their manifests' SHA-256)."""
    manifest: dict[str, Any] = json.loads(json.dumps(sources[0].manifest))
    for key in ("resumed", "error", "caches", "sequential", "merged_from", "updated_at"):
        manifest.pop(key, None)
    manifest.update(stamp(), status="running", command_line=mf.command_line(argv))
    compressors: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for source in sources:
        recorded = source.manifest.get("config", {}).get("compressors") or {}
        described = (source.manifest.get("models") or {}).get("compressors") or {}
        for old, new in source.record_labels().items():
            compressors[new] = recorded.get(old)
            models[new] = described.get(old, [])
    manifest["config"] = {"path": str(out / "config.toml"), "sha256": mf.sha256_bytes(text.encode("utf-8")), "text": text,
                          "includes": [], "overrides": [], "resolved": plan.config.table(), "compressors": compressors}
    manifest["run"] = {**manifest.get("run", {}), "limit": plan.limit, "shard": None,
                       "evaluation": plan.settings.model_dump(mode="json")}
    manifest["input"] = {**manifest.get("input", {}), "examples": len(plan.examples)}
    manifest["models"] = {**(manifest.get("models") or {}), "compressors": models}
    manifest["compared_from"] = [
        {"run_dir": os.path.relpath(s.run_dir, out), "manifest_sha256": mf.sha256_file(s.run_dir / mf.MANIFEST_NAME),
         "status": s.manifest.get("status"), "created_at": s.manifest.get("created_at"),
         "ragsift_version": s.manifest.get("ragsift_version"), "git": s.manifest.get("git"),
         "command_line": s.manifest.get("command_line"), "compressors": s.record_labels()}
        for s in sources
    ]
    manifest["questions"] = questions
    return manifest


def compare_runs(runs: Sequence[str], out: Path, *, baseline: str | None = None, renames: Sequence[str] = (),
                 common_questions: bool = False, parquet: bool = False, argv: list[str] | None = None,
                 echo: Callable[[str], None] | None = print,
                 table: Callable[[dict[str, Any]], str] | None = suite_table) -> RunResult:
    """Check the runs ``runs`` (``RUN`` or ``RUN#LABEL``) and write their comparison into ``out``;
    ``echo`` gets notes, ``table(summary)`` (unless ``table`` is None) and where the report is."""
    import tomli_w

    if len(runs) < 1:
        raise ConfigError("compare: give the run folders to compare (RUN RUN ...).")
    sources = _sources(runs, renames)
    check_comparable([(s.run_dir, s.manifest) for s in sources], common=common_questions)
    if not common_questions:
        refuse_unfinished([(s.run_dir, s.manifest) for s in sources])
    combined = _combined_table(sources, baseline, echo)
    text = tomli_w.dumps(combined)
    config = RunConfig.from_table(combined, str(out / "config.toml"), [(out / "config.toml", text.encode("utf-8"))])
    first = sources[0].manifest
    limits = [s.manifest.get("run", {}).get("limit") for s in sources]
    plan = plan_run(RunOptions(config=config, out=out, data=first["input"].get("data") or first["input"]["path"],
                               format=first["input"].get("format"), limit=None if None in limits else max(limits),
                               no_reader=bool(first["run"].get("no_reader")), parquet=parquet, argv=argv))
    if mf.input_record(plan)["sha256"] != first["input"]["sha256"]:
        raise ConfigError(f"cannot compare: the input data {plan.data} changed since {sources[0].run_dir} ran (its "
                          "sha256 differs from the one the run's manifest records).")
    records = _records(plan, sources, common_questions)
    questions: dict[str, Any] = {"paired_on": "every question of the runs", "count": len(plan.examples)}
    if common_questions:
        plan, left_out = _keep_common(plan, records)
        questions = {"paired_on": "the questions every compressor answered (--common-questions)",
                     "count": len(plan.examples), "left_out": left_out}
    mf.check_run_dir(out, resume=False, resumable=False)
    manifest = _manifest(plan, sources, out, text, argv, questions)
    if echo is not None and common_questions:
        echo(f"paired on the {len(plan.examples)} questions every compressor answered (--common-questions); left out: "
             + ", ".join(f"{label} {n}" for label, n in left_out.items()))
    result = write_run(plan, out, manifest, records, echo=echo, table=table)
    if common_questions:
        with (out / "summary.md").open("a", encoding="utf-8") as md:
            md.write(f"\nPaired on the {len(plan.examples)} questions every compressor answered (ragsift compare "
                     "--common-questions); the questions only some answered are left out.\n")
    return result
