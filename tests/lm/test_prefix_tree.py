"""The prefix-tree plan of the llama.cpp Yes/No engine, without a model: every step's cache holds
exactly its prompt, and the tokens run are the tree's distinct prefixes (plus the alignment)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.lm.prefix_tree import TreeStep, tree_plan, tree_tokens


def distinct_prefixes(id_lists: Sequence[Sequence[int]]) -> int:
    return len({tuple(ids[:n]) for ids in id_lists for n in range(1, len(ids) + 1)})


def run_plan(id_lists: Sequence[Sequence[int]], steps: list[TreeStep], cached: Sequence[int] = ()) -> int:
    """Replay the plan on a simulated cache; check that every step keeps ids it has and ends
    holding its prompt, and that a step without tokens follows the same prompt. Tokens run."""
    cache, run, last = list(cached), 0, None
    for step in steps:
        ids = list(id_lists[step.index])
        assert step.keep <= len(cache) and cache[: step.keep] == ids[: step.keep]
        if step.keep == len(ids):
            assert last == ids, "a step that runs nothing must follow the same prompt (its logits stand)"
        cache = cache[: step.keep] + ids[step.keep :]
        run += len(ids) - step.keep
        last = ids
    return run


prompts = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(prompts)
def test_the_plan_runs_each_node_of_the_prefix_tree_once(id_lists: list[list[int]]) -> None:
    steps = tree_plan(id_lists)
    assert sorted(s.index for s in steps) == list(range(len(id_lists)))
    assert run_plan(id_lists, steps) == tree_tokens(id_lists) == distinct_prefixes(id_lists)


@settings(max_examples=300, deadline=None)
@given(prompts, st.lists(st.integers(0, 3), max_size=12), st.sampled_from([1, 2, 4, 8]))
def test_aligned_plans_start_at_multiples_and_run_at_most_align_minus_one_more_per_prompt(
    id_lists: list[list[int]], cached: list[int], align: int
) -> None:
    steps = tree_plan(id_lists, cached, align=align)
    for step in steps:
        assert step.keep == len(id_lists[step.index]) or step.keep % align == 0
    run = run_plan(id_lists, steps, cached)
    assert run <= tree_tokens(id_lists) + (align - 1) * len(id_lists)
    assert run >= 1  # the first prompt always runs: the cache holds no logits


def test_a_document_head_and_context_run_once_and_each_sentence_after_them() -> None:
    head, context_a, context_b = [1, 2, 3], [10, 11, 12, 13], [20, 21]
    sentences = [[30, 31], [32], [33, 34, 35]]
    id_lists = [head + context + s for context in (context_a, context_b) for s in sentences]
    assert run_plan(id_lists, tree_plan(id_lists)) == len(head) + len(context_a) + len(context_b) + 2 * 6


def test_identical_prompts_run_once_and_a_prefix_prompt_before_its_extensions() -> None:
    id_lists = [[5, 6, 7], [5, 6], [5, 6, 7], [5, 6]]
    steps = tree_plan(id_lists)
    assert run_plan(id_lists, steps) == 3 == tree_tokens(id_lists)
    assert [len(id_lists[s.index]) for s in steps] == [2, 2, 3, 3]


def test_what_the_cache_already_holds_is_reused_but_the_first_prompt_runs_its_last_token() -> None:
    assert tree_plan([[1, 2, 3]], cached=[1, 2, 3]) == [TreeStep(0, 2)]
    assert tree_plan([[1, 2, 3, 4]], cached=[1, 2, 9]) == [TreeStep(0, 2)]
    assert tree_plan([[1, 2, 3, 4, 5, 6]], cached=[1, 2, 3, 4, 5], align=4) == [TreeStep(0, 4)]


def test_empty_prompts_and_bad_alignment_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        tree_plan([[1], []])
    with pytest.raises(ValueError, match="align"):
        tree_plan([[1]], align=0)
