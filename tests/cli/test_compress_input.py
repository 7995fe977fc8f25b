"""``ragsift compress``: every line carries its example's question; ``-i -`` reads standard input
(its format given, or detected from its first bytes); the progress bar has a total (and so an
ETA) when the number of examples is cheap to know."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.cli_input import count_examples, stdin_to_file
from ragsift.datasets.loading import resolve_data
from ragsift.errors import DataFormatError, UsageError

REPO = Path(__file__).resolve().parents[2]
JSONL = REPO / "tests" / "data" / "retrieval-hotpotqa-dev5.jsonl"  # 5 records, one a line
ARRAY = REPO / "tests" / "data" / "hotpotqa-dev-ircot52-sf.json"


def _questions(path: Path) -> list[tuple[str, str]]:
    return [(r["id"], r["question"]) for r in map(json.loads, path.read_text().splitlines()) if r]


def _stdin_run(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAGSIFT_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "ragsift.cli", "compress", "-c", "bm25", "-i", "-", "-q", *args],
                          input=data, capture_output=True, env=env, cwd=REPO, timeout=300)


@pytest.mark.parametrize("fmt", [[], ["-f", "retrieval"]], ids=["detected", "given"])
def test_compress_reads_standard_input_and_each_line_carries_its_question(fmt: list[str]) -> None:
    done = _stdin_run(JSONL.read_bytes(), *fmt)
    assert done.returncode == 0, done.stderr.decode()
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [(r["id"], r["question"]) for r in records] == _questions(JSONL)
    assert all(list(r)[:2] == ["id", "question"] and r["compressor"] == "bm25" and r["kept"] for r in records)


def test_malformed_standard_input_is_named_as_such_with_its_line() -> None:
    lines = JSONL.read_bytes().splitlines(keepends=True)
    done = _stdin_run(lines[0] + b"{not json\n", "-f", "retrieval")
    err = done.stderr.decode()
    assert done.returncode == 2 and "ragsift: error: standard input (-i -), line 2" in err, err
    assert "ragsift-stdin-" not in err  # not the spooled copy's path


def test_empty_or_terminal_standard_input_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataFormatError, match="standard input.*nothing arrived"):
        stdin_to_file(tmp_path, io.BytesIO(b"  \n"))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    with pytest.raises(UsageError, match="terminal"):
        stdin_to_file(tmp_path)


def test_examples_are_counted_where_cheap(tmp_path: Path) -> None:
    assert count_examples(resolve_data(None)) == 100  # the bundled sample: its catalogue count
    assert count_examples(resolve_data(None, "hotpotqa-eval")) == 251
    assert count_examples(resolve_data(None, str(JSONL))) == 5  # JSONL: non-blank lines, format detected
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_bytes(JSONL.read_bytes().replace(b"\n", b"\n\n  \n"))
    assert count_examples(resolve_data(None, str(spaced), "retrieval")) == 5
    assert count_examples(resolve_data(None, str(ARRAY))) is None  # a JSON array would be parsed twice


@pytest.mark.parametrize(("args", "bar"), [
    (["-i", str(JSONL)], "5/5 ["),          # counted
    (["-i", str(ARRAY), "--limit", "2"], "2/2 ["),  # not counted: the limit
    (["-i", str(JSONL), "--limit", "3"], "3/3 ["),
    (["-i", str(ARRAY)], "52ex ["),   # no total, no ETA: the bar says so by its shape
])
def test_the_progress_bar_has_a_total_when_known(capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str],
                                                 bar: str) -> None:
    code = main(["compress", "-c", "bm25", *args, "-o", str(tmp_path / "out.jsonl")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert bar in err.replace("\r", "\n"), err
    if "/" in bar:
        assert "<00:00" in err  # the ETA (remaining time) tqdm shows only with a total
    else:
        assert "<" not in err
