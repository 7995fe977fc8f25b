"""ragsift's built-in datasets, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_datasets(register: Register) -> None:
    pass
