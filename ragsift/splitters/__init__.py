"""ragsift's built-in splitters, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_splitters(register: Register) -> None:
    pass
