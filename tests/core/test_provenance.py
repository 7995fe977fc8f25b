"""One provenance module: the evaluation manifest, the label manifest and the training card all
record ragsift's version, git, time and packages through ragsift.provenance."""

from __future__ import annotations

import re
import subprocess

from ragsift import provenance


def test_stamp_names_the_version_the_checkout_the_time_and_the_packages():
    block = provenance.stamp()
    assert set(block) == {"ragsift_version", "git", "created_at", "packages"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", block["created_at"])
    assert "numpy" in block["packages"] and "python" in block["packages"]
    head = subprocess.run(["git", "-C", str(provenance.__file__).rsplit("/", 2)[0], "rev-parse", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (an installed wheel records no git)
        assert block["git"]["commit"] == head.stdout.strip()


def test_sha256_file_reads_a_file_in_blocks(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * (3 << 20))
    assert provenance.sha256_file(path) == provenance.sha256_bytes(b"x" * (3 << 20))


def test_portable_path_is_relative_to_the_first_root_that_holds_it():
    from pathlib import Path

    roots = [Path("/data/shipped"), Path("/home/me/work")]
    assert provenance.portable_path(Path("/home/me/work/configs/a.toml"), roots) == "configs/a.toml"
    assert provenance.portable_path(Path("/data/shipped"), roots) == "."
    assert provenance.portable_path(Path("/home/me/work/x"), [Path("/home/me"), *roots]) == "work/x"  # first root wins
    assert provenance.portable_path(Path("/data/shipped-other/m"), roots) is None  # a prefix of the name is no parent
    assert provenance.portable_path(Path("/elsewhere/m"), roots) is None
