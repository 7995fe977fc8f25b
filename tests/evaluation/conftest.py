"""Makes the loopback server helpers in tests/ (``openai_fakes``, ``llamacpp_server``) importable:
pytest runs with ``--import-mode=importlib``, which does not put tests/ on ``sys.path``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

for _name in ("openai_fakes", "llamacpp_server"):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, Path(__file__).parents[1] / f"{_name}.py")
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)
