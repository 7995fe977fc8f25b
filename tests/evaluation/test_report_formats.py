"""``ragsift report RUN --format table|md|json|latex`` prints the run's summary and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_runs import COMPRESSORS, run

from ragsift.cli import main
from ragsift.evaluation.report.latex import latex_escape


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, _ = run(tmp_path_factory.mktemp("formats"), COMPRESSORS, no_reader=True, limit=4)
    return out


def _report(capsys: pytest.CaptureFixture[str], run_dir: Path, fmt: str) -> str:
    before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
    assert main(["report", str(run_dir), "--format", fmt]) == 0
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()} == before  # nothing written
    return capsys.readouterr().out


def test_json_is_the_summary(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert json.loads(_report(capsys, run_dir, "json")) == json.loads((run_dir / "summary.json").read_text())


def test_md_is_summary_md(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _report(capsys, run_dir, "md").rstrip("\n") == (run_dir / "summary.md").read_text().rstrip("\n")


def test_table_is_the_terminal_table(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _report(capsys, run_dir, "table")
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["compressor", "n"] and set(lines[1]) <= {"-", " "}
    assert [line.split()[0] for line in lines[2:5]] == ["none", "oracle", "bm25"]
    assert "difference vs 'none'" in text


def test_latex_has_booktabs_tables_with_escaped_text(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _report(capsys, run_dir, "latex")
    assert text.count(r"\begin{tabular}") == 2 and text.count(r"\toprule") == 2
    assert r"Ev-R (\%)" in text and "\nbm25 & 4 & " in text
    assert str(run_dir.parent) not in text
    assert latex_escape("a_b & 50% #1 {x} ~^\\") == r"a\_b \& 50\% \#1 \{x\} \textasciitilde{}\textasciicircum{}\textbackslash{}"


def test_an_unknown_format_is_refused(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["report", str(run_dir), "--format", "csv"])
    assert "invalid choice: 'csv'" in capsys.readouterr().err
