"""ragsift's built-in labelers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_labelers(register: Register) -> None:
    from ragsift.labelers.exit_pairs import ExitPairsLabeler

    register("exit-pairs", ExitPairsLabeler)
