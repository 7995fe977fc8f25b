"""``ragsift evaluate``: :func:`run_evaluation` goes plan (:func:`ragsift.evaluation.run.plan.plan_run`)
-> run-directory check -> manifest start -> ``engine.run`` -> summary -> manifest finish
(docs/architecture.md). The run directory's files and ``--resume``: docs/evaluation.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, RagsiftError
from ragsift.evaluation.report.html import write_report
from ragsift.evaluation.report.pooling import suite_table
from ragsift.evaluation.run import manifest as mf
from ragsift.evaluation.run.engines import get_engine
from ragsift.evaluation.run.engines.local import EvaluationInterrupted, problem
from ragsift.evaluation.run.looks import check_looks, run_looks
from ragsift.evaluation.run.manifest import check_run_dir, version_changes
from ragsift.evaluation.run.plan import RunOptions, RunPlan, build_metrics, plan_run
from ragsift.evaluation.run.result import RunResult
from ragsift.evaluation.run.run_summary import collect_records, metric_outputs, summarise
from ragsift.output_files import describe_os_error
from ragsift.remote import redact_secrets

__all__ = ["EvaluationInterrupted", "RunOptions", "RunPlan", "RunResult", "run_evaluation", "run_plan", "plan_run", "summarise",
           "version_changes", "check_run_dir", "collect_records", "problem", "build_metrics", "get_engine"]


def _redact(text: str, reader: Any) -> str:
    """``text`` with every secret the reader holds (its API key, and any prefix of it that a
    clipped message may end in: :func:`ragsift.remote.redact_secrets`) replaced by ``***``."""
    return redact_secrets(text, reader.secrets() if reader is not None and hasattr(reader, "secrets") else [])


def _start_manifest(plan: RunPlan, run_dir: Path, old: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest of the run (checked against ``old``'s when resuming), written with the config
    file into ``run_dir`` before anything else."""
    opts = plan.options
    manifest = mf.run_manifest(plan)
    if old is not None:
        mf.check_resume(old, manifest, run_dir)
        changes = version_changes(old, manifest)
        if changes and not opts.allow_mixed:
            raise ConfigError(
                f"{run_dir}: cannot resume: since this run started, " + "; ".join(changes) + ". Resuming would mix "
                "both versions in one run: start a new run in another --out directory, or pass --allow-mixed "
                "if you mean it (the manifest records what changed)."
            )
        manifest["created_at"] = old.get("created_at", manifest["created_at"])
        resumed = {"at": mf.now(), "command_line": manifest["command_line"], "engine": opts.engine}
        if changes:
            resumed["mixed"] = changes
        manifest["resumed"] = [*old.get("resumed", []), resumed]
    mf.open_run_dir(run_dir, manifest, plan.config.files[0][1])
    return manifest


def run_evaluation(opts: RunOptions) -> RunResult:
    """Run (or resume) an evaluation; returns its result (also written to RUN_DIR): the plan, the
    records, the summary (the result reads as it) and the manifest."""
    return run_plan(plan_run(opts))


def run_plan(plan: RunPlan) -> RunResult:
    """Run (or resume) the evaluation of a plan already made (:func:`plan_run`), e.g. one whose
    data a caller has checked (``ragsift tune`` refuses evaluation questions first)."""
    opts = plan.options
    engine = get_engine(opts.engine)
    engine.check(plan)
    sequential = plan.reader is not None and bool((test := plan.settings.primary_test()) and test.looks)
    if sequential:
        check_looks(plan)
    elif opts.until_look is not None:
        raise ConfigError("--until-look needs sequential looks ([evaluation.primary] looks) and a reader.")
    run_dir = Path(opts.out)
    manifest = _start_manifest(plan, run_dir, check_run_dir(run_dir, opts.resume))
    reader = plan.reader
    paused = False
    try:
        paths = plan.prediction_paths(run_dir)
        reports: list[dict[str, Any]] = []

        def run_step(step: RunPlan) -> dict[str, list[dict[str, Any]]]:
            reports.append(engine.run(step, run_dir, paths))
            return {label: collect_records(paths[label], step.subsets[label]) for label in step.labels}

        looks: dict[str, Any] | None = None
        if sequential:
            def record(decision: dict[str, Any]) -> None:
                manifest["sequential"] = decision
                mf.write_manifest(run_dir, manifest)

            looked = run_looks(plan, run_step, metric_outputs(plan.metrics), record, opts.until_look)
            plan, looks, paused = looked.plan, looked.sequential, looked.paused
            records = {label: collect_records(paths[label], plan.subsets[label]) for label in plan.labels}
        else:
            records = run_step(plan)
        engine_report = reports[-1]
        summary = summarise(plan, run_dir, records, sequential=looks)
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
    manifest.update(status="paused" if paused else "complete", updated_at=mf.now(),
                    records={k: len(v) for k, v in records.items()}, caches=engine_report, families=plan.families)
    mf.write_manifest(run_dir, manifest)
    result = RunResult(plan, run_dir, summary, records, manifest)
    opts.echo(suite_table(summary))
    write_report(run_dir, echo=opts.echo, data=result.report_data())
    if paused and looks:
        opts.echo(f"paused after look {looks['looks_done']} of the primary comparison (--until-look): no boundary "
                  "crossed yet; rerun with --resume to continue at the next look.")
    return result
