"""benchmarks/main_job.py: the main job's BENCHMARKS.md section from a run directory, also from a
run that has not finished (only the questions every compressor has are summarised)."""

from __future__ import annotations

import importlib
import json
import shutil
import statistics
from pathlib import Path

import pytest
from report_runs import reader_run

from ragsift.evaluation.predictions import record_line

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def main_job(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("main_job")


def _rows(section: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for line in section.splitlines() if line.startswith("| ") and "---" not in line
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}


@pytest.mark.slow
def test_section_summarises_the_questions_every_compressor_finished(tmp_path, main_job):
    run_dir, _ = reader_run(tmp_path, limit=4)
    bm25 = run_dir / "predictions" / "bm25.jsonl"
    full_bm25 = tmp_path / "bm25-all.jsonl"
    shutil.copy(bm25, full_bm25)
    bm25.write_text("".join(bm25.read_text().splitlines(keepends=True)[:3]))  # as if stopped after 3 questions
    for path in (run_dir / "predictions").glob("*.jsonl"):  # cache hits: bm25's 2nd score, none's 1st answer
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for i, record in enumerate(records):
            record.setdefault("info", {})["score_cache"] = {"hit": path.stem == "bm25" and i == 1, "seconds": 0.1}
            record["reader"]["cached"] = path.stem == "none" and i == 0
        path.write_text("".join(record_line(r) + "\n" for r in records))  # rewritten with their checksums
    monitor = tmp_path / "monitor.log"
    monitor.write_text("\n".join([
        "100 1.0 1.0 1.0 pid=7 cpu=10",                       # loading: goes to the compressor that finishes next
        "120 1.0 1.0 1.0 pid=7 cpu=30 none=2",                # none: 30 CPU s for 2 questions
        "140 1.0 1.0 1.0 pid=7 cpu=50 none=3",                # none: 20 s for 1 question
        "160 1.0 1.0 1.0 pid=7 cpu=62 none=4 oracle=2",       # 12 s for 1 none + 2 oracle: 4 s each
        "170 1.0 1.0 1.0 pid=7 cpu=66 none=4 oracle=4",       # oracle: 4 s for 2 questions
        "180 1.0 1.0 1.0 pid= cpu=NA none=4 oracle=4",        # between processes
        "190 1.0 1.0 1.0 pid=9 cpu=6 none=4 oracle=4 bm25=3",  # a new process: its own CPU counter
    ]) + "\n")
    manifest_path = run_dir / "manifest.json"  # a primary comparison declared before the run, as the main job's
    manifest = json.loads(manifest_path.read_text())
    manifest["run"]["evaluation"] |= {"primary": "oracle", "primary_chosen_on": "on the test's development questions"}
    manifest_path.write_text(json.dumps(manifest))
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# Benchmarks\n\n## Other\n\nkept\n")
    report = tmp_path / "finished"
    assert main_job.main([str(run_dir), "--monitor", str(monitor), "--note", "test box", "--write", str(out),
                          "--report", str(report)]) == 0
    text = out.read_text()
    assert "## Other\n\nkept" in text
    section = text[text.index(main_job.SECTION):]
    assert "the first 3 of the evaluation file" in section and "bm25 3" in section and "none 4" in section
    assert "Machine: test box" in section
    rows = _rows(section[: section.index("Paired against")])
    tests = _rows(section[section.index("Paired against"):])
    assert set(rows) >= {"none", "oracle", "bm25"}
    none = [json.loads(line) for line in (run_dir / "predictions" / "none.jsonl").read_text().splitlines()][:3]
    assert rows["none"][0].startswith(f"{100 * statistics.fmean(r['metrics']['em'] for r in none):.1f} [")
    assert rows["none"][2] == f"{statistics.fmean(r['reader']['prompt_tokens'] for r in none):.0f}"
    assert [rows[label][-1] for label in ("none", "oracle", "bm25")] == ["13.5", "3.0", "2.0"]  # CPU s / question
    total = statistics.fmean(r["timings"]["compress"] + r["timings"]["read"] for r in none)
    assert rows["none"][8] == f"{total:.2f}"
    assert [rows[label][9] for label in ("none", "oracle", "bm25")] == ["0 / 1", "0 / 0", "1 / 0"]  # cached
    assert "none" not in tests and set(tests) >= {"oracle", "bm25"}
    assert all(cell.count("[") == 1 and "Holm" in cell for cell in tests["oracle"])
    primary = section.index("**Primary comparison (declared before the evaluation): oracle vs none on EM: ")
    assert primary < section.index("Paired against") and "no family correction" in section[primary:]
    assert "Chosen: on the test's development questions." in section
    assert "Holm's correction within each metric's family" in section  # not one family of every metric
    assert "Too few questions to reach the level" in section  # 3 pairs: no sign-flip p can reach 0.05
    # the report of the 3 finished questions: ragsift's own report.html and plots
    summary = json.loads((report / "summary.json").read_text())
    assert {c["n"] for c in summary["compressors"].values()} == {3}
    assert (report / "report.html").stat().st_size > 1000
    assert (report / "plots" / "tradeoff_latency.png").stat().st_size > 1000

    # a second run with all 4 bm25 questions (e.g. the slow compressors run beside): its records win
    second = tmp_path / "second"
    (second / "predictions").mkdir(parents=True)
    shutil.copy(run_dir / "manifest.json", second / "manifest.json")
    shutil.copy(full_bm25, second / "predictions" / "bm25.jsonl")
    out.write_text("# Benchmarks\n")
    assert main_job.main([str(run_dir), str(second), "--write", str(out)]) == 0
    merged = out.read_text()
    assert "the first 4 of the evaluation file" in merged and "bm25 4" in merged and "Runs: " in merged
    assert "CPU s" not in merged  # no monitor given
    # more questions, fewer compressors: bm25 (3 in the first run) left out
    assert main_job.main([str(run_dir), "--at-least", "4", "--write", str(out)]) == 0
    fewer = out.read_text()
    assert "the first 4 of the evaluation file" in fewer and "left out, fewer than 4 finished: bm25" in fewer
    assert "| bm25 |" not in fewer
