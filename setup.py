"""Build hook: ragsift's shipped run configs (``configs/``) and small trained models (``models/``)
stay at the repository's root, where users and the docs name them, and go into the wheel as
package data under ``ragsift/_shipped/`` (found by :func:`ragsift.config_files.shipped_roots`).
Everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("configs", "models")  # folders of the repository's root copied into the package


class BuildPyWithShippedData(build_py):
    """``build_py`` that also copies :data:`SHIPPED` into ``ragsift/_shipped/`` of the build."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads them from the source tree
            return
        root = Path(__file__).resolve().parent
        for name in SHIPPED:
            if not (root / name).is_dir():
                raise SystemExit(f"setup.py: {root / name} is missing; the wheel ships it (build from a full checkout "
                                 "or an sdist).")
            self.copy_tree(str(root / name), str(Path(self.build_lib) / "ragsift" / "_shipped" / name))


setup(cmdclass={"build_py": BuildPyWithShippedData})
