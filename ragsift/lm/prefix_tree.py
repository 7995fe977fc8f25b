"""The evaluation order of prompts on one KV-cache sequence that is cut back and extended: a
depth-first walk of their prefix tree (pure functions of token ids, no model).

Prompts sorted by their ids (lexicographically) visit the prefix tree depth first: each prompt
shares with the one before it the longest prefix that any earlier prompt shares with it, so
cutting the cache back to that shared prefix and evaluating the rest runs every node of the tree
exactly once (the sum of ``len(p) - shared`` over the sorted prompts is the number of distinct
non-empty prefixes, :func:`tree_tokens`). Identical prompts run once. With ``align = a`` every
evaluation starts at a multiple of ``a`` (up to ``a - 1`` shared ids run again), so that a model
whose kernels take rows in groups of ``a`` groups every row as it does for the whole prompt
alone (llama.cpp's repacked CPU weights: groups of 4). Used by the llama.cpp
Yes/No engine (:mod:`ragsift.lm.llamacpp_engine`); written up in docs/exit.md ("The llama.cpp
engine").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.lm.layouts import common_prefix_length

__all__ = ["TreeStep", "tree_plan", "tree_tokens"]


@dataclass(frozen=True)
class TreeStep:
    """Prompt ``index``: keep the first ``keep`` cached ids, evaluate ``ids[keep:]`` (nothing when
    ``keep == len(ids)``: the prompt equals the one before it, whose next-token logits still stand)."""

    index: int
    keep: int


def tree_plan(id_lists: Sequence[Sequence[int]], cached: Sequence[int] = (), align: int = 1) -> list[TreeStep]:
    """One step per prompt, in the depth-first order of the prefix tree; ``cached`` is what the
    cache holds before the first step (its shared prefix with the first prompt is reused, but
    the first prompt always evaluates at least its last id, since the cache holds no logits);
    every ``keep`` below a prompt's length is a multiple of ``align``."""
    if any(len(ids) == 0 for ids in id_lists):
        raise ValueError("tree_plan needs prompts of at least one token each")
    if align < 1:
        raise ValueError(f"align must be at least 1; got {align}")
    order = sorted(range(len(id_lists)), key=lambda i: tuple(id_lists[i]))
    steps: list[TreeStep] = []
    before: Sequence[int] = cached
    for position, i in enumerate(order):
        ids = id_lists[i]
        keep = common_prefix_length([before, ids])
        if position == 0:  # the cache holds key/value states, not the logits after its last id
            keep = min(keep, len(ids) - 1)
        if keep < len(ids):
            keep -= keep % align
        steps.append(TreeStep(i, keep))
        before = ids
    return steps


def tree_tokens(id_lists: Sequence[Sequence[int]]) -> int:
    """The distinct non-empty prefixes of the prompts: the tokens of their prefix tree, the fewest
    any evaluation can run (every prefix's key/value states are needed once)."""
    ordered = sorted(tuple(ids) for ids in id_lists)
    total = 0
    before: tuple[int, ...] = ()
    for ids in ordered:
        total += len(ids) - common_prefix_length([before, ids])
        before = ids
    return total
