"""The wheels scripts/gpu-check.sh installs on a GPU machine, downloaded beforehand on a CPU machine.

The GPU machine (issue 52, /work/.library/device/README.md) has Python 3.12 with torch,
transformers, peft and sentence-transformers but no network: what ragsift imports and that
machine lacks must travel with the working tree, as wheels in an ignored folder, and the whole
tree that travels (tracked files, untracked files git does not ignore, the wheel folder) must stay
under 64 MiB. Run from the repository root, in the project's virtual environment:

    python -m benchmarks.gpu_wheels            # download into .gpu-wheels/, then the size check
    python -m benchmarks.gpu_wheels --check    # the size check alone

Which wheels: ragsift's run-time requirements, and theirs, that the GPU image lacks
(:data:`GPU_IMAGE_PACKAGES`, read off the image on 2026-11-17), at the versions installed here (so
the GPU machine runs what the tests here run), and typing-extensions (:data:`CARRIED_ANYWAY`).
Left out on purpose (:data:`NOT_CARRIED`): spaCy, compiled and about 50 MB with its stack (it alone
would break the size limit; the GPU check gives sentences pre-split, and the suite's tests that
need it are reported as skipped there).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["CARRIED_ANYWAY", "GPU_IMAGE_PACKAGES", "NOT_CARRIED", "TREE_LIMIT", "WHEEL_DIR", "main", "missing_requirements",
           "travelling_bytes"]

ROOT = Path(__file__).resolve().parent.parent
WHEEL_DIR = ".gpu-wheels"
#: what the device tool copies at most (its README, "Limits")
TREE_LIMIT = 64 * 1024 * 1024
#: the GPU machine's Python (the wheels' tags)
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
#: not carried, whatever ragsift requires: spaCy's compiled stack is ~50 MB (over the tree limit);
#: everything under it is reached only through spaCy
NOT_CARRIED = frozenset({"spacy"})
#: carried although the image has them: pydantic imports typing_extensions.Sentinel (4.14 and later), and
#: nobody has read the image's version
CARRIED_ANYWAY = frozenset({"typing-extensions"})

#: Python packages of the GPU image 'cuda' (/work/.library/device/KINDS.md, read 2026-11-17)
_IMAGE_LIST = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pyre-extensions
pygments pyparsing pyproject-hooks pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
"""
GPU_IMAGE_PACKAGES = frozenset(_IMAGE_LIST.split())

#: the GPU machine's environment markers (requirements that apply there)
_MARKERS = {"python_version": PYTHON_VERSION, "python_full_version": f"{PYTHON_VERSION}.3", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def missing_requirements(root: str = "ragsift") -> dict[str, str]:
    """``{name: version}`` of ``root``'s run-time requirements, and theirs, that the GPU image lacks,
    at the versions installed in this environment (extras and :data:`NOT_CARRIED` left out)."""
    from packaging.requirements import Requirement

    found: dict[str, str] = {}
    todo = [root]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(_MARKERS):
                continue  # an extra's requirement, or one for another platform / Python
            name = _canonical(req.name)
            if name in found or name in NOT_CARRIED or (name in GPU_IMAGE_PACKAGES and name not in CARRIED_ANYWAY):
                continue
            found[name] = importlib.metadata.version(name)
            todo.append(name)
    return dict(sorted(found.items()))


def download(requirements: dict[str, str], dest: Path) -> None:
    """``pip download`` exactly ``requirements`` (no dependencies: the walk above chose them) as
    Python 3.12 manylinux x86-64 wheels into ``dest``; older wheels of the same names are removed
    first, since two versions of one package stop the install there."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    pins = [f"{name}=={version}" for name, version in requirements.items()]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                    PYTHON_VERSION, "--implementation", "cp", *platforms, "-d", str(dest), *pins], check=True)


def travelling_bytes(root: Path = ROOT, wheel_dir: str = WHEEL_DIR) -> tuple[int, int]:
    """``(tree, wheels)``: bytes of the files the device tool copies (tracked files and untracked
    files git does not ignore, as they are on disk now) and of the wheel folder."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            check=True, capture_output=True).stdout.decode().split("\0")
    tree = sum(p.stat().st_size for p in (root / name for name in listed if name) if p.is_file())
    wheels = sum(p.stat().st_size for p in (root / wheel_dir).glob("*.whl"))
    return tree, wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only measure the tree that travels (no download)")
    parser.add_argument("--dest", type=Path, default=ROOT / WHEEL_DIR, help=f"wheel folder (default {WHEEL_DIR}/)")
    args = parser.parse_args(argv)
    if not args.check:
        requirements = missing_requirements()
        print("wheels for the GPU machine:", ", ".join(f"{n}=={v}" for n, v in requirements.items()))
        download(requirements, args.dest)
    tree, wheels = travelling_bytes(ROOT, args.dest.name if args.dest.parent == ROOT else WHEEL_DIR)
    total = tree + wheels
    mib = 1024 * 1024
    print(f"tree that travels: {tree / mib:.1f} MiB of files + {wheels / mib:.1f} MiB of wheels = {total / mib:.1f} MiB "
          f"(limit {TREE_LIMIT / mib:.0f} MiB)")
    if total >= TREE_LIMIT:
        print("too large: the device tool would refuse it; remove untracked files or carry fewer wheels", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
