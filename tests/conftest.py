"""Test-wide settings: installed third-party plugins never affect the tests."""

from __future__ import annotations

import os

os.environ["RAGSIFT_PLUGINS"] = ""  # built-in plugins only; tests that need entry points opt in
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA
