"""OpenMP's wait policy (ragsift/openmp.py, issue 29): the ``ragsift`` command and the benchmarks, which
own their process, make torch's OpenMP runtime start with PASSIVE waiting (threads sleep instead of
spinning 300,000 iterations per operator), a policy the user set is kept, and a runtime loaded before
is reported. ``import ragsift`` changes no environment variable (issue 51: a library does not change
its host process on import).

Planted slow version these fail on: ``prefer_passive_wait()`` no longer called by the CLI (torch's
libgomp then reports ``GOMP_SPINCOUNT = '300000'``: the default spinning that made prefix-shared EXIT
scoring cost ~3x the CPU per token on a shared machine)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    return subprocess.run([sys.executable, "-c", code], env={**clean, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=120, check=True)


def _spin_count(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "GOMP_SPINCOUNT" in line]
    assert lines, stderr[-2000:]
    return lines[0].split("=", 1)[1].strip().strip("'")


#: the CLI's entry point, then torch (as 'ragsift evaluate' loads it, after main() has started)
CLI_THEN_TORCH = ("import os, ragsift.cli as c; c.main(['plugins', '--stage', 'assembler']); import torch; "
                  "torch.ones(4).sum(); print(os.environ['OMP_WAIT_POLICY'])")


def test_importing_ragsift_changes_no_environment_variable() -> None:
    out = _run("import os, json; before = dict(os.environ); import ragsift, ragsift.cli, ragsift.config; "
               "print(os.environ.get('OMP_WAIT_POLICY')); print(json.dumps(sorted(set(os.environ.items()) ^ "
               "set(before.items()))))")
    policy, changed = out.stdout.splitlines()
    assert policy == "None" and changed == "[]"


def test_the_cli_makes_torch_wait_passively() -> None:
    out = _run(CLI_THEN_TORCH, OMP_DISPLAY_ENV="VERBOSE")
    assert out.stdout.split()[-1] == "PASSIVE"
    assert _spin_count(out.stderr) == "0"  # libgomp itself read the policy


def test_the_default_spins_which_is_what_ragsift_changes() -> None:
    out = _run("import torch; torch.ones(4).sum()", OMP_DISPLAY_ENV="VERBOSE")
    assert _spin_count(out.stderr) != "0"


@pytest.mark.parametrize("policy", ["ACTIVE", "PASSIVE"])
def test_a_policy_the_user_set_is_kept(policy: str) -> None:
    out = _run(CLI_THEN_TORCH, OMP_WAIT_POLICY=policy)
    assert out.stdout.split()[-1] == policy


def test_a_runtime_loaded_before_the_policy_is_set_is_reported() -> None:
    out = _run("import torch, ragsift.openmp as o; print(','.join(o.prefer_passive_wait())); print(','.join(o.LOADED_BEFORE))")
    assert out.stdout.split() == ["torch", "torch"]
    out = _run("import ragsift.openmp as o; o.prefer_passive_wait(); import torch; print(repr(','.join(o.LOADED_BEFORE)))")
    assert out.stdout.strip() == "''"


@pytest.mark.parametrize("script", ["exit_scoring.py", "yes_no_engines.py"])
def test_the_benchmarks_set_the_policy_before_torch_loads(script: str) -> None:
    """The benchmarks import torch inside their functions, so importing one loads no torch; the policy is set
    at the top of the module or in ``main`` (exit_scoring.py: unless ``--openmp-default``)."""
    path = ROOT / "benchmarks" / script
    out = _run(f"import sys, importlib.util; sys.path.insert(0, {str(path.parent)!r}); "
               f"spec = importlib.util.spec_from_file_location('b', {str(path)!r}); "
               "spec.loader.exec_module(importlib.util.module_from_spec(spec)); print('torch' in sys.modules)")
    assert out.stdout.split()[-1] == "False"
    tree = ast.parse(path.read_text())
    mains = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"]
    scopes = [node for node in tree.body if isinstance(node, ast.Expr)] + mains
    calls = {node.func.id for scope in scopes for node in ast.walk(scope)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "prefer_passive_wait" in calls
