"""Which optional dependencies (the extras of pyproject.toml) a plugin needs, checked when it is built.

The one table of that knowledge is :data:`EXTRA_MODULES`: an extra -> the top-level modules it
installs that ragsift imports. A plugin declares the extras it needs (``Plugin.extras``, or
``Plugin.required_extras()`` when its params decide, e.g. a tokenizer file needs none); the
registry checks them each time it builds a plugin (``ragsift config validate``, the start of a run,
``load_compressor``) with :func:`importlib.util.find_spec`, which imports nothing. A missing extra
is then one line naming it, not a ``ModuleNotFoundError`` deep inside a run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ragsift.errors import MissingDependencyError

__all__ = ["EXTRA_MODULES", "missing_modules", "install_command", "check_extras", "unchecked"]

#: extra -> the modules it installs that ragsift's plugins import (pyproject.toml says why each is there)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "models": ("torch", "transformers", "sentence_transformers", "peft"),
    "llama-cpp": ("llama_cpp",),
    "cuda": ("bitsandbytes",),
    "train": ("sklearn",),
}

_checking: ContextVar[bool] = ContextVar("ragsift_check_extras", default=True)


@contextmanager
def unchecked() -> Iterator[None]:
    """Build plugins without checking their extras, to show a config (``ragsift config show``), not
    to run it: a config is readable before its extras are installed."""
    token = _checking.set(False)
    try:
        yield
    finally:
        _checking.reset(token)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module blocked or broken (``sys.modules[name] = None``): not usable
        return False


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here ([] when it is installed)."""
    if extra not in EXTRA_MODULES:
        raise KeyError(f"unknown extra '{extra}'; known: {', '.join(EXTRA_MODULES)}")
    return [module for module in EXTRA_MODULES[extra] if not _installed(module)]


def install_command(extras: Iterable[str]) -> str:
    """The pip command that installs ``extras``, from the package and from a clone."""
    names = ",".join(extras)
    return f"pip install 'ragsift[{names}]' (in a clone: pip install '.[{names}]')"


def check_extras(plugin: Any, who: str) -> None:
    """Raise :class:`MissingDependencyError` naming each extra that ``plugin`` needs
    (``plugin.required_extras()``) and that is not installed; ``who`` names the plugin
    (``scorer 'dual-encoder'``). Nothing is checked inside :func:`unchecked`."""
    if not _checking.get():
        return
    required = getattr(plugin, "required_extras", None)
    missing = {extra: missing_modules(extra) for extra in (required() if callable(required) else ())}
    missing = {extra: modules for extra, modules in missing.items() if modules}
    if not missing:
        return
    which = " and ".join(f"the '{extra}' extra" for extra in missing)
    modules = ", ".join(module for modules in missing.values() for module in modules)
    raise MissingDependencyError(f"{who} needs {which} ({modules}: not installed): {install_command(missing)}.")
