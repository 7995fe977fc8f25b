"""``ragsift tune``: refuses the evaluation file, picks the rule's point on a small sweep (a cheap
reader that answers when the gold answer is in its context), and its frozen config reproduces the
development figures."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragsift.datasets import bundled_sample_path, load_examples
from ragsift.errors import ConfigError, OutputError
from ragsift.evaluation.predictions import prediction_path, read_records
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
from ragsift.evaluation.run.tune import TuneOptions, TuneRule, choose, run_tune
from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry

TESTS = Path(__file__).parents[1]
DEV = TESTS / "data" / "hotpotqa-train-sf100.json"  # development data (not the evaluation file)
KS = [1, 2, 3, 5, 8]


class AnswerInContextReader(Reader):
    """Answers a question right exactly when its gold answer is in the context; reads
    ``len(context.split())`` prompt tokens."""

    answers: dict[str, str] = {}
    calls = 0

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        type(self).calls += len(questions)
        out = []
        for question, context in zip(questions, contexts, strict=True):
            gold = self.answers[question]
            out.append(ReaderAnswer(gold if gold.lower() in context.lower() else "unknown", len(context.split()), 1, 0.0))
        return out


class _Plugin:
    @hookimpl
    def register_readers(self, register):  # type: ignore[no-untyped-def]
        register("answer-in-context", AnswerInContextReader)


@pytest.fixture(autouse=True)
def fake_reader() -> object:
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-tune")
    AnswerInContextReader.answers = {ex.question: ex.answers[0] for ex in load_examples(DEV)}
    AnswerInContextReader.calls = 0
    yield
    reset_registry()


def _sweep(tmp_path: Path, data: Path | None = DEV, limit: int = 12) -> Path:
    dataset = f'[dataset]\nname = "hotpotqa"\npath = "{data}"\n' if data is not None else ""
    path = tmp_path / "sweep.toml"
    path.write_text(dataset + f"""
[compressors.none]
name = "none"

[compressors.bm25]
name = "bm25"
splitter = "presplit"

[compressors.bm25.selector]
name = "top-k"
k = 5

[reader]
name = "answer-in-context"

[evaluation]
limit = {limit}
warmup = 0
bootstrap_samples = 200
baseline = "none"
metrics = ["exact-match", "evidence"]

[evaluation.sweep.bm25.selector]
k = {KS}
""", encoding="utf-8")
    return path


def _tuning(tmp_path: Path, sweep: Path, within: float = 0.0, prefer: str = "fewer-prompt-tokens") -> Path:
    path = tmp_path / f"tune-{within}-{prefer}.toml"
    path.write_text(f'description = "test"\nsweep = "{sweep.name}"\n[rule]\nmetric = "em"\nwithin = {within}\n'
                    f'prefer = "{prefer}"\n', encoding="utf-8")
    return path


def _tune(config: Path, out: Path, **kw: object) -> dict:  # type: ignore[type-arg]
    return run_tune(TuneOptions(config=config, out=out, progress=False, echo=lambda _: None, **kw))  # type: ignore[arg-type]


def _by_hand(run_dir: Path, within: float) -> str:
    """The rule applied by hand to the sweep's summary and predictions."""
    summary = json.loads((run_dir / "summary.json").read_text())
    points = []
    for k in KS:
        label = f"bm25@k={k}"
        em = summary["compressors"][label]["values"]["em"]["mean"]
        records = read_records(prediction_path(run_dir, label))
        prompt = sum(r["reader"]["prompt_tokens"] for r in records) / len(records)
        points.append((label, em, prompt))
    best = max(em for _, em, _ in points)
    return min((p for p in points if p[1] >= best - within - 1e-9), key=lambda p: (p[2], -p[1]))[0]


def test_tune_picks_the_rules_point_and_records_the_rule_the_questions_and_the_table(tmp_path: Path):
    sweep = _sweep(tmp_path)
    record = _tune(_tuning(tmp_path, sweep), tmp_path / "best")
    summary = json.loads((tmp_path / "best" / "summary.json").read_text())
    ems = {k: summary["compressors"][f"bm25@k={k}"]["values"]["em"]["mean"] for k in KS}
    assert len(set(ems.values())) >= 3  # the reader's accuracy really depends on k
    assert record["chosen"] == {"bm25": _by_hand(tmp_path / "best", 0.0)}
    assert ems[int(record["chosen"]["bm25"].split("=")[1])] == max(ems.values())

    # "fewest prompt tokens within 20 EM points of the best" picks a smaller k than "the best EM"
    loose = _tune(_tuning(tmp_path, sweep, within=20.0), tmp_path / "loose")
    assert loose["chosen"] == {"bm25": _by_hand(tmp_path / "loose", 20.0)}
    assert int(loose["chosen"]["bm25"].split("=")[1]) < int(record["chosen"]["bm25"].split("=")[1])

    frozen = tomllib.loads((tmp_path / "best" / "tuned.toml").read_text())
    tuned = frozen["tuned"]
    assert tuned["rule"]["within"] == 0.0 and tuned["rule"]["prefer"] == "fewer-prompt-tokens"
    assert "the highest em" in tuned["rule"]["text"]
    assert tuned["development"]["sha256"] == __import__("hashlib").sha256(DEV.read_bytes()).hexdigest()
    assert tuned["development"]["ids"] == [ex.id for ex in load_examples(DEV, limit=12)]
    assert [row["label"] for row in tuned["table"]] == ["none", *[f"bm25@k={k}" for k in KS]]
    assert [row["label"] for row in tuned["table"] if row["chosen"]] == [record["chosen"]["bm25"]]
    assert all(row["metric"] == summary["compressors"][row["label"]]["values"]["em"]["mean"] for row in tuned["table"])
    assert set(frozen["compressors"]) == {"none", "bm25"} and "sweep" not in frozen["evaluation"]
    assert frozen["compressors"]["bm25"]["selector"] == {"name": "top-k", "k": int(record["chosen"]["bm25"][7:]),
                                                         "per_document": False}


def test_the_frozen_config_reproduces_the_development_figures(tmp_path: Path):
    sweep = _sweep(tmp_path)
    record = _tune(_tuning(tmp_path, sweep, within=20.0), tmp_path / "tune", frozen=tmp_path / "tuned" / "bm25.toml")
    again = run_evaluation(RunOptions(config=tmp_path / "tuned" / "bm25.toml", out=tmp_path / "again", progress=False,
                                      echo=lambda _: None))
    row = next(r for r in record["table"] if r["chosen"])
    values = again["compressors"]["bm25"]["values"]
    assert values["em"]["mean"] == row["metric"] and (values["em"]["low"], values["em"]["high"]) == (row["low"], row["high"])
    records = read_records(prediction_path(tmp_path / "again", "bm25"))
    assert sum(r["reader"]["prompt_tokens"] for r in records) / len(records) == row["prompt_tokens"]
    swept = read_records(prediction_path(tmp_path / "tune", row["label"]))
    assert [(r["id"], r["kept"], r["prediction"]) for r in records] == [(r["id"], r["kept"], r["prediction"]) for r in swept]
    assert again["compressors"]["none"]["values"]["em"] == json.loads(
        (tmp_path / "tune" / "summary.json").read_text())["compressors"]["none"]["values"]["em"]


@pytest.mark.parametrize("how", ["no dataset (the bundled sample)", "--data", "a renamed copy", "a subset"])
def test_tune_refuses_the_evaluation_file_before_anything_runs(tmp_path: Path, how: str):
    evaluation = bundled_sample_path()
    data, kw = DEV, {}
    if how == "no dataset (the bundled sample)":
        data = None
    elif how == "--data":
        kw = {"data": evaluation}
    elif how == "a renamed copy":
        data = tmp_path / "my-dev-questions.json"
        shutil.copy(evaluation, data)
    else:
        data = tmp_path / "dev-subset.json"
        rows = json.loads(evaluation.read_text())
        data.write_text(json.dumps(rows[:3] + json.loads(DEV.read_text())[:5]))
    with pytest.raises(ConfigError, match="evaluation file"):
        _tune(_tuning(tmp_path, _sweep(tmp_path, data)), tmp_path / "run", **kw)
    assert not (tmp_path / "run").exists() and AnswerInContextReader.calls == 0


def test_tuning_config_errors_are_clear(tmp_path: Path):
    sweep = _sweep(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(f'sweep = "{sweep.name}"\n[rule]\nmetric = "em"\nwithin = -1\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.toml.*within"):
        _tune(bad, tmp_path / "r1")
    bad.write_text(f'sweep = "{sweep.name}"\n[rule]\nprefer = "cheapest"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"prefer"):
        _tune(bad, tmp_path / "r2")
    bad.write_text('sweep = "missing.toml"\n[rule]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"missing.toml': no such file"):
        _tune(bad, tmp_path / "r3")
    no_sweep = tmp_path / "plain.toml"
    no_sweep.write_text(sweep.read_text().split("[evaluation.sweep")[0], encoding="utf-8")
    bad.write_text('sweep = "plain.toml"\n[rule]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no \[evaluation.sweep\]"):
        _tune(bad, tmp_path / "r4")
    bad.write_text(f'sweep = "{sweep.name}"\n[rule]\nmetric = "accuracy"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"metric 'accuracy' is not reported by the sweep's metrics .*: em, "):
        _tune(bad, tmp_path / "r5")
    assert not any((tmp_path / f"r{i}").exists() for i in range(1, 6)) and AnswerInContextReader.calls == 0


def test_choose_applies_the_rule_with_its_tie_breaks():
    rows = [{"label": "a", "metric": 40.0, "prompt_tokens": 300.0, "compressed_tokens": 10.0, "latency_ms": 5.0},
            {"label": "b", "metric": 40.0, "prompt_tokens": 200.0, "compressed_tokens": 30.0, "latency_ms": 9.0},
            {"label": "c", "metric": 39.5, "prompt_tokens": 100.0, "compressed_tokens": 20.0, "latency_ms": 1.0},
            {"label": "d", "metric": 38.0, "prompt_tokens": 50.0, "compressed_tokens": 5.0, "latency_ms": 0.5}]
    assert choose(rows, TuneRule()) == "b"                                         # best EM, ties to fewer tokens
    assert choose(rows, TuneRule(within=1.0)) == "c"                               # fewest tokens within 1 point
    assert choose(rows, TuneRule(within=0.0, prefer="fewer-compressed-tokens")) == "a"
    assert choose(rows, TuneRule(within=5.0, prefer="lower-latency")) == "d"
    same = [{**r, "prompt_tokens": 1.0} for r in rows]
    assert choose(same, TuneRule(within=5.0)) == "a"                              # then the higher EM, then earlier


def test_the_command_line_refuses_the_evaluation_file_and_documents_the_rule(tmp_path: Path, capsys):
    from ragsift.cli import main

    tuning = _tuning(tmp_path, _sweep(tmp_path, data=None))
    assert main(["tune", "-c", str(tuning), "--out", str(tmp_path / "run"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "ragsift: error:" in err and "this is the evaluation file" in err and "data/training/" in err
    assert not (tmp_path / "run").exists()
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    out = capsys.readouterr().out
    assert "within" in out and "fewer-prompt-tokens" in out and "hotpotqa-dev-sf100.json" in out


TUNE_CONFIGS = sorted((TESTS.parent / "configs" / "tune").glob("*.toml"))


@pytest.mark.parametrize("path", TUNE_CONFIGS, ids=[p.name for p in TUNE_CONFIGS])
def test_a_shipped_tuning_config_names_a_sound_sweep_on_development_questions(path: Path, monkeypatch):
    from ragsift.config import load_config
    from ragsift.datasets.holdout import refuse_evaluation_data
    from ragsift.evaluation.run.config_check import config_problems
    from ragsift.evaluation.run.tune import load_tune_config

    monkeypatch.chdir(TESTS.parent)  # the repository's relative data and model paths
    reset_registry()
    tune = load_tune_config(path)
    sweep = load_config(tune.sweep_path())
    assert config_problems(sweep) == []
    assert sweep.reader is not None and sweep.evaluation.get("sweep")
    from ragsift.evaluation.run.plan import suite_names

    for spec in suite_names(None, sweep.evaluation.get("datasets")) or [None]:  # a suite: each of its datasets
        source = sweep.data(spec)
        refuse_evaluation_data(Path(source.path), list(source.load(sweep.evaluation.get("limit"))), "test",
                               name=source.name)


def test_the_frozen_config_names_the_sweep_without_the_machines_path(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a shipped frozen config names its sweep relative to the working directory
    _tune(_tuning(tmp_path, _sweep(tmp_path)), tmp_path / "run")
    text = (tmp_path / "run" / "tuned.toml").read_text()
    frozen = tomllib.loads(text)
    assert not Path(frozen["tuned"]["sweep"]["config"]).is_absolute()
    assert (tmp_path / frozen["tuned"]["sweep"]["config"]).is_file()
    assert f"from the sweep {frozen['tuned']['sweep']['config']}:" in frozen["description"]


@pytest.mark.parametrize("target", ["sweep", "tuning", "data", "manifest"])
def test_the_frozen_config_never_overwrites_an_input_or_the_runs_files_even_with_force(tmp_path: Path, target: str):
    """Issue 53 row 5: --frozen is checked as -o is: never the sweep config, the tuning config, the
    development data or a file of the sweep's run (its manifest), --force or not."""
    data = tmp_path / "dev.json"
    shutil.copy(DEV, data)
    sweep = _sweep(tmp_path, data)
    tuning = _tuning(tmp_path, sweep)
    out = tmp_path / "run"
    if target == "manifest":  # a finished sweep, continued
        _tune(tuning, out)
    frozen = {"sweep": sweep, "tuning": tuning, "data": data, "manifest": out / "manifest.json"}[target]
    before = frozen.read_bytes()
    calls = AnswerInContextReader.calls
    with pytest.raises(OutputError, match="--frozen"):
        _tune(tuning, out, frozen=frozen, force=True, resume=target == "manifest")
    assert frozen.read_bytes() == before and AnswerInContextReader.calls == calls


def test_resume_alone_does_not_overwrite_an_existing_frozen_file(tmp_path: Path):
    sweep = _sweep(tmp_path)
    tuning = _tuning(tmp_path, sweep)
    notes = tmp_path / "notes.toml"
    notes.write_text("mine = true\n")
    with pytest.raises(OutputError, match="already exists; pass --force"):
        _tune(tuning, tmp_path / "run", frozen=notes, resume=True)
    assert notes.read_text() == "mine = true\n"
    # a link to an input is the input
    link = tmp_path / "link.toml"
    link.symlink_to(sweep)
    with pytest.raises(OutputError, match="is the input file"):
        _tune(tuning, tmp_path / "run", frozen=link, force=True)
    # --force overwrites a file that is no input
    _tune(tuning, tmp_path / "run", frozen=notes, force=True)
    assert "[tuned]" in notes.read_text()


def test_a_suite_sweep_is_chosen_pooled_and_per_dataset(tmp_path: Path):
    """Issue 47: tune on a suite of development datasets chooses one point on the pooled suite and,
    with scope = "per-dataset", one per dataset, each frozen in its own config; each choice is the
    rule applied by hand to that dataset's summary."""
    records = json.loads(DEV.read_text(encoding="utf-8"))
    a, b = tmp_path / "deva.json", tmp_path / "devb.json"
    a.write_text(json.dumps(records[:6]), encoding="utf-8")
    b.write_text(json.dumps(records[6:12]), encoding="utf-8")
    sweep = _sweep(tmp_path, data=None)
    sweep.write_text(sweep.read_text().replace("[evaluation]\n", f'[evaluation]\ndatasets = ["{a}", "{b}"]\n'))
    tuning = _tuning(tmp_path, sweep, within=0.0)
    tuning.write_text(tuning.read_text() + 'scope = "per-dataset"\n')
    record = _tune(tuning, tmp_path / "run")
    assert record["development"]["scope"] == "per-dataset" and len(record["development"]["datasets"]) == 2
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for name in ("deva", "devb"):
        frozen = tomllib.loads((tmp_path / "run" / f"tuned-{name}.toml").read_text())
        points = [(label, summary["datasets"][name]["compressors"][label]["values"]["em"]["mean"])
                  for label in (f"bm25@k={k}" for k in KS)]
        best = max(em for _, em in points)
        assert frozen["tuned"]["chosen"]["bm25"] in [label for label, em in points if em == best]
        assert frozen["tuned"]["dataset"] == name and frozen["evaluation"]["datasets"] == [str(a if name == "deva" else b)]
        assert record["per_dataset"][name]["chosen"] == frozen["tuned"]["chosen"]
    pooled = tomllib.loads((tmp_path / "run" / "tuned.toml").read_text())
    assert pooled["evaluation"]["datasets"] == [str(a), str(b)] and "dataset" not in pooled


def test_per_dataset_scope_needs_a_suite(tmp_path: Path):
    tuning = _tuning(tmp_path, _sweep(tmp_path), within=0.0)
    tuning.write_text(tuning.read_text() + 'scope = "per-dataset"\n')
    with pytest.raises(ConfigError, match="scope = 'per-dataset' chooses on each dataset of a suite"):
        _tune(tuning, tmp_path / "run")
    assert not (tmp_path / "run").exists()
