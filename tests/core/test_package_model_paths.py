"""Issue 53 row 15: ``package:PKG.SUB/PATH`` is located without importing anything: neither
``PKG/__init__.py`` nor ``PKG/SUB/__init__.py`` runs, in ``resolve_model`` or ``config validate``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.errors import ConfigError
from ragsift.models import resolve_model

NAME = "ragsift_row15_pkg"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed package whose every ``__init__`` leaves a mark (and refuses to be imported)."""
    root = tmp_path / "site"
    marks = tmp_path / "marks"
    marks.mkdir()
    for folder in (root / NAME, root / NAME / "sub"):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text(
            f"open({str(marks / folder.name)!r}, 'w').close()\nraise RuntimeError('imported')\n")
    model = root / NAME / "sub" / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "bert"}))
    monkeypatch.syspath_prepend(str(root))
    yield marks
    for name in [m for m in sys.modules if m == NAME or m.startswith(NAME + ".")]:
        del sys.modules[name]


def test_a_dotted_package_path_is_found_without_running_its_code(package: Path) -> None:
    location = resolve_model(f"package:{NAME}.sub/model")
    assert location.kind == "folder" and Path(location.path).parts[-3:] == (NAME, "sub", "model")
    assert list(package.iterdir()) == [] and NAME not in sys.modules
    with pytest.raises(ConfigError, match="has no subpackage"):
        resolve_model(f"package:{NAME}.nowhere/model")
    with pytest.raises(ConfigError, match="not a Python package name"):
        resolve_model(f"package:{NAME}..sub/model")
    assert list(package.iterdir()) == []


def test_config_validate_imports_no_package(package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[compressor]\nname = "bm25"\n[compressor.scorer]\nname = "dual-encoder"\n'
                      f'model = "package:{NAME}.sub/model"\n')
    main(["config", "validate", str(config)])
    assert "imported" not in capsys.readouterr().err
    assert list(package.iterdir()) == [] and NAME not in sys.modules
