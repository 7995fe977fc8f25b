"""Issue 9, cases 6 and 8 to 13: bad input, broken servers and broken plugins end in one
``ragsift: error:`` line (exit code 2), never a traceback, and a failed run says how much it
saved (real CLI in a subprocess; library misuse in-process)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_process import ragsift
from openai_fakes import fake_openai_server

DATA = Path(__file__).parents[1] / "data"
HOTPOT = DATA / "hotpotqa-train-sf100.json"
SECRET = "sk-issue9-SECRET-0042"
GOOD = '{"question": "q%d", "answers": ["a"], "ctxs": [{"title": "t", "text": "Some text. More text."}]}'


def _one_error_line(proc, *needles: str, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("ragsift: error: "), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)
    return proc.stderr


def _compress(data: Path, *extra: str):
    return ragsift("compress", "-c", "configs/none.toml", "-i", data, "-q", *extra)


# -- case 6: a server that answers 200 with something that is not a chat completion ------------

def _reader_config(tmp_path: Path, base_url: str, retries: int = 2) -> Path:
    config = tmp_path / "run.toml"
    config.write_text(f"""
[dataset]
name = "hotpotqa"
path = "{HOTPOT}"
[compressors.none]
name = "none"
[reader]
name = "openai"
base_url = "{base_url}"
model = "fake"
api_key_env = "RAGSIFT_TEST_KEY"
max_retries = {retries}
backoff_seconds = 0.0
[evaluation]
limit = 4
warmup = 0
metrics = ["exact-match", "empty"]
""")
    return config


@pytest.mark.slow
@pytest.mark.parametrize("broken", ["malformed", "text", "empty"])
def test_a_broken_200_reply_is_retried_then_a_clear_error_and_the_manifest_says_failed(tmp_path, broken):
    out = tmp_path / "run"
    with fake_openai_server([200, 200, broken]) as server:
        proc = ragsift("evaluate", "-c", _reader_config(tmp_path, server.base_url), "--out", out, "-q",
                       env={"RAGSIFT_TEST_KEY": SECRET})
        assert len(server.requests) == 2 + 3  # two answers, then the broken reply, tried 3 times
    _one_error_line(proc, "failed 3 time(s)", "2 of 4 examples are saved", "--resume")
    assert {"malformed": "not valid JSON", "text": "not a chat completion", "empty": "no choices"}[broken] in proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "2 of 4 examples are saved" in manifest["error"]


def test_a_broken_reply_between_good_ones_costs_one_retry(tmp_path):
    from ragsift.registry import get_registry

    with fake_openai_server([200, "malformed", 200, "empty", 200, "text", 200]) as server:
        reader = get_registry().create("reader", "openai", {"base_url": server.base_url, "model": "m",
                                                            "backoff_seconds": 0.0, "max_retries": 1})
        answers = [reader.answer("q", "c").text for _ in range(4)]
    assert answers == ["Paris"] * 4 and len(server.requests) == 7
@pytest.mark.slow
def test_an_unexpected_exception_marks_the_manifest_failed_and_says_what_was_saved(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{HOTPOT}"\n[compressors.boom]\nname = "exploding"\n'
                      '[evaluation]\nlimit = 5\nwarmup = 0\nmetrics = ["evidence"]\n')
    out = tmp_path / "run"
    proc = ragsift("evaluate", "-c", config, "--out", out, "--no-reader", "-q", module="broken_plugins")
    _one_error_line(proc, "unexpected ZeroDivisionError", "2 of 5 examples are saved", "--resume")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "ZeroDivisionError" in manifest["error"]
    assert len((out / "predictions" / "boom.jsonl").read_text().splitlines()) == 2


# -- case 8: non-UTF-8 bytes and byte-order marks ------------------------------------------------

@pytest.mark.parametrize("bad_line", [3, 500])
def test_a_non_utf8_byte_is_reported_on_its_true_line_and_byte(tmp_path, bad_line):
    lines = [GOOD % i for i in range(600)]
    raw = [line.encode() for line in lines]
    raw[bad_line - 1] = raw[bad_line - 1].replace(b"Some", b"S\xe9me")
    data = tmp_path / "latin1.jsonl"
    data.write_bytes(b"\n".join(raw) + b"\n")
    column = raw[bad_line - 1].index(b"\xe9") + 1
    _one_error_line(_compress(data, "-f", "retrieval"), f"line {bad_line}, byte {column}", "not UTF-8")
    _one_error_line(_compress(data), f"line {bad_line}, byte {column}")  # format detected first


def test_a_non_utf8_byte_in_a_json_array_is_reported_on_its_line(tmp_path):
    text = json.dumps(json.loads(HOTPOT.read_text())[:3], indent=1).encode()
    line = 40
    rows = text.split(b"\n")
    rows[line - 1] = rows[line - 1].replace(b'"', b'"\xff', 1)
    data = tmp_path / "bad.json"
    data.write_bytes(b"\n".join(rows))
    column = rows[line - 1].index(b"\xff") + 1
    _one_error_line(_compress(data, "-f", "hotpotqa"), f"line {line}, byte {column}", "not UTF-8")


@pytest.mark.parametrize("fmt", ["retrieval", None])
def test_a_byte_order_mark_is_accepted_in_jsonl(tmp_path, fmt):
    data = tmp_path / "bom.jsonl"
    data.write_bytes(b"\xef\xbb\xbf" + "\n".join(GOOD % i for i in range(3)).encode())
    proc = _compress(data, *(["-f", fmt] if fmt else []))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == ["0", "1", "2"]


# -- case 9: config validate checks model files and [evaluation], reporting every problem --------

def test_config_validate_checks_model_files_and_evaluation_and_reports_everything(tmp_path):
    from ragsift.models import OFFLINE_SMOLLM2, resolve_model

    gguf = resolve_model(OFFLINE_SMOLLM2).file
    assert gguf is not None
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(gguf.read_bytes()[:4096])
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"<html>not a model</html>")
    bad = tmp_path / "bad.toml"
    bad.write_text(f"""
[compressors.corrupt]
name = "exit"
[compressors.corrupt.scorer]
model = "{corrupt}"
adapter = ""
[compressors.junk]
name = "exit"
[compressors.junk.scorer]
model = "{junk}"
adapter = ""
[compressors.hub]
name = "embedding"
[compressors.hub.scorer]
model = "nobody-here/no-such-model"
[evaluation]
baseline = "missing"
""")
    worse = tmp_path / "worse.toml"
    worse.write_text('[compressor]\nname = "bm25"\n[evaluation]\nwarmup = "many"\n')
    proc = ragsift("config", "validate", bad, "configs/bm25.toml", worse, env={"HF_HUB_OFFLINE": "1"})
    err = _one_error_line(proc, f"Model '{corrupt}'", "truncated", f"Model '{junk}'", "GGUF magic",
                          "nobody-here/no-such-model", "offline", "baseline 'missing'", "warmup")
    assert "configs/bm25.toml: OK (bm25)" in proc.stdout
    assert "2 of 3 config(s) have problems" in err
@pytest.mark.slow
def test_a_corrupt_model_at_run_time_is_a_clear_error(tmp_path):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 64)
    config = tmp_path / "exit.toml"
    config.write_text(f'[compressor]\nname = "exit"\n[compressor.scorer]\nmodel = "{corrupt}"\nadapter = ""\n')
    _one_error_line(ragsift("compress", "-c", config, "--limit", "1", "-q"), f"Model '{corrupt}'", "corrupted")


@pytest.mark.slow
def test_a_hub_id_while_offline_at_run_time_is_a_clear_error(tmp_path):
    config = tmp_path / "hub.toml"
    config.write_text('[compressor]\nname = "embedding"\n[compressor.scorer]\nmodel = "nobody-here/no-such-model"\n')
    out = tmp_path / "out.jsonl"
    proc = ragsift("compress", "-c", config, "--limit", "1", "-q", "-o", out, env={"HF_HUB_OFFLINE": "1"})
    _one_error_line(proc, "Model 'nobody-here/no-such-model'", "not in the local cache", "offline")
    assert not out.exists() and list(tmp_path.iterdir()) == [config]


# -- case 10: threshold ranges follow the scorer; no booleans for numbers ------------------------

@pytest.mark.parametrize("table, needle", [
    ('name = "exit-offline"\n[compressor.selector]\nthreshold = 1.5', "outside the score range [0.0, 1.0]"),
    ('name = "oracle"\n[compressor.selector]\nthreshold = -0.5', "outside the score range"),
    ('name = "embedding"\n[compressor.selector]\nname = "threshold"\nthreshold = 2.0', "[-1.0, 1.0]"),
    ('name = "bm25"\n[compressor.selector]\nk = true', "'k': expects a number, not true"),
    ('name = "random"\n[compressor.scorer]\nseed = false', "'seed': expects a number, not false"),
])
def test_bad_numbers_are_refused(tmp_path, table, needle):
    config = tmp_path / "c.toml"
    config.write_text(f"[compressor]\n{table.replace('exit-offline', 'exit')}\n")
    _one_error_line(ragsift("config", "validate", config), needle)
    _one_error_line(ragsift("compress", "-c", config, "--limit", "1", "-q"), needle)


def test_evaluation_booleans_are_refused(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[compressor]\nname = "none"\n[evaluation]\nlimit = true\nlimits = {none = true}\n')
    _one_error_line(ragsift("config", "validate", config), "'limit': expects a number, not true",
                    "each limit must be an integer")


def test_unbounded_scores_take_any_threshold(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[compressor]\nname = "bm25"\n[compressor.selector]\nname = "threshold"\nthreshold = 3.5\n')
    proc = ragsift("config", "validate", config)
    assert proc.returncode == 0, proc.stderr


# -- case 11: library misuse ----------------------------------------------------------------------

def test_make_example_takes_one_answer_string_and_refuses_a_string_of_documents():
    from ragsift import make_example
    from ragsift.errors import RagsiftError

    example = make_example("Who owns MTV?", ["MTV is owned by Viacom."], answers="Viacom")
    assert example.answers == ("Viacom",) and len(example.documents) == 1
    with pytest.raises(RagsiftError, match="'documents' must be a list"):
        make_example("Who owns MTV?", "MTV is owned by Viacom.")
    with pytest.raises(RagsiftError, match="document 1 must be a text"):
        make_example("q", ["ok", 42])
    with pytest.raises(RagsiftError, match="every answer must be a string"):
        make_example("q", ["d"], answers=["a", 3])


@pytest.mark.parametrize("value", [None, "x", 3, {"question": "q"}])
def test_compress_refuses_what_is_not_an_example(value):
    from ragsift import load_compressor
    from ragsift.errors import RagsiftError

    for name in ("bm25", "none"):
        compressor = load_compressor(name)
        with pytest.raises(RagsiftError, match="expected an Example"):
            compressor.compress(value)
    with pytest.raises(RagsiftError, match="expected an iterable of Examples"):
        compressor.compress_many("x")


# -- case 12: plugins that break their contract ---------------------------------------------------

@pytest.mark.parametrize("stage, name, needle", [
    ("scorer", "one-short", "scorer 'one-short' (OneShortScorer) returned scores of shape"),
    ("selector", "out-of-range", "selector 'out-of-range' (OutOfRangeSelector) returned invalid indices"),
])
@pytest.mark.slow
def test_a_plugin_breaking_its_contract_is_named(tmp_path, stage, name, needle):
    config = tmp_path / "c.toml"
    config.write_text(f'[compressor]\nname = "bm25"\n[compressor.{stage}]\nname = "{name}"\n')
    proc = ragsift("compress", "-c", config, "--limit", "1", "-q", module="broken_plugins")
    _one_error_line(proc, needle)


def test_plugin_contract_errors_are_ragsift_errors():
    from broken_plugins import OneShortScorer

    from ragsift.api import make_example
    from ragsift.compressors.baselines import BM25Compressor
    from ragsift.errors import PluginContractError, RagsiftError

    compressor = BM25Compressor()
    compressor.scorer = OneShortScorer()
    with pytest.raises(PluginContractError) as info:
        compressor.compress(make_example("q", ["One. Two."]))
    assert isinstance(info.value, RagsiftError) and "OneShortScorer" in str(info.value)


# -- case 13: the smaller ones --------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_5000_digit_id_is_a_clear_error(tmp_path, fmt):
    huge = "9" * 5000
    records = [GOOD % 0, GOOD.replace('"question"', f'"id": {huge}, "question"') % 1]
    data = tmp_path / f"huge.{fmt}"
    data.write_text("\n".join(records) if fmt == "jsonl" else "[\n" + ",\n".join(records) + "\n]")
    line = 2 if fmt == "jsonl" else 3  # the array's "[" has a line of its own
    _one_error_line(_compress(data, "-f", "retrieval"), f"line {line}", "too many digits")


def test_deep_nesting_is_a_clear_error(tmp_path):
    data = tmp_path / "deep.jsonl"
    data.write_text(GOOD % 0 + "\n" + '{"question": "q", "ctxs": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    _one_error_line(_compress(data, "-f", "retrieval"), "line 2", "nested too deeply")


def test_control_character_and_non_object_messages_are_whole(tmp_path):
    data = tmp_path / "ctrl.jsonl"
    data.write_text('{"question": "a\tb", "ctxs": []}\n')
    err = _one_error_line(_compress(data, "-f", "retrieval"), "line 1, column 16", "raw control character")
    assert "at." not in err
    data.write_text("1\n")
    _one_error_line(_compress(data, "-f", "retrieval"), "line 1", "must be a JSON object {...}; this one is the number 1")


def test_an_empty_file_says_so(tmp_path):
    data = tmp_path / "empty.json"
    data.write_text("\n  \n")
    err = _one_error_line(_compress(data), "the file is empty")
    assert "could not detect" not in err
@pytest.mark.slow
def test_an_api_key_echoed_by_the_server_is_never_stored_or_printed(tmp_path):
    out = tmp_path / "run"
    with fake_openai_server([200, 500], api_key_echo=True) as server:
        proc = ragsift("evaluate", "-c", _reader_config(tmp_path, server.base_url, retries=1), "--out", out, "-q",
                       env={"RAGSIFT_TEST_KEY": SECRET})
    err = _one_error_line(proc, "HTTP 500", "Authorization: Bearer ***")
    assert SECRET not in err + proc.stdout
    for path in out.rglob("*"):
        assert path.is_dir() or SECRET not in path.read_text(errors="replace"), path
    assert "Bearer ***" in json.loads((out / "manifest.json").read_text())["error"]


@pytest.mark.slow
def test_quiet_prints_no_model_loading_progress_bar(tmp_path):
    proc = ragsift("compress", "-c", "configs/embedding.toml", "--limit", "1", "-q", "-o", tmp_path / "o.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "%|" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr
    assert os.path.getsize(tmp_path / "o.jsonl") > 0
@pytest.mark.slow
def test_ctrl_c_marks_the_manifest_interrupted_and_says_what_was_saved(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from cli_process import REPO

    out = tmp_path / "run"
    with fake_openai_server([200], block_after=2) as server:
        config = _reader_config(tmp_path, server.base_url)
        env = {**os.environ, "RAGSIFT_TEST_KEY": SECRET, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen([sys.executable, "-m", "ragsift.cli", "evaluate", "-c", str(config), "--out", str(out),
                                    "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                                   # a suite started in the background ('cmd &' in a script) ignores SIGINT, and
                                   # Python keeps an ignored SIGINT ignored: Ctrl-C as at a terminal needs the default
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while len(server.requests) < 3:  # two answered and written, the third held by the server
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.05)  # polling the server another process talks to
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "ragsift: interrupted: 'none': 2 of 4 examples are saved" in stderr and "Traceback" not in stderr, stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"


# -- issue 24, case 9: a folder, FIFO or device given as input says what it is -------------------

@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_an_input_that_is_not_a_file_says_what_it_is(tmp_path, kind):
    if kind == "folder":
        data, what = tmp_path, "is a folder"
    elif kind == "fifo":
        data, what = tmp_path / "pipe", "is a named pipe (FIFO)"
        os.mkfifo(data)
    else:
        data, what = Path("/dev/null"), "is a character device"
    err = _one_error_line(_compress(data), f"{data}: this {what}, not a file; give the path of a dataset file")
    assert "no such file" not in err
    _one_error_line(_compress(data, "-f", "hotpotqa"), f"{data}: this {what}")
