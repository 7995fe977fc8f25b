#!/usr/bin/env bash
# Check every CUDA path of ragsift on a GPU machine in one command (issue 52, docs/gpu.md):
#   bash scripts/gpu-check.sh OUT [--only CHECK ...]   on the GPU machine: results into OUT
#   bash scripts/gpu-check.sh --download-wheels        beforehand, on a CPU machine with the project's .venv
# The GPU machine has torch, transformers, peft and sentence-transformers but no network: the rest of what
# ragsift imports travels as wheels in .gpu-wheels/ (ignored by git; carry it), installed here into a
# folder of their own, not into the machine's Python. ragsift itself runs from the tree (PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--download-wheels" ]]; then
    exec .venv/bin/python -m benchmarks.gpu_wheels "${@:2}"
fi
out="${1:?usage: bash scripts/gpu-check.sh OUT [--only CHECK ...] | --download-wheels}"
shift
python="${PYTHON:-python3}"
site=/tmp/ragsift-gpu-site
wheels="${GPU_CHECK_WHEELS:-.gpu-wheels}"
if compgen -G "$wheels/*.whl" >/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "gpu-check: no wheels in $wheels/ (run 'bash scripts/gpu-check.sh --download-wheels' on a CPU machine" \
         "and carry .gpu-wheels); using the packages this Python has" >&2
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
exec "$python" -m benchmarks.gpu_check --device "${GPU_CHECK_DEVICE:-cuda}" --out "$out" "$@"
