from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragsift.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plugins_lists_every_stage_with_source_and_fields(capsys):
    code, out, _ = run(capsys, "plugins")
    assert code == 0
    for name in ["sentencizer", "nltk-punkt", "presplit", "threshold", "top-k", "token-budget", "original-order",
                 "rank-order", "none", "oracle", "bm25", "embedding", "hotpotqa"]:
        assert f"  {name} " in out, name
    assert "ragsift.selectors" in out and "fields: k=5, per_document=False" in out
    assert "      The k highest scores (ties broken by original order).\n      fields: k=5" in out


def test_plugins_json_for_one_stage(capsys):
    code, out, _ = run(capsys, "plugins", "--stage", "selector", "--json")
    data = json.loads(out)
    assert code == 0 and list(data) == ["selector"]
    assert {p["name"] for p in data["selector"]} >= {"threshold", "top-k"}


def test_config_validate_and_show(capsys):
    code, out, _ = run(capsys, "config", "validate", "configs/bm25.toml", "oracle")
    assert code == 0 and out.count(": OK") == 2
    code, out, _ = run(capsys, "config", "show", "bm25", "--json")
    resolved = json.loads(out)
    assert resolved["compressors"]["bm25"]["scorer"] == {"name": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25}


def test_config_show_toml_is_a_reusable_config(capsys, tmp_path):
    import tomllib

    from ragsift.config import load_config

    code, out, _ = run(capsys, "config", "show", "bm25")
    data = tomllib.loads(out)
    assert code == 0 and data["compressors"]["bm25"]["selector"] == {"name": "top-k", "k": 5, "per_document": False}
    again = tmp_path / "again.toml"
    again.write_text(out)
    (comp,) = load_config(again).build_compressors().values()
    assert comp.config()["scorer"] == {"name": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25}


def test_config_validate_reports_bad_params(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[compressor]\nname = "bm25"\n[compressor.selector]\nk = 0\n')
    code, _, err = run(capsys, "config", "validate", str(bad))
    assert code == 2
    assert "ragsift: error:" in err and "TopKSelector" in err and "got 0" in err


def test_compress_streams_jsonl_with_scores_and_decisions(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "compress", "--config", "configs/bm25.toml", "--limit", "4", "-o", str(out), "-q")
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4
    for r in records:
        assert len(r["kept"]) == 5 and r["compressor"] == "bm25"
        kept = [s for s in r["sentences"] if s["kept"]]
        assert {s["id"] for s in kept} == set(r["kept"])
        assert all(isinstance(s["score"], float) for s in r["sentences"])
        assert all(s["text"] in r["compressed_text"] for s in kept)


def test_compress_malformed_input_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answers": ["a"], "ctxs": []}\n{"question": 3}\n')
    code, _, err = run(
        capsys, "compress", "-c", "bm25", "-i", str(bad), "-f", "retrieval", "-o", str(tmp_path / "o.jsonl"), "-q"
    )
    assert code == 2 and str(bad) in err and "line 2" in err


@pytest.mark.parametrize(
    "command", [[], ["plugins"], ["config"], ["config", "validate"], ["config", "show"], ["compress"], ["label"]]
)
def test_every_command_has_help_with_examples(command):
    proc = subprocess.run(
        [sys.executable, "-m", "ragsift.cli", *command, "--help"], capture_output=True, text=True, check=True
    )
    assert "examples:" in proc.stdout


def test_label_writes_training_records(tmp_path, capsys, data_dir):
    out = tmp_path / "pairs.jsonl"
    code, _, err = run(
        capsys,
        "label",
        "-l",
        "exit-pairs",
        "-i",
        str(data_dir / "hotpotqa-train-sf100.json"),
        "-o",
        str(out),
        "--limit",
        "3",
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0 and f"wrote {len(records)} records" in err
    assert {r["kind"] for r in records} == {"positive", "hard_negative", "random_negative"}


def test_version_prints_the_package_version(capsys):
    from ragsift.version import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragsift {__version__}"


def test_an_unknown_config_name_suggests_a_close_one(capsys):
    code, _, err = run(capsys, "config", "show", "bm52")
    assert code == 2 and "No config 'bm52'" in err and err.rstrip().endswith("Did you mean 'bm25'?")
    code, _, err = run(capsys, "config", "show", "qqqqqqqq")
    assert code == 2 and "No config 'qqqqqqqq'" in err and "Did you mean" not in err


def test_an_unknown_plugin_name_on_the_command_line_suggests_a_close_one(capsys, tmp_path):
    code, _, err = run(capsys, "label", "-l", "exit-pair", "-i", "x.json", "-o", str(tmp_path / "out.jsonl"))
    assert code == 2 and "Unknown labeler 'exit-pair'" in err and "Did you mean 'exit-pairs'?" in err
