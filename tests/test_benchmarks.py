"""The benchmark scripts run end to end at a tiny size and write only their own BENCHMARKS.md section."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OTHER = "# Benchmarks\n\n## Some other benchmark\n\nleft alone\n"


def _run_and_read_section(name: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run benchmark ``name`` with ``--write`` into a BENCHMARKS.md holding another section; return its own section."""
    # the scripts import their shared helper (markdown_section) from their own folder
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = importlib.import_module(name)
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(OTHER)
    assert script.main([*argv, "--write", str(out)]) == 0
    text = out.read_text()
    assert "## Some other benchmark\n\nleft alone" in text
    return text[text.index(script.SECTION) :]


def _table_rows(section: str, modes: tuple[str, ...]) -> dict[str, list[str]]:
    pattern = rf"^\| ({'|'.join(map(re.escape, modes))}) \|.*$"
    return {m.group(1): [c.strip() for c in m.group(0).strip("|").split("|")] for m in re.finditer(pattern, section, re.M)}


@pytest.mark.slow
@pytest.mark.integration
def test_exit_scoring_benchmark_reports_equal_scores_and_fewer_tokens(tmp_path, monkeypatch):
    section = _run_and_read_section("exit_scoring", ["--examples", "1", "--max-sentences", "5", "--repeats", "1"], tmp_path, monkeypatch)
    assert "--examples 1 --repeats 1 --batch-size 8 --max-sentences 5" in section  # the command to reproduce
    rows = _table_rows(section, ("reference", "prefix-shared", "authors-call"))
    assert set(rows) == {"reference", "prefix-shared", "authors-call"}
    tokens = {mode: int(cells[1].replace(",", "")) for mode, cells in rows.items()}
    assert tokens["prefix-shared"] < tokens["reference"] == tokens["authors-call"]
    for cells in rows.values():
        assert float(cells[7]) <= 1e-4  # max |score difference| against reference
    assert re.search(r"Token census of all 100 examples .* median \d+\.\d\d", section)


@pytest.mark.slow
@pytest.mark.integration
def test_ecorag_reflection_benchmark_asserts_identical_selections(tmp_path, monkeypatch):
    section = _run_and_read_section("ecorag_reflection", ["--examples", "1"], tmp_path, monkeypatch)
    rows = _table_rows(section, ("sequential", "batched", "batched-padded"))
    assert set(rows) == {"sequential", "batched", "batched-padded"}
    # one question: batched asks the model once and judges every candidate set, sequential asks once
    # per set until one is evidential (the benchmark itself asserts that all modes keep the same sentences)
    calls = {mode: int(cells[1]) for mode, cells in rows.items()}
    judged = {mode: int(cells[2]) for mode, cells in rows.items()}
    assert calls["batched"] == calls["batched-padded"] == 1
    assert calls["sequential"] == judged["sequential"] <= judged["batched"] == judged["batched-padded"] <= 5
