#!/usr/bin/env bash
# Set up (including the loopback llama.cpp server used by the reader tests), lint (ruff), type-check (mypy), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
RAGSIFT_SERVER=1 bash scripts/setup.sh
. .venv/bin/activate
ruff check ragsift tests benchmarks
mypy
python -m pytest --durations=25 "$@"
