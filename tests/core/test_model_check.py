"""Issue 24, case 10: ``config validate`` of a Hub id that is not in the local cache, with the Hub
unreachable and ``HF_HUB_OFFLINE`` unset, says it cannot be checked offline (instead of OK, then
minutes of retries in ``compress``); it tries one connection, not the Hub client's retries."""

from __future__ import annotations

import socket
import time

import pytest

from ragsift.cli import main

CONFIG = """
[compressor]
name = "embedding"
[compressor.scorer]
model = "ragsift-tests/no-such-model-in-any-cache"
"""


def test_an_uncached_hub_id_with_the_hub_unreachable_is_not_ok(tmp_path, monkeypatch, capsys):
    from ragsift import model_check

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    model_check._hub_reachable.cache_clear()
    tries = []

    def unreachable(address, timeout=None, *args, **kwargs):
        tries.append((address, timeout))
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    config = tmp_path / "hub.toml"
    config.write_text(CONFIG)
    start = time.perf_counter()
    assert main(["config", "validate", str(config), str(config)]) == 2
    assert time.perf_counter() - start < 30
    err = capsys.readouterr().err
    assert "ragsift-tests/no-such-model-in-any-cache" in err and "cannot be checked offline" in err, err
    assert "HF_HUB_OFFLINE=1" in err
    assert len(tries) == 1 and tries[0][0][0] == "huggingface.co" and tries[0][1] <= 5  # one try, short
    model_check._hub_reachable.cache_clear()


def test_a_reachable_hub_leaves_an_uncached_id_to_be_fetched(tmp_path, monkeypatch, capsys):
    from ragsift import model_check

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    model_check._hub_reachable.cache_clear()

    class Open:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: Open())
    config = tmp_path / "hub.toml"
    config.write_text(CONFIG)
    assert main(["config", "validate", str(config)]) == 0
    assert "OK" in capsys.readouterr().out
    model_check._hub_reachable.cache_clear()


@pytest.mark.parametrize("offline", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_offline_by_setting_needs_no_connection(tmp_path, monkeypatch, capsys, offline):
    monkeypatch.setenv(offline, "1")
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("no connection when offline"))
    config = tmp_path / "hub.toml"
    config.write_text(CONFIG)
    assert main(["config", "validate", str(config)]) == 2
    assert "the Hub is offline" in capsys.readouterr().err
