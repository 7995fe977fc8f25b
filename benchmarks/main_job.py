"""The main job's BENCHMARKS.md section, from a run directory of ``scripts/quickstart.sh``.

Reads ``RUN_DIR/predictions/*.jsonl`` and ``manifest.json`` (not ``summary.json``: a run still in
progress, or stopped, is summarised too) and reports, on the questions that EVERY compressor has
finished (the first K of the evaluation file), per compressor: EM and F1 with bootstrap CIs, the
reader's prompt tokens and the compressed context's tokens, evidence precision / recall, and the
latency per question: compress, read, and end to end (compress + read, retrieval excluded, as EXIT
reports it); then the run's declared primary comparison (``[evaluation] primary``, unadjusted) and
the paired tests of EM and F1 against ``none`` (Holm within each metric's family, as the report). With
``--monitor`` (the log of ``benchmarks/monitor_run.sh``) it adds the CPU seconds (user + system, all
threads) the evaluate process spent per question of each compressor, warm-up and model loading
included. With ``--report DIR`` it also writes the report (report.html, plots) of the summarised
questions into DIR, for a run that has not finished.

    python benchmarks/main_job.py runs/quickstart-full --monitor runs/quickstart-full.monitor \\
        --note "load ..." --write BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from markdown_section import write_section

SECTION = "## Main job: every compressor with the 1.5B reader (evaluation file)"


def load_records(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Compressor label -> its records, in file order (a truncated last line is skipped)."""
    records: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((run_dir / "predictions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records.setdefault(record["compressor"], []).append(record)
    return records


def common_records(records: dict[str, list[dict[str, Any]]], order: list[str],
                   at_least: int = 1) -> dict[str, list[dict[str, Any]]]:
    """The records of the example ids that every compressor with at least ``at_least`` records
    has, labels in ``order``."""
    started = [label for label in order if len(records.get(label, [])) >= max(at_least, 1)]
    if not started:
        raise SystemExit(f"no compressor has finished {max(at_least, 1)} question(s) yet")
    shared = set.intersection(*(set(r["id"] for r in records[label]) for label in started))
    return {label: [r for r in records[label] if r["id"] in shared] for label in started}


def write_partial_report(run_dir: Path, out: Path, summary: dict[str, Any],
                         common: dict[str, list[dict[str, Any]]]) -> Path:
    """A run directory ``out`` holding only ``common`` (the questions every started compressor
    finished) with its summary, and its report.html and plots (``ragsift report``'s)."""
    from ragsift.evaluation.predictions import prediction_path
    from ragsift.evaluation.report.formatting import format_markdown
    from ragsift.evaluation.report.html import write_report

    if out.exists():
        raise SystemExit(f"{out} exists; give a new folder for the report of the finished questions")
    (out / "predictions").mkdir(parents=True)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["note"] = f"the questions every started compressor had finished in {run_dir}"
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for label, recs in common.items():
        prediction_path(out, label).write_text("".join(json.dumps(r) + "\n" for r in recs))
    summary = {"run_dir": str(out), "config": manifest["config"]["path"], "examples": len(next(iter(common.values()))),
               **summary}
    families = manifest.get("families") or {label: label.split("@")[0] for label in common if "@" in label}
    for label, family in families.items():  # a sweep's points (written at the end of a run): one line in the plots
        if label in summary["compressors"]:
            summary["compressors"][label]["family"] = family
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(format_markdown(summary, f"ragsift evaluation: {run_dir} (finished questions)"))
    return write_report(out)


def cpu_per_question(monitor: Path, files: dict[str, str]) -> dict[str, float]:
    """Label -> CPU seconds per finished question, from a monitor log: the CPU a process spent
    between two samples goes to the compressor whose count rises next (its warm-up, model loading
    and examples; split by questions finished when two rise in one interval); ``files`` maps a
    predictions file's stem to its label."""
    per_label: dict[str, float] = defaultdict(float)
    done: dict[str, int] = defaultdict(int)
    last_cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    pending = 0.0
    for line in monitor.read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split()[4:] if "=" in f)
        pid, cpu = fields.pop("pid", ""), fields.pop("cpu", "NA")
        if not pid or cpu == "NA":
            continue
        pending += float(cpu) - last_cpu.get(pid, 0.0)
        last_cpu[pid] = float(cpu)
        grown: dict[str, int] = {}
        for stem, value in fields.items():
            if stem in files and int(value) > counts.get(stem, 0):
                grown[files[stem]] = int(value) - counts.get(stem, 0)
            counts[stem] = int(value)
        for label, n in grown.items():  # two compressors in one interval: shared by questions finished
            per_label[label] += pending * n / sum(grown.values())
            done[label] += n
        if grown:
            pending = 0.0
    return {label: per_label[label] / done[label] for label in per_label if done[label]}


def cache_hits(records: list[dict[str, Any]]) -> tuple[int, int]:
    """How many of the records' scores and reader answers came from the cache: their timings are the
    ones measured when they were computed (in this run, e.g. a sweep's other points, or in another)."""
    scores = sum(bool(((r.get("info") or {}).get("score_cache") or {}).get("hit")) for r in records)
    answers = sum(bool((r.get("reader") or {}).get("cached")) for r in records)
    return scores, answers


def _outputs() -> dict[str, Any]:
    from ragsift.registry import get_registry

    registry = get_registry()
    out: dict[str, Any] = {}
    for name in registry.names("metric"):
        out.update(registry.get("metric", name).outputs)
    return out


def _ci(stat: dict[str, float] | None, digits: int = 1) -> str:
    return "-" if not stat else f"{stat['mean']:.{digits}f} [{stat['low']:.{digits}f}, {stat['high']:.{digits}f}]"


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.0f}" if values else "-"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def section(run_dirs: list[Path], note: str, monitors: list[Path], report: Path | None = None,
            at_least: int = 1) -> str:
    """The section for the runs ``run_dirs`` (of one config, or of configs with the same tables:
    a compressor's records come from the run that has the most of them)."""
    from ragsift.evaluation.report.formatting import family_note, format_p, primary_lines, too_few_note
    from ragsift.evaluation.report.summary import build_summary
    from ragsift.evaluation.run.settings import EvaluationSettings

    if monitors and len(monitors) != len(run_dirs):
        raise SystemExit("give one --monitor per run directory, in the same order, or none")
    manifests = [json.loads((d / "manifest.json").read_text()) for d in run_dirs]
    manifest = manifests[0]
    settings = EvaluationSettings.model_validate(manifest["run"]["evaluation"])
    records: dict[str, list[dict[str, Any]]] = {}
    source: dict[str, int] = {}
    for i, run_dir in enumerate(run_dirs):
        for label, recs in load_records(run_dir).items():
            if len(recs) > len(records.get(label, [])):
                records[label], source[label] = recs, i
    order = list(dict.fromkeys(label for m in manifests for label in m["config"]["compressors"]))
    common = common_records(records, order, at_least)
    k = len(next(iter(common.values())))
    baseline = settings.check_labels(list(common), str(run_dirs[0] / "manifest.json"))
    primary = settings.primary if settings.primary in common else None
    chosen = {"note": settings.primary_chosen_on} if primary and settings.primary_chosen_on else None
    summary = build_summary(common, _outputs(), baseline=baseline, samples=settings.bootstrap_samples,
                            confidence=settings.confidence, seed=settings.seed, primary=primary, primary_chosen=chosen)
    cpu: dict[str, float] = {}
    for i, monitor in enumerate(monitors):  # one per run directory (checked above)
        files = {path.stem: json.loads(path.read_text().splitlines()[0])["compressor"]
                 for path in (run_dirs[i] / "predictions").glob("*.jsonl") if path.read_text().strip()}
        cpu.update({label: v for label, v in cpu_per_question(monitor, files).items() if source.get(label) == i})
    if report is not None:
        write_partial_report(run_dirs[0], report, summary, common)
    reader = manifest.get("reader") or {}
    model, config = reader.get("model"), reader.get("config") or {}
    finished = ", ".join(f"{label} {len(records.get(label, []))}" for label in order)
    left_out = [label for label in order if label not in common]
    runs = "; ".join(
        f"`{m['command_line']}` in {d} (started {m['created_at']}, status `{m['status']}`, ragsift "
        f"{m['ragsift_version']}, git {str((m.get('git') or {}).get('commit', '?'))[:10]})"
        for d, m in zip(run_dirs, manifests, strict=True))
    lines = [
        f"Run{'s' if len(run_dirs) > 1 else ''}: {runs}.  ",
        f"Reader: `{reader.get('name')}` `{model.get('spec', model) if isinstance(model, dict) else model}` (greedy, "
        f"{config.get('max_new_tokens')} new tokens, {config.get('n_threads')} threads), the same for every compressor "
        "and every question.  ",
        f"Questions: the first {k} of the evaluation file that every compressor has finished "
        f"(records per compressor: {finished})"
        + (f"; left out, fewer than {at_least} finished: {', '.join(left_out)}" if left_out else "") + ".  ",
        f"Machine: {note}",
        "",
        f"Means over the {k} questions with {int(settings.confidence * 100)}% bootstrap CIs "
        f"({settings.bootstrap_samples} resamples). Tokens: the reader's prompt (template + question + context) "
        "and the compressed context alone. Latency per question in seconds: compress, read, and end to end "
        "(compress + read; retrieval excluded). Cached answers and scores count as long as they took when computed; "
        "'cached' counts them (scores / answers).",
        "",
        "| compressor | EM | F1 | prompt tokens | context tokens | Ev-P | Ev-R | compress (s) | read (s) | "
        "end to end (s) | cached |" + (" CPU s / question |" if cpu else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if cpu else ""),
    ]
    for label, comp in summary["compressors"].items():
        values, latency = comp["values"], comp["latency_ms"]
        prompt = [r["reader"]["prompt_tokens"] for r in common[label] if r.get("reader") and r["reader"].get("prompt_tokens")]
        seconds = {s: (f"{latency[s]['mean'] / 1000:.2f}" if s in latency else "-") for s in ("compress", "read", "total")}
        row = [label, _ci(values.get("em")), _ci(values.get("f1")), _mean(prompt),
               f"{values['compressed_tokens']['mean']:.0f}" if "compressed_tokens" in values else "-",
               _ci(values.get("evidence_precision")), _ci(values.get("evidence_recall")),
               seconds["compress"], seconds["read"], seconds["total"], " / ".join(map(str, cache_hits(common[label])))]
        if cpu:
            row.append(f"{cpu[label]:.1f}" if label in cpu else "-")
        lines.append("| " + " | ".join(row) + " |")
    if summary.get("primary"):  # declared before the evaluation: on its own, above the families
        stated = [line.strip() for line in primary_lines(summary)]
        verdict = [stated.pop(0)] if stated and stated[0].startswith("verdict:") else []
        head, test, *chosen_line = stated
        lines += ["", f"**{_sentence(head)}: {test}.**"] + [f"{_sentence(line)}." for line in [*verdict, *chosen_line]]
    lines += ["", f"Paired against `{summary['baseline']}` by question: mean difference [paired-bootstrap CI], "
              f"sign-flip p-value, Holm-adjusted p (`*`: < 0.05). {family_note(summary)}"]
    too_few = too_few_note(summary)
    if too_few:
        lines += ["", too_few]
    lines += ["", "| compressor | EM difference | F1 difference |", "|---|---:|---:|"]
    for label, tests in summary["comparisons"].items():
        cells = []
        for key in ("em", "f1"):
            t = tests.get(key)
            cells.append("-" if not t else f"{t['mean_difference']:+.1f} [{t['low']:+.1f}, {t['high']:+.1f}] "
                         f"{format_p(t['p_value'])}, Holm {format_p(t['p_holm'])}{'*' if t['p_holm'] < 0.05 else ''}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run directories (a compressor's records come from "
                        "the one that has the most)")
    parser.add_argument("--monitor", type=Path, action="append", default=[],
                        help="benchmarks/monitor_run.sh's log of each run, in the same order")
    parser.add_argument("--note", default="not recorded", help="the machine and its load during the run")
    parser.add_argument("--report", type=Path, help="also write report.html and plots of the summarised questions "
                        "into this new folder (for a run that has not finished)")
    parser.add_argument("--at-least", type=int, default=1, help="leave out compressors with fewer finished questions "
                        "(more questions, fewer compressors)")
    parser.add_argument("--text", type=Path, help="Markdown appended to the section (the reading of the figures)")
    parser.add_argument("--write", type=Path, help="replace this script's section of a BENCHMARKS.md")
    args = parser.parse_args(argv)
    body = section(args.run_dirs, args.note, args.monitor, args.report, args.at_least)
    if args.text:
        body += "\n\n" + args.text.read_text(encoding="utf-8").strip()
    if args.write:
        write_section(args.write, SECTION, body)
    else:
        print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
