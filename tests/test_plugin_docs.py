"""docs/plugins.md, followed to the letter: its files make a package that pip installs into a
fresh virtual environment (layered over this one, so nothing is downloaded and the shared
environment is left alone); the plugin is found by name, passes the conformance kit under
pytest, and compresses through ``name = "pipeline"``."""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "plugins.md"


def doc_files() -> dict[str, str]:
    """The doc's code blocks whose first line names a file of the package (``# acme-sift/...``)."""
    files = {}
    for block in re.findall(r"```[a-z]*\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S):
        first = block.splitlines()[0]
        if first.startswith("# acme-sift/"):
            files[first[len("# acme-sift/"):].strip()] = block
    return files


def test_the_doc_names_every_file_of_the_package():
    assert set(doc_files()) == {"acme_sift/__init__.py", "pyproject.toml", "acme.toml", "tests/test_conformance.py"}


@pytest.mark.slow
@pytest.mark.integration
def test_a_plugin_written_from_the_doc_installs_conforms_and_compresses(tmp_path):
    package = tmp_path / "acme-sift"
    for name, text in doc_files().items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    child_site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                                capture_output=True, text=True).stdout.strip()
    # the project's environment (torch, ragsift's dependencies, setuptools) under the new one
    parents = ";".join(f"site.addsitedir({p!r})" for p in site.getsitepackages())
    Path(child_site, "project-environment.pth").write_text(f"import site; {parents}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAGSIFT_PLUGINS", None)

    def run(*args: str | Path) -> str:
        done = subprocess.run(
            [str(a) for a in args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-build-isolation", "--no-index",
        "--quiet", package)
    found = run(python, "-c", "from ragsift.registry import get_registry; "
                "info = get_registry().info('scorer', 'acme-length'); print(info.source, info.cls.__name__)")
    assert found.split() == ["acme", "(acme-sift)", "LengthScorer"]
    assert "acme-length" in run(python, "-m", "ragsift.cli", "plugins", "--stage", "scorer")

    report = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", package / "tests")
    assert "2 passed" in report

    run(python, "-m", "ragsift.cli", "config", "validate", package / "acme.toml")
    out = tmp_path / "acme.jsonl"
    run(python, "-m", "ragsift.cli", "compress", "--config", package / "acme.toml", "--limit", "2", "-o", out, "-q")
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 and {r["compressor"] for r in records} == {"pipeline"}
    for record in records:
        scores = [s["score"] for s in record["sentences"]]
        kept = [s for s in record["sentences"] if s["kept"]]
        assert len(kept) == len(record["kept"]) == 3 and all(0.0 < x <= 1.0 for x in scores)
        # the scorer's own rule, min(1, 80 / length), and the three best of it kept
        assert all(s["score"] == pytest.approx(min(1.0, 80 / len(s["text"]))) for s in record["sentences"])
        assert min(s["score"] for s in kept) >= sorted(scores)[-3]
