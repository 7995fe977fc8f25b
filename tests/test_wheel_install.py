"""``pip install ragsift`` works outside the clone (issue 26): the wheel built from this checkout,
installed into a fresh virtual environment in an empty folder with no PYTHONPATH, runs the
README's library, CLI, ``serve`` and LangChain examples as written there. The shipped configs and
trained models come from the package (``ragsift/_shipped``), not from this repository.

The fresh environment is layered over this one (its site-packages on the path, as
tests/test_plugin_docs.py does), so nothing is downloaded; the wheel's ragsift comes first."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: what the build needs (setup.py copies configs/, models/ and the development pool into the package)
SOURCE = ("ragsift", "configs", "models", "data/training/hotpotqa-dev-pool.json", "data/training/README.md",
          "pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE")
#: the README's CLI lines ("Using it", "Training scorers") run in the fresh environment, verbatim
CLI_LINES = (
    "ragsift plugins",
    "ragsift config show exit-offline",
    "ragsift compress --config configs/bm25.toml --output bm25.jsonl",
    "ragsift evaluate -c fusion-trained --no-reader --out runs/fusion",
    "ragsift evaluate -c quickstart --data hotpotqa-eval,2wiki-eval,musique-eval --compressors none,oracle,bm25 "
    "--no-reader --limit 5 --out runs/suite",
)


def python_block(after: str) -> str:
    """The first ```python block of the README after the line ``after``."""
    return re.search(r"```python\n(.*?)```", README.split(after, 1)[1], flags=re.S).group(1)


def expected_lines(code: str) -> list[str]:
    return [line.removeprefix("# -> ") for line in code.splitlines() if line.startswith("# -> ")]


def test_the_readme_holds_the_examples_the_wheel_test_runs():
    for line in CLI_LINES:
        assert re.search(rf"^{re.escape(line)}(\s|$)", README, flags=re.M), line
    assert "ragsift serve --config bm25" in README
    assert "load_compressor" in python_block("From Python:") and expected_lines(python_block("From Python:"))
    assert "RagsiftDocumentCompressor" in python_block("**LangChain**")


def test_the_licence_is_the_apache_text_the_metadata_names_and_the_readme_installs_truly():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert len(text) > 11_000  # the full text, not a pointer to it
    assert not re.search(r"^pip install ragsift\b", README, flags=re.M)  # ragsift is on no package index
    extras = set(project["optional-dependencies"])
    section = README.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    named = {name for cell in re.findall(r"^\| ([^|]+) \|", section, flags=re.M) for name in re.findall(r"`([^`]+)`", cell)}
    assert extras == named, f"extras without a row: {extras - named}; rows without an extra: {named - extras}"


def build_wheel(root: Path) -> Path:
    """The wheel of a copy of this checkout's :data:`SOURCE`, built under ``root`` (offline)."""
    src = root / "src"
    for name in SOURCE:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "cache", "checkpoint"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    dist = root / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(dist), str(src)], check=True, capture_output=True, timeout=600)
    (wheel,) = dist.glob("ragsift-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(the fresh environment's bin folder, an empty working folder, the environment variables)."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(root)

    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    child_site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                                capture_output=True, text=True).stdout.strip()
    # this environment's packages after the new one's, as plain path entries: not through their .pth files,
    # which would install this checkout's editable-install finder (ragsift from the source tree)
    Path(child_site, "project-environment.pth").write_text(
        f"import sys; sys.path.extend({site.getsitepackages()!r})\n", encoding="utf-8")
    # --ignore-installed: this environment's (editable) ragsift of the same version is visible; install beside it
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--ignore-installed", "-q", str(wheel)], check=True, capture_output=True, timeout=600)
    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAGSIFT_PLUGINS")}
    env.update(HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", RAGSIFT_CACHE=str(root / "cache"))
    return venv / "bin", work, env


def run(installed: tuple[Path, Path, dict[str, str]], args: list[str], stdin: str | None = None) -> str:
    _, work, env = installed
    done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=600, input=stdin)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.integration
def test_the_installed_package_is_the_wheel_with_its_shipped_data(installed):
    bin_dir, _, _ = installed
    out = run(installed, [str(bin_dir / "python"), "-c", "import ragsift, ragsift.config_files as c; "
                          "print(ragsift.__file__); print(*c.shipped_roots())"]).splitlines()
    package = Path(out[0]).parent
    assert bin_dir.parent in package.parents and REPO not in package.parents
    assert out[1:] == [str(package / "_shipped")]  # the package's copy only: no source tree is reachable
    (licence,) = package.parent.glob("ragsift-*.dist-info/licenses/LICENSE")
    assert licence.read_text(encoding="utf-8") == (REPO / "LICENSE").read_text(encoding="utf-8")
    for name in ("configs/bm25.toml", "configs/train/fusion.toml", "models/fusion-trained/fusion.json",
                 "models/ecorag-trained/adapter/adapter_model.safetensors", "models/exit-trained/readout.safetensors",
                 "models/ecorag-judge/readout.safetensors"):
        assert (package / "_shipped" / name).is_file(), name


#: checks every shipped run config (configs/*.toml, configs/tuned/*.toml) from the installed package, in
#: an empty folder: its plugins build, its includes and local model files resolve (a Hub id offline aside)
VALIDATE_SHIPPED = """
import json, ragsift.config_files as c
from ragsift.config import load_config
from ragsift.evaluation.run.config_check import config_problems
(root,) = c.shipped_roots()
paths = sorted([*(root / "configs").glob("*.toml"), *(root / "configs" / "tuned").glob("*.toml")])
print(json.dumps({p.relative_to(root / "configs").as_posix(): config_problems(load_config(p)) for p in paths}))
"""


@pytest.mark.slow
@pytest.mark.integration
def test_the_wheel_ships_no_development_material_and_every_shipped_config_resolves_from_it(installed):
    from test_shipped_configs import HUB_MODELS

    bin_dir, _, _ = installed
    package = Path(run(installed, [str(bin_dir / "python"), "-c", "import ragsift; print(ragsift.__file__)"]).strip()).parent
    (record,) = package.parent.glob("ragsift-*.dist-info/RECORD")
    files = [line.split(",", 1)[0] for line in record.read_text(encoding="utf-8").splitlines()]
    shipped = [f.removeprefix("ragsift/_shipped/") for f in files if f.startswith("ragsift/_shipped/")]
    assert "configs/quickstart.toml" in shipped and "configs/tuned/bridge-order.toml" in shipped
    assert "models/exit-readout-qwen1.5b-160/readout.safetensors" in shipped
    # the tuned configs' [dataset] (the development pool they were tuned on) and its attribution
    assert {"data/training/hotpotqa-dev-pool.json", "data/training/README.md"} <= set(shipped)
    assert not [f for f in shipped if f.startswith("data/") and "hotpotqa-dev-pool" not in f and "README" not in f]
    for left_out in ("configs/dev/", "configs/tune/", "configs/train/bridge-documents-dense.toml",
                     "models/exit-readout-qwen0.5b/", "models/exit-readout-qwen0.5b-160/"):
        assert not [f for f in shipped if f.startswith(left_out)], left_out
    problems = json.loads(run(installed, [str(bin_dir / "python"), "-c", VALIDATE_SHIPPED]))
    assert len(problems) == len([f for f in shipped if re.fullmatch(r"configs/(tuned/)?[^/]+\.toml", f)]) > 40
    for name, found in problems.items():
        hub = [p for p in found if "a Hugging Face Hub id" in p and "the Hub is offline" in p]
        assert [p for p in found if p not in hub] == [], name
        assert not hub or name in HUB_MODELS, (name, hub)


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_library_example_runs_in_the_fresh_environment(installed):
    code = python_block("From Python:")
    assert run(installed, [str(installed[0] / "python"), "-"], stdin=code).splitlines() == expected_lines(code)


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_langchain_example_runs_in_the_fresh_environment(installed):
    code = python_block("**LangChain**")
    assert run(installed, [str(installed[0] / "python"), "-"], stdin=code).splitlines() == expected_lines(code)


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_cli_examples_run_in_the_fresh_environment(installed):
    _, work, _ = installed
    assert "learned-fusion" in run(installed, CLI_LINES[0].split())
    shown = run(installed, CLI_LINES[1].split())
    assert 'name = "exit"' in shown and "SmolLM2" in shown
    run(installed, CLI_LINES[2].split())
    records = [json.loads(line) for line in (work / "bm25.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 100 and {r["compressor"] for r in records} == {"bm25"}
    # the README's line on 3 questions (the shipped models/fusion-trained, found from the package)
    run(installed, [*CLI_LINES[3].split(), "--limit", "3"])
    metrics = json.loads((work / "runs" / "fusion" / "summary.json").read_text(encoding="utf-8"))
    assert {"bm25-top2", "fusion-trained"} <= set(json.dumps(metrics).replace('"', " ").split())
    # the evaluation suite by name, from the data shipped in the package: a table per dataset and a pooled one
    run(installed, CLI_LINES[4].split())
    suite = json.loads((work / "runs" / "suite" / "summary.json").read_text(encoding="utf-8"))
    assert suite["examples"] == 15 and suite["pooling"]["datasets"] == {"hotpotqa-eval": 5, "2wiki-eval": 5,
                                                                         "musique-eval": 5}


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_serve_example_answers_in_the_fresh_environment(installed):
    bin_dir, work, env = installed
    body = json.loads(re.search(r"-d '(\{.*?\})'", README, flags=re.S).group(1))
    server = subprocess.Popen([str(bin_dir / "ragsift"), "serve", "--config", "bm25", "--port", "0"], cwd=work, env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline, url = time.monotonic() + 300, None
        while url is None and time.monotonic() < deadline:
            line = server.stderr.readline()  # type: ignore[union-attr]
            assert line or server.poll() is None, "ragsift serve exited before it was ready"
            found = re.search(r"ready on (http://\S+)", line)
            url = found.group(1) if found else None
        assert url, "ragsift serve was not ready within 300 s"
        request = urllib.request.Request(f"{url}/compress", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            result = json.loads(answer.read())
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert result["compressor"] == "bm25" and len(result["results"]) == 1
    assert "Shakespeare" in result["results"][0]["compressed_text"]
