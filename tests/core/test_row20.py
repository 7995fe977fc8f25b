"""Issue 53 row 20: URL passwords and inline keys of an unused [reader] stay out of the manifest;
an empty question is said; compressor labels that look the same are refused."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from ragsift.errors import ConfigError
from ragsift.evaluation.predictions import prediction_paths
from ragsift.evaluation.run.runner import RunOptions, run_evaluation
from ragsift.remote import redact_config_table, redact_config_text

DATA = Path(__file__).parents[1] / "data" / "hotpotqa-train-sf100.json"


def test_an_unused_readers_secrets_stay_out_of_the_manifest(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f"""[dataset]
name = "hotpotqa"
path = "{DATA}"
[compressor]
name = "bm25"
[reader]
name = "openai"
base_url = "http://alice:hunter2-pw@127.0.0.1:9/v1"
api_key = "sk-inline-secret-123"
[evaluation]
limit = 1
warmup = 0
bootstrap_samples = 100
""")
    run_evaluation(RunOptions(config=config, out=tmp_path / "run", no_reader=True, progress=False, echo=lambda _: None))
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert "hunter2-pw" not in manifest and "sk-inline-secret-123" not in manifest
    recorded = json.loads(manifest)["config"]
    assert 'api_key = "***"' in recorded["text"] and "alice:***@127.0.0.1" in recorded["text"]
    assert recorded["resolved"]["reader"]["api_key"] == "***"


def test_redaction_keeps_everything_else() -> None:
    text = 'name = "x"\nbase_url = "http://h:8080/v1"\ntoken_budget = 3\nkey = { password = "p", user = "u" }\n'
    assert redact_config_text(text) == text.replace('password = "p"', 'password = "***"')
    assert redact_config_table({"a": {"secret": "s", "n": 1, "tokens": "keep"}}) == {"a": {"secret": "***", "n": 1,
                                                                                         "tokens": "keep"}}


def test_an_empty_question_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = json.loads(DATA.read_text())[:2]
    records[1]["question"] = "   "
    data = tmp_path / "d.json"
    data.write_text(json.dumps(records))
    config = tmp_path / "run.toml"
    config.write_text('[compressor]\nname = "bm25"\n[evaluation]\nwarmup = 0\nbootstrap_samples = 100\n')
    run_evaluation(RunOptions(config=config, out=tmp_path / "run", data=str(data), no_reader=True, progress=False,
                              echo=lambda _: None))
    assert f"ragsift: warning: {data}: example '{records[1]['_id']}' has an empty question." in capsys.readouterr().err


def test_labels_that_look_the_same_are_refused(tmp_path: Path) -> None:
    composed, decomposed = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    assert composed != decomposed
    with pytest.raises(ConfigError, match="look the same"):
        prediction_paths(tmp_path, [composed, decomposed])
