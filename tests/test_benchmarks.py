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
    return {
        m.group(1): [c.strip() for c in m.group(0).strip("|").split("|")] for m in re.finditer(pattern, section, re.M)
    }


@pytest.mark.slow
@pytest.mark.integration
def test_exit_scoring_benchmark_reports_equal_scores_and_fewer_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the policy under which it ran is part of the record
    section = _run_and_read_section(
        "exit_scoring", ["--examples", "1", "--max-sentences", "5", "--repeats", "1"], tmp_path, monkeypatch
    )
    assert "--examples 1 --repeats 1 --batch-size 8 --max-sentences 5" in section  # the command to reproduce
    assert "OMP_WAIT_POLICY: PASSIVE." in section
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


def _tiny_hotpotqa(path: Path) -> Path:
    """Two made-up HotpotQA-format questions (development-like data; not the evaluation file)."""
    import json

    filler = ["Filler Town", ["Filler Town has a market.", " It rains there in spring."]]
    examples = [
        {"_id": "a", "question": "In which town was Zorblat Vennick born?", "answer": "Quillsby", "type": "bridge",
         "level": "easy", "supporting_facts": [["Zorblat Vennick", 0]],
         "context": [["Zorblat Vennick", ["Zorblat Vennick was born in Quillsby in 1874.", " He made telescopes."]], filler]},
        {"_id": "b", "question": "On which lane does the Blue Lantern inn stand?", "answer": "Harrow Lane", "type": "bridge",
         "level": "easy", "supporting_facts": [["Blue Lantern", 0]],
         "context": [["Blue Lantern", ["The Blue Lantern inn stands on Harrow Lane in Tessaly.", " It opened in 1902."]], filler]},
    ]
    path.write_text(json.dumps(examples))
    return path


@pytest.mark.slow
@pytest.mark.integration
def test_reader_prompt_benchmark_reports_both_prompts_on_both_contexts(tmp_path, monkeypatch):
    data = _tiny_hotpotqa(tmp_path / "dev.json")
    argv = ["--data", str(data), "--model", "split:qwen2.5-coder-0.5b-instruct", "--limit", "1", "--limit-none", "1"]
    section = _run_and_read_section("reader_prompt", argv, tmp_path, monkeypatch)
    assert "--limit 1 --limit-none 1" in section  # the command to reproduce
    rows = [line.strip("|").split("|") for line in section.splitlines() if re.match(r"^\| (exit|short) \|", line)]
    assert sorted((r[0].strip(), r[1].strip(), int(r[2])) for r in rows) == [
        ("exit", "none", 1), ("exit", "oracle", 1), ("short", "none", 1), ("short", "oracle", 1)]
    for r in rows:
        assert 0 <= float(r[3]) <= float(r[4]) <= 100 and float(r[5]) > 10 and float(r[6]) > 0
    assert max(float(r[4]) for r in rows) > 0  # the 0.5B reads at least one of these one-sentence facts
    assert re.search(r"^Choice: `(exit|short)` \(F1 averaged over the contexts: `exit` [\d.]+, `short` [\d.]+\)\.$",
                     section, re.M)


def test_reader_prompt_benchmark_refuses_the_evaluation_file(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = importlib.import_module("reader_prompt")
    with pytest.raises(SystemExit, match="evaluation file"):
        script.main(["--data", str(ROOT / "ragsift" / "data" / "hotpotqa-dev-sf100.json")])


def test_reader_prompt_choice_is_the_higher_mean_f1(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    script = importlib.import_module("reader_prompt")
    rows = [{"prompt": "exit", "f1": 65.0}, {"prompt": "exit", "f1": 58.0},
            {"prompt": "short", "f1": 70.0}, {"prompt": "short", "f1": 50.0}]
    assert script.choose(rows) == "Choice: `exit` (F1 averaged over the contexts: `exit` 61.5, `short` 60.0)."


@pytest.mark.slow
@pytest.mark.integration
def test_serve_load_benchmark_checks_every_answer(tmp_path, monkeypatch):
    section = _run_and_read_section("serve_load", ["--requests", "6", "--concurrency", "6", "--examples", "2",
                                                   "--max-batch-examples", "4"], tmp_path, monkeypatch)
    assert "--requests 6 --concurrency 6 --examples 2 --max-batch-examples 4" in section  # the command to reproduce
    row = re.search(r"^\| 6 \| (\d+) \| (\d+) \| [\d.]+ \| [\d.]+ \|.* \| (\d+) \| (\d+) \|$", section, re.M)
    assert row is not None, section
    errors, wrong, batches, largest = map(int, row.groups())
    assert errors == wrong == 0 and 1 <= batches <= 6 and 1 <= largest <= 4


@pytest.mark.slow
@pytest.mark.integration
def test_yes_no_engines_benchmark_reports_tokens_against_the_prompt_tree(tmp_path, monkeypatch):
    section = _run_and_read_section(
        "yes_no_engines", ["--models", "0.5b", "--examples", "1", "--max-sentences", "4", "--engines", "llama-cpp",
                           "--reference"], tmp_path, monkeypatch)
    assert "--models 0.5b --examples 1 --threads 2 --engines llama-cpp --reference --max-sentences 4" in section
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| 0.5b |")]
    assert [(r[1], r[2]) for r in rows] == [("llama-cpp", "prefix-shared (prefix-tree)"), ("llama-cpp", "reference (separate)")]
    tokens, bound = ({r[2]: int(r[i].replace(",", "")) for r in rows} for i in (3, 4))
    assert tokens["prefix-shared (prefix-tree)"] <= 1.1 * bound["prefix-shared (prefix-tree)"]
    assert tokens["reference (separate)"] > tokens["prefix-shared (prefix-tree)"]
    assert all(float(r[11]) <= 1e-4 for r in rows)  # max |score difference| against the no-reuse run


def test_suite_evidence_writes_a_pooled_and_a_per_dataset_table(tmp_path, monkeypatch):
    import json

    from ragsift.evaluation.run.runner import RunOptions, run_evaluation

    records = json.loads((ROOT / "tests" / "data" / "hotpotqa-train-sf100.json").read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(records[:3]))
    b.write_text(json.dumps(records[3:5]))
    config = tmp_path / "c.toml"
    config.write_text('[compressors.none]\nname = "none"\n[compressors.bm25]\nname = "bm25"\n'
                      "[evaluation]\nwarmup = 0\nbootstrap_samples = 100\n")
    run_evaluation(RunOptions(config=config, out=tmp_path / "run", data=f"{a},{b}", no_reader=True, progress=False,
                              echo=lambda _: None))
    section = _run_and_read_section("suite_evidence", [str(tmp_path / "run")], tmp_path, monkeypatch)
    assert "### Pooled" in section and "### a (3 questions)" in section and "### b (2 questions)" in section
    rows = _table_rows(section, ("bm25",))
    assert rows["bm25"][1] == "2"  # the last table read is b's: 2 questions
    assert section.count("| bm25 | ") == 3  # pooled, a, b


def test_verdict_writes_the_looks_the_tables_and_where_the_primary_loses(tmp_path, monkeypatch):
    """A two-dataset run with a fake reader that answers right exactly when the gold answer is in its
    context: every question bm25 loses against none is a loss with the answer not kept."""
    import json

    from openai_fakes import fake_openai_server

    from ragsift.evaluation.run.runner import RunOptions, run_evaluation

    records = json.loads((ROOT / "tests" / "data" / "hotpotqa-train-sf100.json").read_text())[:12]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(records[:8]))
    b.write_text(json.dumps(records[8:]))
    gold = {r["question"]: r["answer"] for r in records}

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        prompt = " ".join(m["content"] for m in body["messages"])
        question = next(q for q in gold if q in prompt)
        context = prompt.replace(question, "")
        return gold[question] if gold[question].lower() in context.lower() else "unknown"

    with fake_openai_server([200], answer) as server:
        config = tmp_path / "verdict.toml"
        config.write_text(f"""
[compressors.none]
name = "none"
[compressors.bm25]
name = "bm25"
[compressors.bm25.selector]
name = "top-k"
k = 2
[reader]
name = "openai"
base_url = "{server.base_url}"
model = "fake"
max_retries = 0
[evaluation]
warmup = 0
bootstrap_samples = 200
baseline = "none"
[evaluation.primary]
compressor = "bm25"
test = "non-inferiority-then-superiority"
margin = 3.0
looks = [0.5, 1.0]
max_n = 12
""")
        run_evaluation(RunOptions(config=config, out=tmp_path / "run", data=f"{a},{b}", progress=False,
                                  echo=lambda _: None))
    section = _run_and_read_section("verdict", [str(tmp_path / "run")], tmp_path, monkeypatch)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert section.split("\n\n", 1)[1].startswith(f"**{summary['primary']['verdict']}**")
    looks = [line for line in section.splitlines() if re.match(r"^\| [12] \| ", line)]
    assert [line.split("|")[2].strip() for line in looks] == ["6", "12"][: len(looks)] and looks
    assert "### a (8 questions)" in section and "### b (4 questions)" in section
    losses = _table_rows(section, ("a", "b", "pooled"))
    em = {r["id"]: r["metrics"]["em"] for r in map(json.loads, (tmp_path / "run" / "predictions" / "none.jsonl").open())}
    lost = sum(1 for r in map(json.loads, (tmp_path / "run" / "predictions" / "bm25.jsonl").open())
               if em[r["id"]] > r["metrics"]["em"])
    assert losses["pooled"][1] == "12" and losses["pooled"][3] == str(lost) and lost > 0
    assert losses["pooled"][4] == str(lost) and losses["pooled"][5] == "0"  # the fake reader never misses a kept answer
    order = [line.split("|")[1].strip() for line in section.split("### Where", 1)[1].splitlines() if line.startswith("| ")]
    assert order[1:] == ["a", "b", "pooled"]  # the datasets in the suite's order, then pooled
    assert "Every answer was read in this run (none from the answer cache)." in section
    comps = summary["compressors"]
    share = comps["bm25"]["prompt_tokens"]["mean"] / comps["none"]["prompt_tokens"]["mean"]
    assert f"bm25 uses {share:.0%} of none's prompt tokens" in section  # issue 49's bars, from this run
