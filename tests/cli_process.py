"""Running the real ``ragsift`` command line in a subprocess, optionally without root's power to
ignore file permissions (so that a read-only folder is read-only even when the tests run as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["REPO", "ragsift", "read_only_folder", "obey_permissions"]

REPO = Path(__file__).resolve().parents[1]
#: the capabilities that let root write where file permissions forbid it
_OVERRIDES = "-dac_override,-dac_read_search"


def obey_permissions() -> list[str]:
    """A command prefix under which file permissions hold: empty for an ordinary user; for root,
    ``setpriv`` dropping the two capabilities that override them (pytest skips when missing)."""
    import pytest

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): cannot make a folder read-only for root")
    return [setpriv, f"--inh-caps={_OVERRIDES}", f"--bounding-set={_OVERRIDES}"]


def ragsift(*args: str | Path, prefix: list[str] | None = None, timeout: float = 300,
            env: dict[str, str] | None = None, module: str = "ragsift.cli") -> subprocess.CompletedProcess[str]:
    """``python -m ragsift.cli ARGS`` with this checkout first on the path (after ``prefix``);
    ``module="broken_plugins"`` runs the same command line with the test's broken plugins."""
    path = [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), **(env or {})}
    full_env.pop("RAGSIFT_TRACEBACK", None)
    return subprocess.run([*(prefix or []), sys.executable, "-m", module, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO)


@contextmanager
def read_only_folder(parent: Path) -> Iterator[tuple[Path, list[str]]]:
    """(a folder under ``parent`` that nobody may write into, the command prefix under which
    that holds even for root: see :func:`obey_permissions`)."""
    prefix = obey_permissions()
    folder = parent / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        yield folder, prefix
    finally:
        folder.chmod(0o755)
