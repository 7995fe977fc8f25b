"""Issue 9, cases 1, 2 and 7: ``compress`` and ``label`` never destroy their input, never
overwrite an output unasked, never leave a truncated file under the final name, and report
every output problem as one ``ragsift: error:`` line with exit code 2 (real CLI, subprocess)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_process import ragsift, read_only_folder

NONE = "configs/none.toml"
DATA = Path(__file__).parents[1] / "data"


def _compress_sample(out: Path, limit: int = 3, *extra: str):
    return ragsift("compress", "-c", NONE, "--limit", str(limit), "-o", out, "-q", *extra)


@pytest.fixture
def sample_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "x.jsonl"
    proc = _compress_sample(path)
    assert proc.returncode == 0, proc.stderr
    return path


def _assert_one_error_line(proc, *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("ragsift: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_output_that_is_the_input_is_refused_before_anything_is_written(tmp_path, link):
    data = tmp_path / "in.json"
    data.write_bytes((DATA / "hotpotqa-train-sf100.json").read_bytes())
    before = data.read_bytes()
    out = data
    if link == "symlink":
        out = tmp_path / "alias.json"
        out.symlink_to(data)
    elif link == "hardlink":
        out = tmp_path / "alias.json"
        os.link(data, out)
    for extra in ([], ["--force"]):
        proc = ragsift("compress", "-c", NONE, "-i", data, "-o", out, "-q", *extra)
        _assert_one_error_line(proc, "is the input file")
        assert data.read_bytes() == before


def test_label_output_that_is_the_input_is_refused(tmp_path):
    data = tmp_path / "train.json"
    data.write_bytes((DATA / "hotpotqa-train-sf100.json").read_bytes())
    proc = ragsift("label", "-l", "exit-pairs", "-i", data, "-o", data, "--limit", "2")
    _assert_one_error_line(proc, "is the input file")
    assert data.read_bytes() == (DATA / "hotpotqa-train-sf100.json").read_bytes()


def test_existing_output_is_refused_unless_force(sample_jsonl):
    before = sample_jsonl.read_bytes()
    proc = _compress_sample(sample_jsonl, 2)
    _assert_one_error_line(proc, "already exists", "--force")
    assert sample_jsonl.read_bytes() == before
    proc = _compress_sample(sample_jsonl, 2, "--force")
    assert proc.returncode == 0, proc.stderr
    assert len(sample_jsonl.read_text().splitlines()) == 2
    before = sample_jsonl.read_bytes()
    proc = ragsift("label", "-l", "exit-pairs", "-i", DATA / "hotpotqa-train-sf100.json", "-o", sample_jsonl, "--limit", "2")
    _assert_one_error_line(proc, "already exists", "--force")
    assert sample_jsonl.read_bytes() == before


def test_a_failed_run_leaves_no_truncated_file_under_the_final_name(tmp_path):
    data = tmp_path / "in.jsonl"
    good = '{"question": "q%d", "answers": ["a"], "ctxs": [{"title": "t", "text": "Some text. More text."}]}\n'
    data.write_text("".join(good % i for i in range(3)) + '{"question": 3}\n')
    out = tmp_path / "out.jsonl"
    proc = ragsift("compress", "-c", NONE, "-i", data, "-f", "retrieval", "-o", out, "-q")
    _assert_one_error_line(proc, "line 4", f"{out} was not written", "3 record(s)", "out.jsonl.partial")
    assert not out.exists()
    partial = tmp_path / "out.jsonl.partial"
    assert [json.loads(line)["id"] for line in partial.read_text().splitlines()] == ["0", "1", "2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl.partial"]  # no temporary file left


def test_output_is_written_with_the_usual_permissions(tmp_path):
    out = tmp_path / "out.jsonl"
    assert _compress_sample(out, 1).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_stdout_still_streams(tmp_path):
    proc = ragsift("compress", "-c", NONE, "--limit", "2", "-q")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 2


@pytest.mark.parametrize("case", ["missing-folder", "folder", "disk-full"])
def test_output_problems_are_one_error_line(tmp_path, case):
    out = {"missing-folder": tmp_path / "nowhere" / "out.jsonl", "folder": tmp_path, "disk-full": Path("/dev/full")}[case]
    if case == "disk-full" and not out.exists():
        pytest.skip("no /dev/full on this system")
    proc = _compress_sample(out)
    needle = {"missing-folder": "does not exist", "folder": "is a folder", "disk-full": "No space left on device"}[case]
    _assert_one_error_line(proc, str(out), needle)
    proc = ragsift("label", "-l", "exit-pairs", "-i", DATA / "hotpotqa-train-sf100.json", "-o", out, "--limit", "2")
    _assert_one_error_line(proc, str(out), needle)


def test_read_only_folder_is_one_error_line(tmp_path):
    with read_only_folder(tmp_path) as (folder, prefix):
        out = folder / "out.jsonl"
        proc = ragsift("compress", "-c", NONE, "--limit", "2", "-o", out, "-q", prefix=prefix)
        _assert_one_error_line(proc, f"cannot write {out}", "Permission denied")
        proc = ragsift("evaluate", "-c", NONE, "--out", folder / "run", "--no-reader", "--limit", "1", "-q",
                       prefix=prefix)
        _assert_one_error_line(proc, str(folder / "run"), "Permission denied")
        assert list(folder.iterdir()) == []


def _failing_input(path: Path) -> Path:
    """Three good retrieval records, then a bad one on line 4: the run fails after writing three."""
    good = '{"question": "q%d", "answers": ["a"], "ctxs": [{"title": "t", "text": "Some text. More text."}]}\n'
    path.write_text("".join(good % i for i in range(3)) + '{"question": 3}\n')
    return path


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_an_input_named_like_the_partial_output_is_refused_and_survives(tmp_path, force):
    """Issue 24, case 1: ``-i X.partial -o X`` would rename the failed run's output over the input."""
    data = _failing_input(tmp_path / "out.jsonl.partial")
    before = data.read_bytes()
    proc = ragsift("compress", "-c", NONE, "-i", data, "-f", "retrieval", "-o", tmp_path / "out.jsonl", "-q", *force)
    _assert_one_error_line(proc, "out.jsonl.partial", "is the input file")
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl.partial"]


def test_label_refuses_an_input_that_is_its_partial_or_manifest_name(tmp_path):
    for name in ("pairs.jsonl.partial", "pairs.jsonl.manifest.json"):
        data = tmp_path / name
        data.write_bytes((DATA / "hotpotqa-train-sf100.json").read_bytes())
        proc = ragsift("label", "-l", "exit-pairs", "-i", data, "-f", "hotpotqa", "-o", tmp_path / "pairs.jsonl",
                       "--limit", "2", "--force")
        _assert_one_error_line(proc, name, "is the input file")
        assert data.read_bytes() == (DATA / "hotpotqa-train-sf100.json").read_bytes()
        data.unlink()


def test_an_existing_partial_file_is_not_replaced_without_force(tmp_path):
    data = _failing_input(tmp_path / "in.jsonl")
    partial = tmp_path / "out.jsonl.partial"
    partial.write_text("kept from an earlier run\n")
    proc = ragsift("compress", "-c", NONE, "-i", data, "-f", "retrieval", "-o", tmp_path / "out.jsonl", "-q")
    _assert_one_error_line(proc, str(partial), "already exists", "--force")
    assert partial.read_text() == "kept from an earlier run\n"
    proc = ragsift("label", "-l", "exit-pairs", "-i", DATA / "hotpotqa-train-sf100.json", "-o", tmp_path / "out.jsonl",
                   "--limit", "2")
    _assert_one_error_line(proc, str(partial), "already exists")
    assert partial.read_text() == "kept from an earlier run\n"
    proc = ragsift("compress", "-c", NONE, "-i", data, "-f", "retrieval", "-o", tmp_path / "out.jsonl", "-q", "--force")
    _assert_one_error_line(proc, "line 4", "3 record(s)", "out.jsonl.partial")
    assert len(partial.read_text().splitlines()) == 3  # --force: the new partial output replaces it


def test_atomic_output_keeps_an_existing_partial_file_by_default(tmp_path):
    from ragsift.output_files import AtomicOutput

    partial = tmp_path / "out.jsonl.partial"
    partial.write_text("earlier\n")
    output = AtomicOutput(tmp_path / "out.jsonl")
    with pytest.raises(RuntimeError), output as fh:
        fh.write("new\n")
        raise RuntimeError("stop")
    assert partial.read_text() == "earlier\n"
    assert output.partial_path == tmp_path / "out.jsonl.partial.1"
    assert output.partial_path.read_text() == "new\n"
