"""Named datasets: the catalogue's records match the files (hash, size, loader, labels), names
resolve wherever a data file is accepted (a file that exists wins), unknown names list the known
ones, and ``ragsift datasets`` lists them (text and JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.datasets import DataSource, dataset_names, named_dataset, named_source, resolve_data
from ragsift.datasets.catalogue import CATALOGUE, shipped_data_path
from ragsift.errors import ConfigError
from ragsift.provenance import sha256_file

ROOT = Path(__file__).parents[2]


def test_the_catalogue_names_the_issue_s_datasets() -> None:
    assert dataset_names() == ["hotpotqa-eval", "hotpotqa-sf100", "hotpotqa-dev", "2wiki-dev", "2wiki-eval",
                               "musique-dev", "musique-eval"]
    assert dataset_names("evaluation") == ["hotpotqa-eval", "hotpotqa-sf100", "2wiki-eval", "musique-eval"]
    assert sum(named_dataset(n).n for n in ("hotpotqa-eval", "2wiki-eval", "musique-eval")) == 524


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_each_entry_matches_its_file(name: str) -> None:
    dataset = named_dataset(name)
    source = named_source(name)
    assert source.name == name and source.format == dataset.format and source.dataset == dataset
    assert source.path == dataset.path() and source.sha256() == dataset.sha256 == sha256_file(source.path)
    examples = list(source.load())
    assert len(examples) == dataset.n and len({ex.id for ex in examples}) == dataset.n
    if dataset.labels == "sentence":
        assert all(ex.evidence for ex in examples)
    else:
        assert all(ex.evidence is None and ex.metadata["supporting_docs"] for ex in examples)
    assert dataset.role in ("development", "evaluation") and dataset.source and dataset.licence and dataset.description


def test_hotpotqa_eval_is_sf100_then_eval151_byte_for_byte() -> None:
    combined = shipped_data_path("hotpotqa-dev-eval251.json").read_bytes()
    sf100 = shipped_data_path("hotpotqa-dev-sf100.json").read_bytes()
    eval151 = shipped_data_path("hotpotqa-dev-eval151.json").read_bytes()
    assert combined == sf100[:-1] + b", " + eval151[1:]
    assert json.loads(combined) == json.loads(sf100) + json.loads(eval151)
    assert [ex.id for ex in named_source("hotpotqa-eval").load(100)] == [ex.id for ex in named_source("hotpotqa-sf100").load()]
    assert named_dataset("hotpotqa-eval").derived_from == ("hotpotqa-dev-sf100.json", "hotpotqa-dev-eval151.json")


def test_ids_are_unique_across_every_named_dataset() -> None:
    seen: dict[str, str] = {}
    for name in dataset_names():
        if name == "hotpotqa-sf100":  # the first 100 of hotpotqa-eval
            continue
        for ex in named_source(name).load():
            key = ex.id.strip().casefold()
            assert key not in seen, f"{ex.id} is in {seen.get(key)} and {name}"
            seen[key] = name


def test_resolve_data_takes_a_name_where_it_takes_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = resolve_data(None, "2wiki-eval")
    assert source == DataSource(shipped_data_path("2wiki-eval123.json"), "2wiki", {}, name="2wiki-eval")
    # --format wins over the dataset's loader; a config table that names another file does not apply
    assert resolve_data(None, "musique-dev", "ircot").format == "ircot"
    assert resolve_data({"name": "retrieval", "path": "x.jsonl", "top_k": 3}, "musique-dev") == named_source("musique-dev")
    # a config's [dataset] path may be a name; its loader params apply to it
    assert resolve_data({"path": "hotpotqa-sf100"}) == named_source("hotpotqa-sf100")
    # a file that exists wins over the name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "2wiki-dev").write_text("[]", encoding="utf-8")
    assert resolve_data(None, "2wiki-dev") == DataSource(Path("2wiki-dev"), None, {})
    # a file given by path, as before
    assert resolve_data(None, "data.json") == DataSource(Path("data.json"), None, {})


def test_an_unknown_name_lists_the_named_datasets() -> None:
    with pytest.raises(ConfigError, match=r"'2wiki-evl' is neither a file nor a named dataset\. Named datasets: "
                                          r"hotpotqa-eval, .*musique-eval .*Did you mean '2wiki-eval'\?"):
        resolve_data(None, "2wiki-evl")
    with pytest.raises(ConfigError, match=r"unknown dataset 'nq'\. Named datasets: hotpotqa-eval, "):
        named_dataset("nq")


def test_a_source_tree_dataset_outside_the_source_tree_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    import ragsift.datasets.catalogue as catalogue

    monkeypatch.setattr(catalogue, "REPOSITORY", tmp_path)  # an installed wheel: no data/training/
    with pytest.raises(ConfigError, match=r"'hotpotqa-dev' .* source tree only"):
        resolve_data(None, "hotpotqa-dev")


def test_the_datasets_command_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    for dataset in CATALOGUE.values():
        line = next(line for line in out.splitlines() if line.startswith(dataset.name + " "))
        assert dataset.role in line and str(dataset.n) in line and dataset.labels in line and dataset.licence in line
        assert dataset.source in out
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(CATALOGUE)
    assert all({"role", "n", "labels", "format", "source", "licence", "sha256", "path", "available"} <= set(r) for r in rows)
    assert all(r["available"] and Path(r["path"]).is_file() for r in rows)  # all of them, in the source tree
    assert main(["datasets", "--role", "development", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["hotpotqa-dev", "2wiki-dev", "musique-dev"]


def test_the_wheel_ships_the_data_files() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/*"' in pyproject  # [tool.setuptools.package-data] ragsift
    for dataset in CATALOGUE.values():
        for name in (dataset.file, *dataset.derived_from):
            if dataset.shipped:
                assert (ROOT / "ragsift" / "data" / name).is_file()
    assert not named_dataset("hotpotqa-dev").shipped
