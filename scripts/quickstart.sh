#!/usr/bin/env bash
# The main job: set up, then evaluate a few compressors on the bundled HotpotQA sample with offline models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ragsift evaluate --config configs/quickstart.toml --out runs/quickstart --resume "$@"
