"""The light core install (issue 51): the base package runs none / oracle / random / BM25 compress
and evaluate without torch or transformers, and a plugin that needs an extra names it when it is
built, not as a ModuleNotFoundError deep in a run.

Fast tests run ragsift's command line in a subprocess where the model stack cannot be imported (a
meta-path finder refuses it, as if it were not installed). The slow tests build the wheel, install
it in a fresh virtual environment (not layered over this one: pip installs the base package's
dependencies there) and run the same commands from an empty folder; then they install the
``[offline]`` extra, with the model stack, and run the offline configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragsift.extras import EXTRA_MODULES, check_extras, install_command, missing_modules

REPO = Path(__file__).resolve().parents[1]
#: the model stack: what the base install must run without
BLOCKED = EXTRA_MODULES["models"] + ("gguf", "accelerate")

#: a ``sitecustomize`` that makes the model stack unimportable (``find_spec`` finds nothing, an
#: import fails) and writes, at exit, every module that was imported, for the test to read
BLOCKER = f"""
import atexit, json, os, sys

BLOCKED = {BLOCKED!r}


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
atexit.register(lambda: open(os.environ["IMPORTED_MODULES"], "w").write(json.dumps(sorted(sys.modules))))
"""


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(an empty working folder, the environment in which the model stack cannot be imported)."""
    root = tmp_path_factory.mktemp("light")
    (root / "site").mkdir()
    (root / "site" / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    (root / "work").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_PLUGINS", "RAGSIFT_TRACEBACK")}
    env.update(PYTHONPATH=os.pathsep.join([str(root / "site"), str(REPO)]), HF_HUB_OFFLINE="1",
               RAGSIFT_CACHE=str(root / "cache"), IMPORTED_MODULES=str(root / "imported.json"))
    return root / "work", env


def run_blocked(blocked: tuple[Path, dict[str, str]], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    work, env = blocked
    done = subprocess.run([sys.executable, "-m", "ragsift.cli", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert (done.returncode == 0) == ok, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    imported = set(json.loads(Path(env["IMPORTED_MODULES"]).read_text(encoding="utf-8")))
    assert "ragsift.registry" in imported  # the blocker's record is this command's
    assert not {m for m in imported if m.partition(".")[0] in BLOCKED}
    return done


def test_the_base_commands_run_without_the_model_stack(blocked):
    work, _ = blocked
    listed = run_blocked(blocked, "config", "list").stdout
    assert "bm25" in listed and "exit-offline" in listed
    # a config is shown before its extras are installed (it is checked when it is run or validated)
    assert 'name = "exit"' in run_blocked(blocked, "config", "show", "exit-offline").stdout
    run_blocked(blocked, "compress", "-c", "bm25", "--limit", "3", "-q", "-o", "bm25.jsonl")
    records = [json.loads(line) for line in (work / "bm25.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3 and all(r["compressed_text"] for r in records)
    for name in ("none", "oracle", "random"):
        out = run_blocked(blocked, "compress", "-c", name, "--limit", "2", "-q").stdout
        assert len(out.splitlines()) == 2, name
    run_blocked(blocked, "evaluate", "-c", "bm25", "--no-reader", "--limit", "3", "--out", "runs/bm25")
    summary = json.loads((work / "runs" / "bm25" / "summary.json").read_text(encoding="utf-8"))
    assert summary["compressors"]["bm25"]["n"] == 3
    manifest = json.loads((work / "runs" / "bm25" / "manifest.json").read_text(encoding="utf-8"))
    # the token counts say what they count: the shipped SmolLM2 tokenizer, by name and hash
    (tokens,) = [m for m in manifest["metrics"] if m["name"] == "tokens"]
    assert tokens["tokenizer"].endswith("SmolLM2-135M-Instruct.json")
    (described,) = manifest["models"]["tokenizers"]
    assert described["kind"] == "tokenizer" and "SmolLM2-135M-Instruct.json" in described["sha256"]
    (work / "runs" / "bm25" / "report.html").unlink()
    run_blocked(blocked, "report", "runs/bm25")
    assert (work / "runs" / "bm25" / "report.html").is_file()


@pytest.mark.parametrize(("args", "plugin"), [
    (("compress", "-c", "embedding", "--limit", "1"), "scorer 'dual-encoder'"),
    (("config", "validate", "exit"), "scorer 'causal-yes-no'"),
    (("evaluate", "-c", "embedding", "--no-reader", "--limit", "1", "--out", "runs/embedding"), "scorer 'dual-encoder'"),
])
def test_a_model_plugin_names_the_extra_it_needs_when_it_is_built(blocked, args, plugin):
    done = run_blocked(blocked, *args, ok=False)
    assert f"{plugin} needs the 'models' extra" in done.stderr and "pip install 'ragsift[models]'" in done.stderr
    assert "Traceback" not in done.stderr and "ModuleNotFoundError" not in done.stderr


def test_the_tokens_metric_of_a_reader_names_the_extra_of_its_tokenizer(blocked):
    """A reader's tokenizer (a GGUF's, a Hub id's) is read by transformers: the metric says so
    at the config check, naming the tokenizer and the way to count in another."""
    done = run_blocked(blocked, "config", "validate", "reader-qwen0.5b", ok=False)
    assert "metric 'tokens' needs the 'models' extra" in done.stderr
    assert "split:qwen2.5-coder-0.5b-instruct" in done.stderr and "[evaluation] tokenizer" in done.stderr


def test_the_extras_check_names_each_missing_extra_and_its_modules(monkeypatch):
    from ragsift.errors import MissingDependencyError

    class Needy:
        def required_extras(self) -> tuple[str, ...]:
            return ("models", "train")

    installed = {"torch", "transformers", "sentence_transformers", "peft"}
    monkeypatch.setattr("ragsift.extras._installed", lambda module: module in installed)
    assert missing_modules("models") == [] and missing_modules("train") == ["sklearn"]
    with pytest.raises(MissingDependencyError) as caught:
        check_extras(Needy(), "trainer 'acme'")
    assert str(caught.value) == ("trainer 'acme' needs the 'train' extra (sklearn: not installed): "
                                 f"{install_command(['train'])}.")
    installed.add("sklearn")
    check_extras(Needy(), "trainer 'acme'")  # all there: no error
    with pytest.raises(KeyError, match="unknown extra 'model'"):
        missing_modules("model")


def test_every_declared_extra_is_an_extra_of_the_package():
    import tomllib

    from ragsift.registry import get_registry

    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    assert set(EXTRA_MODULES) <= extras
    declared = {e for infos in get_registry().all().values() for info in infos for e in getattr(info.cls, "extras", ())}
    assert declared and declared <= set(EXTRA_MODULES)
    listed = {p["name"]: p["extras"] for p in get_registry().describe(["scorer"])["scorer"]}  # ragsift plugins --json
    assert listed["dual-encoder"] == ["models"] and listed["bm25"] == []


def _which_extras(stage: str, spec: dict[str, object]) -> tuple[str, ...]:
    from ragsift.registry import build_plugin

    return build_plugin(stage, spec).required_extras()


def test_which_plugins_need_the_model_stack():
    from ragsift.models import DEFAULT_TOKENIZER, OFFLINE_MINILM, OFFLINE_SMOLLM2

    assert _which_extras("scorer", {"name": "bm25"}) == ()
    assert _which_extras("scorer", {"name": "dual-encoder", "model": OFFLINE_MINILM}) == ("models",)
    assert _which_extras("scorer", {"name": "causal-yes-no", "model": OFFLINE_SMOLLM2}) == ("models",)
    assert _which_extras("scorer", {"name": "causal-yes-no", "model": OFFLINE_SMOLLM2, "backend": "llama-cpp",
                                     "adapter": ""}) == ("llama-cpp",)
    assert _which_extras("metric", {"name": "tokens"}) == ()  # the shipped tokenizer file
    assert _which_extras("metric", {"name": "tokens", "tokenizer": DEFAULT_TOKENIZER}) == ()
    assert _which_extras("metric", {"name": "tokens", "tokenizer": OFFLINE_SMOLLM2}) == ("models",)
    assert _which_extras("selector", {"name": "token-budget"}) == ()  # whitespace words
    assert _which_extras("selector", {"name": "token-budget", "tokenizer": OFFLINE_SMOLLM2}) == ("models",)
    assert _which_extras("reader", {"name": "llama-cpp", "model": OFFLINE_SMOLLM2}) == ("llama-cpp",)


# --- the wheel in a fresh virtual environment (slow) -------------------------------------------


def _pip(python: Path, *args: str, timeout: float = 900) -> None:
    """``pip install ARGS`` into the environment of ``python``; a failure (no network, no such
    version) fails the test with pip's own words: never a skip."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                           "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"pip install {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, str]]:
    """(the wheel, the fresh environment's bin folder, an empty working folder, the environment
    variables): the wheel built from a copy of this checkout and installed without extras."""
    from test_wheel_install import build_wheel

    root = tmp_path_factory.mktemp("light-wheel")
    wheel = build_wheel(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    _pip(python, str(wheel))
    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAGSIFT_PLUGINS", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", RAGSIFT_CACHE=str(root / "cache"))
    return wheel, venv / "bin", work, env


def run_light(light, args: list[str], *, ok: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    _, _, work, env = light
    done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=900, input=stdin)
    assert (done.returncode == 0) == ok, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


#: run inside the fresh environment: a BM25 compression imports none of the model stack
IN_PROCESS = """
import importlib.util, json, sys
import ragsift

assert all(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "sentence_transformers"))
compressor = ragsift.load_compressor("bm25")
example = ragsift.make_example("Which city was Marie Curie born in?", [
    ("Marie Curie", "Marie Curie was a physicist. She was born in Warsaw."),
    ("Paris", "Paris is a city in France. It is large."),
])
stack = sorted(m for m in sys.modules if m.partition(".")[0] in ("torch", "transformers", "sentence_transformers", "peft"))
print(json.dumps({"text": compressor.compress(example).text, "model_stack": stack}))
"""


@pytest.mark.slow
@pytest.mark.integration
def test_the_wheel_installs_light_and_runs_bm25_from_an_empty_folder(light):
    wheel, bin_dir, work, _ = light
    names = zipfile.ZipFile(wheel).namelist()
    assert "ragsift-0.1.0.dist-info/licenses/LICENSE" in names
    assert "ragsift/data/tokenizers/SmolLM2-135M-Instruct.json" in names
    python = str(bin_dir / "python")
    gone = run_light(light, [python, "-c", "import torch"], ok=False)
    assert "No module named 'torch'" in gone.stderr
    run_light(light, [python, "-c", "import transformers"], ok=False)
    out = json.loads(run_light(light, [python, "-"], stdin=IN_PROCESS).stdout)
    assert "She was born in Warsaw." in out["text"] and out["model_stack"] == []

    ragsift = str(bin_dir / "ragsift")
    assert "bm25" in run_light(light, [ragsift, "config", "list"]).stdout
    run_light(light, [ragsift, "compress", "-c", "bm25", "--limit", "5", "-q", "-o", "bm25.jsonl"])
    assert len((work / "bm25.jsonl").read_text(encoding="utf-8").splitlines()) == 5
    run_light(light, [ragsift, "evaluate", "-c", "bm25", "--no-reader", "--limit", "5", "--out", "runs/bm25"])
    summary = json.loads((work / "runs" / "bm25" / "summary.json").read_text(encoding="utf-8"))
    assert summary["compressors"]["bm25"]["n"] == 5
    (work / "runs" / "bm25" / "report.html").unlink()
    run_light(light, [ragsift, "report", "runs/bm25"])
    assert (work / "runs" / "bm25" / "report.html").is_file()
    # a model plugin in the light install: one line naming the extra, at once
    refused = run_light(light, [ragsift, "compress", "-c", "embedding", "--limit", "1"], ok=False)
    assert "needs the 'models' extra" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_the_offline_extra_brings_the_model_stack_and_runs_the_offline_configs(light):
    import torch

    wheel, bin_dir, work, _ = light
    python = bin_dir / "python"
    # torch first, the build this environment runs (CPU where there is no CUDA), as scripts/setup.sh
    # installs it: found where setup found it (pip's cache, its configured indexes), never a multi-GB CUDA build
    _pip(python, f"torch=={torch.__version__}")
    _pip(python, f"{wheel}[offline]")
    assert run_light(light, [str(python), "-c", "import torch, transformers, sentence_transformers; print('ok')"]).stdout == "ok\n"
    ragsift = str(bin_dir / "ragsift")
    run_light(light, [ragsift, "compress", "-c", "embedding", "--limit", "2", "-q", "-o", "embedding.jsonl"])
    records = [json.loads(line) for line in (work / "embedding.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 and all(r["compressed_text"] for r in records)
    run_light(light, [ragsift, "compress", "-c", "fusion-trained", "--limit", "2", "-q", "-o", "fusion.jsonl"])
    assert len((work / "fusion.jsonl").read_text(encoding="utf-8").splitlines()) == 2
