"""``--set KEY=VALUE`` on compress, evaluate, serve and tune; ``CONFIG#LABEL``; ``config show``
output that reloads to the same config (every shipped config)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import ragsift
from ragsift.cli import main
from ragsift.config import load_config, load_labelled_config, parse_override, split_label
from ragsift.errors import ConfigError
from ragsift.hookspecs import hookimpl
from ragsift.readers.base import Reader, ReaderAnswer
from ragsift.registry import get_registry, reset_registry

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = sorted([*CONFIGS.glob("*.toml"), *(CONFIGS / "dev").glob("*.toml")])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("text", "table"), [
    ("compressor.selector.k=3", {"compressor": {"selector": {"k": 3}}}),
    ("compressor.selector.threshold=0.25", {"compressor": {"selector": {"threshold": 0.25}}}),
    ("compressor.selector.per_document=true", {"compressor": {"selector": {"per_document": True}}}),
    ("compressor.selector=threshold", {"compressor": {"selector": "threshold"}}),  # not TOML: a string
    ('compressor.selector="top-k"', {"compressor": {"selector": "top-k"}}),
    ('compressor.selector={name = "top-k", k = 2}', {"compressor": {"selector": {"name": "top-k", "k": 2}}}),
    ('compressors."exit@0.5".selector.k = 4', {"compressors": {"exit@0.5": {"selector": {"k": 4}}}}),
    ("description=a b = c", {"description": "a b = c"}),
])
def test_an_override_is_a_dotted_key_and_a_toml_value_else_a_string(text: str, table: dict[str, Any]) -> None:
    assert parse_override(text) == table


def test_overrides_use_the_one_override_rule_and_are_checked_like_the_file() -> None:
    config, label = load_labelled_config("bm25", ["compressor.selector.k=3"])
    assert label is None and config.overrides == ["compressor.selector.k=3"]
    (comp,) = config.build_compressors().values()
    assert comp.config()["selector"] == {"name": "top-k", "k": 3, "per_document": False}
    # a stage given by name swaps the plugin (its params go with it), then a param of the new one
    config, _ = load_labelled_config("bm25", ["compressor.selector=threshold", "compressor.selector.threshold=0.5"])
    (comp,) = config.build_compressors().values()
    assert comp.config()["selector"]["name"] == "threshold" and comp.config()["selector"]["threshold"] == 0.5
    with pytest.raises(ConfigError, match=r"--set compressor\.selector\.kk=3: .*unknown parameter 'kk'"):
        load_labelled_config("bm25", ["compressor.selector.kk=3"])
    with pytest.raises(ConfigError, match=r"--set compressor\.selector\.k=0: .*TopKSelector"):
        load_labelled_config("bm25", ["compressor.selector.k=0"])
    with pytest.raises(ConfigError, match=r"with --set compresor\.x=1: unknown parameter 'compresor'"):
        load_labelled_config("bm25", ["compresor.x=1"])
    with pytest.raises(ConfigError, match="not a dotted key"):
        parse_override("a..b=1")
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_override("k3")


def test_compress_set_changes_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "compress", "-c", "bm25", "--limit", "3", "-q", "-o", str(out),
                       "--set", "compressor.selector.k=2")
    assert code == 0, err
    assert [len(json.loads(line)["kept"]) for line in out.read_text().splitlines()] == [2, 2, 2]
    code, _, err = run(capsys, "compress", "-c", "bm25", "--limit", "1", "-q", "--set", "compressor.selector.k=-1")
    assert code == 2 and "ragsift: error: --set compressor.selector.k=-1:" in err
    code, _, err = run(capsys, "compress", "-c", "bm25", "--set", "k3")
    assert code == 2 and "expected KEY=VALUE" in err and "a bug" not in err


def test_config_label_picks_one_compressor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "compress", "-c", "cascades#bm25-docs3", "--limit", "2", "-q", "-o", str(out))
    assert code == 0, err
    assert {json.loads(line)["compressor"] for line in out.read_text().splitlines()} == {"bm25-docs3"}
    code, _, err = run(capsys, "compress", "-c", "cascades#bm25-doc3", "--limit", "1", "-q")
    assert code == 2 and "no compressor labelled 'bm25-doc3'" in err and "Did you mean 'bm25-docs3'?" in err
    code, _, err = run(capsys, "compress", "-c", "cascades", "--limit", "1", "-q")
    assert code == 2 and "CONFIG#LABEL" in err
    assert split_label("cascades#bm25-docs3") == ("cascades", "bm25-docs3")
    with pytest.raises(ConfigError, match="CONFIG#LABEL"):
        split_label("cascades#")


def test_a_config_file_whose_name_holds_a_hash_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "my#config.toml"
    path.write_text('[compressor]\nname = "bm25"\n')
    assert split_label(path) == (str(path), None)
    assert ragsift.load_compressor(str(path)).registered_name == "bm25"


def test_the_library_and_the_adapters_take_config_label() -> None:
    comp = ragsift.load_compressor("cascades#bm25-docs3", selector={"k": 2})
    assert comp.config()["selector"] == {"name": "top-documents", "aggregate": "max", "k": 2}
    with pytest.raises(ConfigError, match="Did you mean 'bm25-docs3'"):
        ragsift.load_compressor("cascades#bm25-doc3")
    langchain = pytest.importorskip("ragsift.integrations.langchain")
    adapter = langchain.RagsiftDocumentCompressor("cascades#fusion-docs3")
    assert adapter._sifter.spec()["scorer"]["name"] == "learned-fusion"


def test_serve_takes_set_and_label(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("fastapi")
    import ragsift.service.server as server

    served: dict[str, Any] = {}

    class NoServer:
        def __init__(self, app: Any) -> None:
            served["app"] = app

        def run(self, sockets: Any) -> None:
            for sock in sockets:
                sock.close()

    monkeypatch.setattr(server, "make_server", lambda app, **_: NoServer(app))
    code, _, err = run(capsys, "serve", "-c", "cascades#bm25-docs3", "--port", "0",
                       "--set", "compressors.bm25-docs3.selector.k=1")
    assert code == 0, err
    assert "'bm25-docs3' ready" in err
    from fastapi.testclient import TestClient

    with TestClient(served["app"]) as client:
        body = client.post("/compress", json={"question": "Who wrote Hamlet?", "documents": [
            "Hamlet is a play.", "Shakespeare wrote Hamlet.", "Paris is in France."]}).json()
    assert body["compressor"] == "bm25-docs3"
    kept_docs = {s["doc"] for s in body["results"][0]["sentences"] if s["kept"]}
    assert len(kept_docs) == 1  # k=1 document: the override reached the served compressor


def test_evaluate_records_the_overrides_and_resume_refuses_others(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = ["evaluate", "-c", "bm25", "--no-reader", "--limit", "3", "-q", "--out", str(out)]
    code, _, err = run(capsys, *args, "--set", "compressor.selector.k=2")
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["overrides"] == ["compressor.selector.k=2"]
    assert manifest["config"]["compressors"]["bm25"]["selector"]["k"] == 2
    assert manifest["config"]["resolved"]["compressor"]["selector"] == {"name": "top-k", "k": 2}
    code, _, err = run(capsys, *args, "--resume", "--set", "compressor.selector.k=4")
    assert code == 2 and "the --set overrides differ" in err
    code, _, err = run(capsys, *args, "--resume", "--set", "compressor.selector.k=2")
    assert code == 0, err


class _UnknownReader(Reader):
    """Answers 'unknown', reading one prompt token per context word."""

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        return [ReaderAnswer("unknown", len(context.split()), 1, 0.0) for context in contexts]


class _ReaderPlugin:
    @hookimpl
    def register_readers(self, register):  # type: ignore[no-untyped-def]
        register("says-unknown", _UnknownReader)


def test_tune_sets_the_sweep_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reset_registry()
    get_registry().add_plugin(_ReaderPlugin(), "tests-overrides")
    dev = Path(__file__).resolve().parents[1] / "data" / "hotpotqa-train-sf100.json"
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{dev}"\n[compressors.none]\nname = "none"\n'
                     '[compressors.bm25]\nname = "bm25"\nsplitter = "presplit"\n'
                     '[reader]\nname = "says-unknown"\n'
                     '[evaluation]\nlimit = 12\nwarmup = 0\nbootstrap_samples = 100\nbaseline = "none"\n'
                     'metrics = ["exact-match", "evidence"]\n[evaluation.sweep.bm25.selector]\nk = [1, 3]\n')
    tuning = tmp_path / "tune.toml"
    tuning.write_text('sweep = "sweep.toml"\n[rule]\nmetric = "em"\nwithin = 0.0\nprefer = "fewer-prompt-tokens"\n')
    try:
        code, _, err = run(capsys, "tune", "-c", str(tuning), "--out", str(tmp_path / "run"), "-q",
                           "--set", "evaluation.limit=4")
    finally:
        reset_registry()
    assert code == 0, err
    frozen = tomllib.loads((tmp_path / "run" / "tuned.toml").read_text())
    assert frozen["tuned"]["development"]["questions"] == 4
    assert frozen["tuned"]["sweep"]["overrides"] == ["evaluation.limit=4"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["overrides"] == ["evaluation.limit=4"] and manifest["input"]["examples"] == 4


@pytest.mark.parametrize("path", SHIPPED, ids=[p.relative_to(CONFIGS).as_posix() for p in SHIPPED])
def test_config_show_reloads_to_the_same_config(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CONFIGS.parent)
    code, out, err = run(capsys, "config", "show", str(path))
    assert code == 0, err
    again = tmp_path / "again.toml"
    again.write_text(out, encoding="utf-8")
    original, reloaded = load_config(path), load_config(again)
    assert reloaded.resolved() == original.resolved()
    assert reloaded.tuned == original.tuned


def test_config_show_keeps_a_switched_off_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "show", "exit-offline")
    scorer = tomllib.loads(out)["compressors"]["exit"]["scorer"]
    assert code == 0 and scorer["adapter"] == ""  # omitted, EXIT's default Gemma adapter would come back


@pytest.mark.parametrize("text", [
    'compressor.selector.k=3\n[reader]\nname = "openai"',  # a table the command line never named
    "compressor.selector.k=3\nevaluation.limit = 2",  # another key
    "compressor.selector.k=3\ncompressor.selector.name = 'threshold'",  # a sibling of KEY
])
def test_a_set_value_is_one_toml_value_not_several_lines_of_keys(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 53 row 11: a line break in VALUE may not set other keys or tables."""
    with pytest.raises(ConfigError, match="VALUE must be one TOML value"):
        parse_override(text)
    code, _, err = run(capsys, "compress", "-c", "bm25", "--set", text, "--limit", "1", "-q")
    assert code != 0 and err.count("ragsift: error:") == 1 and "give one --set per key" in err
    # a value that spans lines is still one value
    assert parse_override("compressor.selector.k=[1,\n2]") == {"compressor": {"selector": {"k": [1, 2]}}}


def test_a_label_or_a_config_path_holding_a_hash_is_split_where_a_config_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 53 row 18: ``CONFIG#a#b`` is the compressor ``a#b`` of CONFIG (it was the config
    ``CONFIG#a``, which does not exist), and ``dir#1/c.toml#x`` still reads ``dir#1/c.toml``."""
    folder = tmp_path / "runs#1"
    folder.mkdir()
    path = folder / "c.toml"
    path.write_text('[compressors."a#b"]\nname = "bm25"\n[compressors.none]\nname = "none"\n')
    assert split_label(f"{path}#a#b") == (str(path), "a#b")
    assert split_label(f"{path}#none") == (str(path), "none")
    assert ragsift.load_compressor(f"{path}#a#b").registered_name == "bm25"
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "compress", "-c", f"{path}#a#b", "--limit", "1", "-q", "-o", str(out))
    assert code == 0, err
    assert json.loads(out.read_text())["compressor"] == "a#b"
    # no config before any '#': the error names the text before the last one
    with pytest.raises(ConfigError, match=r"No config '.*nowhere#x'"):
        load_labelled_config(f"{tmp_path}/nowhere#x#y")
