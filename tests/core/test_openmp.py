"""OpenMP's wait policy (ragsift/openmp.py, issue 29): importing ragsift before torch makes torch's
OpenMP runtime start with PASSIVE waiting (threads sleep instead of spinning 300,000 iterations
per operator), a policy the user set is kept, and a runtime loaded before ragsift is reported.

Planted slow version these fail on: ``prefer_passive_wait()`` no longer called when ragsift is
imported (torch's libgomp then reports ``GOMP_SPINCOUNT = '300000'``: the default spinning that made
prefix-shared EXIT scoring cost ~3x the CPU per token on a shared machine)."""

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


def test_torch_imported_after_ragsift_waits_passively() -> None:
    out = _run("import ragsift, torch, os; torch.ones(4).sum(); print(os.environ['OMP_WAIT_POLICY'])",
               OMP_DISPLAY_ENV="VERBOSE")
    assert out.stdout.split()[-1] == "PASSIVE"
    assert _spin_count(out.stderr) == "0"  # libgomp itself read the policy


def test_the_default_spins_which_is_what_ragsift_changes() -> None:
    out = _run("import torch; torch.ones(4).sum()", OMP_DISPLAY_ENV="VERBOSE")
    assert _spin_count(out.stderr) != "0"


@pytest.mark.parametrize("policy", ["ACTIVE", "PASSIVE"])
def test_a_policy_the_user_set_is_kept(policy: str) -> None:
    out = _run("import ragsift, os; print(os.environ['OMP_WAIT_POLICY'])", OMP_WAIT_POLICY=policy)
    assert out.stdout.strip() == policy


def test_a_runtime_loaded_before_ragsift_is_reported() -> None:
    out = _run("import torch, ragsift.openmp as o; print(','.join(o.LOADED_BEFORE))")
    assert out.stdout.strip() == "torch"
    out = _run("import ragsift.openmp as o; import torch; print(repr(','.join(o.LOADED_BEFORE)))")
    assert out.stdout.strip() == "''"


def test_the_exit_benchmark_imports_ragsift_before_torch() -> None:
    """benchmarks/exit_scoring.py imports torch inside main(): ragsift must be imported at the top."""
    tree = ast.parse((ROOT / "benchmarks" / "exit_scoring.py").read_text())
    top = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    assert "ragsift" in top and "torch" not in top
