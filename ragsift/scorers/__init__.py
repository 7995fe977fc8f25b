"""ragsift's built-in scorers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_scorers(register: Register) -> None:
    pass
