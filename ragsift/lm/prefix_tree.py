"""The evaluation order of prompts on one KV-cache sequence that is cut back and extended: a
depth-first walk of their prefix tree (pure functions of token ids, no model).

Prompts sorted by their ids (lexicographically) visit the prefix tree depth first: each prompt
shares with the one before it the longest prefix that any earlier prompt shares with it, so
cutting the cache back to that shared prefix and evaluating the rest runs every node of the tree
exactly once (the sum of ``len(p) - shared`` over the sorted prompts is the number of distinct
non-empty prefixes, :func:`tree_tokens`). Identical prompts run once. Two rules make the rows
of a prompt run in the same kinds of batches as when the prompt runs alone, for engines whose
kernels round differently by batch shape (llama.cpp's CPU kernels: docs/exit.md): with
``align = a`` every evaluation starts at a multiple of ``a``, and with ``min_run = m`` it runs at
least ``m`` ids (or the whole prompt), re-running shared ids where needed; :func:`eval_chunks`
cuts one evaluation into batches under the same rules. Used by the llama.cpp
Yes/No engine (:mod:`ragsift.lm.llamacpp_engine`); written up in docs/exit.md ("The llama.cpp
engine").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.lm.layouts import common_prefix_length

__all__ = ["TreeStep", "TreePlan", "tree_plan", "tree_tokens", "eval_chunks"]


@dataclass(frozen=True)
class TreeStep:
    """Prompt ``index``: keep the first ``keep`` cached ids, evaluate ``ids[keep:]`` (nothing when
    ``keep == len(ids)``: the prompt equals the one before it, whose next-token logits still stand)."""

    index: int
    keep: int


@dataclass(frozen=True)
class TreePlan:
    """The steps, and the ids whose cached rows a later evaluation may keep afterwards (rows
    evaluated in a run shorter than ``min_run`` are never kept)."""

    steps: list[TreeStep]
    reusable: tuple[int, ...]


def tree_plan(id_lists: Sequence[Sequence[int]], cached: Sequence[int] = (), align: int = 1,
              min_run: int = 1) -> TreePlan:
    """One step per prompt, in the depth-first order of the prefix tree; ``cached`` is what the
    cache holds before the first step and may be kept (its shared prefix with the first prompt is
    reused, but the first prompt always evaluates at least its last id, since the cache holds no
    logits). A step that evaluates anything keeps a multiple of ``align`` and evaluates at least
    ``min_run`` ids (all of a shorter prompt); the rows of such a shorter prompt are not kept
    for the next one."""
    if any(len(ids) == 0 for ids in id_lists):
        raise ValueError("tree_plan needs prompts of at least one token each")
    if align < 1 or min_run < 1:
        raise ValueError(f"align and min_run must be at least 1; got {align}, {min_run}")
    order = sorted(range(len(id_lists)), key=lambda i: tuple(id_lists[i]))
    steps: list[TreeStep] = []
    reusable: tuple[int, ...] = tuple(cached)
    before: Sequence[int] = ()
    for position, i in enumerate(order):
        ids = tuple(id_lists[i])
        if position > 0 and ids == before:  # the same prompt again: its logits still stand
            steps.append(TreeStep(i, len(ids)))
            continue
        keep = min(common_prefix_length([reusable, ids]), len(ids) - 1, len(ids) - min_run)
        keep = max(keep, 0)
        keep -= keep % align
        steps.append(TreeStep(i, keep))
        reusable = ids if len(ids) - keep >= min_run else ids[:keep]
        before = ids
    return TreePlan(steps, reusable)


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


def eval_chunks(start: int, end: int, n_batch: int, align: int = 1, min_run: int = 1) -> list[tuple[int, int]]:
    """``[start, end)`` cut into batches of at most ``n_batch`` ids, every cut at a multiple of
    ``align`` (``start`` is one) and the last batch at least ``min_run`` ids long (or all of them)."""
    if start % align or n_batch % align or n_batch < 2 * min_run:
        raise ValueError(f"eval_chunks needs start and n_batch multiples of align and n_batch >= 2 * min_run; "
                         f"got start {start}, n_batch {n_batch}, align {align}, min_run {min_run}")
    if end <= start:
        return []
    cuts = list(range(start, end, n_batch)) + [end]
    last = cuts[-1] - cuts[-2]
    if len(cuts) > 2 and last < min_run:
        shift = -(-(min_run - last) // align) * align  # the previous batch gives up a multiple of align
        cuts[-2] -= shift
    return list(zip(cuts[:-1], cuts[1:], strict=True))
