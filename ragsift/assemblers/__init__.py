"""ragsift's built-in assemblers, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_assemblers(register: Register) -> None:
    from ragsift.assemblers.original_order import OriginalOrderAssembler
    from ragsift.assemblers.rank_order import RankOrderAssembler

    register("original-order", OriginalOrderAssembler)
    register("rank-order", RankOrderAssembler)
