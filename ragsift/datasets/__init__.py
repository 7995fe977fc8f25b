"""ragsift's built-in datasets, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.datasets.loading import bundled_sample_path, detect_format, load_examples
from ragsift.hookspecs import Register, hookimpl

__all__ = ["bundled_sample_path", "detect_format", "load_examples", "register_datasets"]


@hookimpl
def register_datasets(register: Register) -> None:
    from ragsift.datasets.hotpotqa import HotpotQALoader

    register("hotpotqa", HotpotQALoader)
