"""Issue 47 / issue 53 rows 3-4: one refusal of the evaluation data for ``tune``, ``train`` and
``label``: every evaluation file by content hash, a named evaluation dataset by name, a copy whose
ids were changed (suffix, case, spaces) by question id or question text; development data passes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.datasets import load_examples, named_source
from ragsift.datasets.catalogue import shipped_data_path
from ragsift.datasets.holdout import (
    evaluation_hashes,
    evaluation_ids,
    normalise_question,
    refuse_evaluation_data,
)
from ragsift.errors import ConfigError
from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry

ROOT = Path(__file__).parents[2]
TESTS = ROOT / "tests"
#: the evaluation files: (file in ragsift/data, format)
EVALUATION = [("hotpotqa-dev-sf100.json", "hotpotqa"), ("hotpotqa-dev-eval151.json", "hotpotqa"),
              ("hotpotqa-dev-eval251.json", "hotpotqa"), ("2wiki-eval123.json", "2wiki"),
              ("musique-ans-eval150.jsonl", "musique")]
DEVELOPMENT = [ROOT / "ragsift" / "data" / "2wiki-dev40.json", ROOT / "ragsift" / "data" / "musique-ans-dev50.jsonl",
               ROOT / "data" / "training" / "hotpotqa-dev-pool.json", ROOT / "data" / "training" / "hotpotqa-train-pool.json",
               ROOT / "data" / "training" / "hotpotqa-paragraph-pool.jsonl", TESTS / "data" / "hotpotqa-train-sf100.json"]


def test_every_evaluation_file_is_known() -> None:
    assert sorted(evaluation_hashes().values()) == sorted(name for name, _ in EVALUATION)
    assert len(evaluation_ids()) == 251 + 123 + 150  # the 524 evaluation questions


@pytest.mark.parametrize(("name", "fmt"), EVALUATION)
def test_each_evaluation_file_is_refused_under_any_name(tmp_path: Path, name: str, fmt: str) -> None:
    copy = tmp_path / f"my-development-data{Path(name).suffix}"
    shutil.copy(shipped_data_path(name), copy)
    with pytest.raises(ConfigError, match=rf"this is the evaluation file {name}.*never uses it"):
        refuse_evaluation_data(copy, list(load_examples(copy, fmt, limit=2)), "test")


def _renamed(record: dict[str, object], key: str, how: str) -> dict[str, object]:
    qid = str(record[key])
    new = {"suffix": qid + "-dev", "case": qid.upper(), "spaces": f"  {qid} "}[how]
    return {**record, key: new}


@pytest.mark.parametrize("how", ["suffix", "case", "spaces"])
@pytest.mark.parametrize(("name", "fmt"), EVALUATION)
def test_a_copy_with_its_ids_changed_is_refused(tmp_path: Path, name: str, fmt: str, how: str) -> None:
    source = shipped_data_path(name)
    key = "id" if fmt == "musique" else "_id"
    if source.suffix == ".jsonl":
        rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()[:3]]
        text = "".join(json.dumps(_renamed(r, key, how)) + "\n" for r in rows)
    else:
        rows = json.loads(source.read_text(encoding="utf-8"))[:3]
        text = json.dumps([_renamed(r, key, how) for r in rows])
    copy = tmp_path / f"renamed{source.suffix}"
    copy.write_text(text, encoding="utf-8")
    by = "by id" if how != "suffix" else "by question text"  # ids are compared stripped and case-folded
    with pytest.raises(ConfigError, match=rf"3 question\(s\) of the evaluation files {by}"):
        refuse_evaluation_data(copy, list(load_examples(copy, fmt)), "test")


def test_question_text_is_compared_normalised(data_dir: Path) -> None:
    example = next(iter(named_source("musique-eval").load(1)))
    assert normalise_question("  WHAT is the seat of the county,  where Van Hook Township is located ") == \
        normalise_question(example.question)
    from dataclasses import replace

    edited = replace(example, id="my-1", question=example.question.upper().replace(" ", "  ").rstrip("?"))
    with pytest.raises(ConfigError, match=r"by question text, under other ids \(my-1 \(musique-ans-eval150.jsonl\)\)"):
        refuse_evaluation_data(None, [edited], "test")


@pytest.mark.parametrize("name", ["hotpotqa-eval", "hotpotqa-sf100", "2wiki-eval", "musique-eval"])
def test_a_named_evaluation_dataset_is_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"'{name}' is an evaluation dataset"):
        refuse_evaluation_data(named_source(name).path, [], "test", name=name)


@pytest.mark.parametrize("path", DEVELOPMENT, ids=[p.name for p in DEVELOPMENT])
def test_development_data_passes(path: Path) -> None:
    sha = refuse_evaluation_data(path, list(load_examples(path)), "test")
    assert len(sha) == 64


@pytest.mark.parametrize("name", ["hotpotqa-dev", "2wiki-dev", "musique-dev"])
def test_named_development_datasets_pass(name: str) -> None:
    source = named_source(name)
    assert refuse_evaluation_data(source.path, list(source.load()), "test", name=name) == source.sha256()


# --- the three commands ---------------------------------------------------------------------------------------

#: what each command is given: an evaluation file (renamed copy) or an evaluation dataset's name
GIVEN = [*(f"copy:{name}" for name, _ in EVALUATION), "hotpotqa-eval", "2wiki-eval", "musique-eval"]


def _given(tmp_path: Path, given: str) -> str:
    if not given.startswith("copy:"):
        return given
    name = given.removeprefix("copy:")
    copy = tmp_path / f"dev-questions{Path(name).suffix}"
    shutil.copy(shipped_data_path(name), copy)
    return str(copy)


@pytest.mark.parametrize("given", GIVEN)
def test_label_refuses_the_evaluation_data(tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "labels.jsonl"
    assert main(["label", "-l", "exit-pairs", "-i", _given(tmp_path, given), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "ragsift label never uses" in err and "evaluation" in err, err
    assert not out.exists()


def test_label_accepts_a_development_dataset_by_name(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    assert main(["label", "-l", "exit-pairs", "-i", "2wiki-dev", "-o", str(out), "--limit", "2"]) == 0
    assert out.read_text(encoding="utf-8").strip()
    manifest = json.loads((tmp_path / "labels.jsonl.manifest.json").read_text(encoding="utf-8"))
    assert manifest["input"]["path"].endswith("2wiki-dev40.json")


TRAIN = """
[trainer]
name = "fusion"
steps = 2

[data]
train = "{train}"
dev = "{dev}"
limit = 4

[training]
output = "{output}"
"""


@pytest.mark.parametrize("role", ["train", "dev"])
@pytest.mark.parametrize("given", GIVEN)
def test_train_refuses_the_evaluation_data(tmp_path: Path, given: str, role: str) -> None:
    from ragsift.training.command import TrainOptions, run_training

    data = {"train": str(TESTS / "data" / "hotpotqa-train-sf100.json"), "dev": str(TESTS / "data" / "hotpotqa-dev-ircot52-sf.json")}
    data[role] = _given(tmp_path, given)
    config = tmp_path / "train.toml"
    config.write_text(TRAIN.format(**data, output=tmp_path / "model"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"ragsift train never uses"):
        run_training(TrainOptions(config=str(config), progress=False))
    assert not (tmp_path / "model").exists()


class _GoldReader(Reader):
    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        raise AssertionError("tune read a question of the evaluation data")


class _Plugin:
    @hookimpl
    def register_readers(self, register):  # type: ignore[no-untyped-def]
        register("never-called", _GoldReader)


@pytest.fixture
def never_called_reader() -> object:
    reset_registry()
    get_registry().add_plugin(_Plugin(), "tests-holdout")
    yield
    reset_registry()


@pytest.mark.parametrize("given", GIVEN)
def test_tune_refuses_the_evaluation_data(tmp_path: Path, given: str, never_called_reader: object) -> None:
    from ragsift.evaluation.run.tune import TuneOptions, run_tune

    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[compressors.bm25]\nname = "bm25"\nsplitter = "sentencizer"\n[compressors.bm25.selector]\n'
                     'name = "top-k"\nk = 2\n[reader]\nname = "never-called"\n[evaluation]\nlimit = 3\n'
                     '[evaluation.sweep.bm25.selector]\nk = [1, 2]\n', encoding="utf-8")
    tuning = tmp_path / "tuning.toml"
    tuning.write_text('sweep = "sweep.toml"\n[rule]\nmetric = "em"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"ragsift tune never uses"):
        run_tune(TuneOptions(config=str(tuning), out=tmp_path / "run", data=_given(tmp_path, given), progress=False))
    assert not (tmp_path / "run").exists()
