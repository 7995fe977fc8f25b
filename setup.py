"""Build hook: ragsift's shipped run configs (``configs/``), small trained models (``models/``) and
the development pool its tuned configs were tuned on stay at the repository's root, where users and
the docs name them, and go into the wheel as package data under ``ragsift/_shipped/`` (found by
:func:`ragsift.config_files.shipped_roots`), less the development material of :data:`NOT_SHIPPED`.
Everything else is declared in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: folders and files of the repository's root copied into the package: the tuned configs' [dataset]
#: is the development pool they were tuned on (HotpotQA, CC BY-SA 4.0: its README is the attribution)
SHIPPED = ("configs", "models", "data/training/hotpotqa-dev-pool.json", "data/training/README.md")
#: development material that stays in the repository (and the sdist) but not in the wheel: the
#: development and tuning configs (no shipped config includes them), a training recipe its own
#: description calls not shipped, and the readouts no shipped config reads (configs/dev/ compared them)
NOT_SHIPPED = (
    "configs/dev",
    "configs/tune",
    "configs/train/bridge-documents-dense.toml",
    "models/exit-readout-qwen0.5b",
    "models/exit-readout-qwen0.5b-160",
)


class BuildPyWithShippedData(build_py):
    """``build_py`` that also copies :data:`SHIPPED` into ``ragsift/_shipped/`` of the build."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads them from the source tree
            return
        root = Path(__file__).resolve().parent
        left_out = {root / path for path in NOT_SHIPPED}

        def ignore(folder: str, names: list[str]) -> set[str]:
            return {name for name in names if Path(folder, name) in left_out}

        for name in SHIPPED:
            if not (root / name).exists():
                raise SystemExit(f"setup.py: {root / name} is missing; the wheel ships it (build from a full checkout "
                                 "or an sdist).")
            target = Path(self.build_lib) / "ragsift" / "_shipped" / name
            if target.is_dir():  # a build folder left by an earlier build may hold what is no longer shipped
                shutil.rmtree(target)
            if (root / name).is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / name, target)
            else:
                shutil.copytree(root / name, target, ignore=ignore)


setup(cmdclass={"build_py": BuildPyWithShippedData})
