"""ragsift's built-in selectors, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_selectors(register: Register) -> None:
    pass
