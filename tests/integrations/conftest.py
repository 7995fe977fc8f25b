"""Fixtures of the framework adapter tests: the bundled sample's first examples, the records that
``ragsift compress`` writes for them, and what each adapter is built from."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no usage reports from test runs

import pytest  # noqa: E402
from adapter_checks import CONFIGS, N_EXAMPLES  # noqa: E402

import ragsift  # noqa: E402
from ragsift.cli import main  # noqa: E402
from ragsift.config import load_config  # noqa: E402
from ragsift.types import Example  # noqa: E402


@pytest.fixture(scope="session")
def sample_examples() -> list[Example]:
    return list(load_config(CONFIGS["bm25"]).data(None, None).load(N_EXAMPLES))


@pytest.fixture(scope="session")
def cli_records(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[dict[str, Any]]]:
    """``ragsift compress --config configs/NAME.toml --limit 3`` (bundled sample): its records, run once per config."""
    done: dict[str, list[dict[str, Any]]] = {}

    def records(name: str) -> list[dict[str, Any]]:
        if name not in done:
            out = tmp_path_factory.mktemp("cli") / f"{name}.jsonl"
            assert main(["compress", "--config", str(CONFIGS[name]), "--limit", str(N_EXAMPLES), "-o", str(out), "--quiet"]) == 0
            done[name] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            assert len(done[name]) == N_EXAMPLES
        return done[name]

    return records


@pytest.fixture(scope="session")
def compressor_for() -> Callable[[str], Any]:
    """What an adapter is built from in the end-to-end tests: the config path for ``bm25`` (cheap
    to build), one shared compressor built from the config file for ``embedding`` (its model loads once)."""
    shared: dict[str, Any] = {}

    def compressor(name: str) -> Any:
        if name == "bm25":
            return str(CONFIGS["bm25"])
        if name not in shared:
            shared[name] = ragsift.load_compressor(str(CONFIGS[name]))
        return shared[name]

    return compressor
