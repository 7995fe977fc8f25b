"""The prefix-tree plan of the llama.cpp Yes/No engine, without a model: every step's cache holds
exactly its prompt, and the tokens run are the tree's distinct prefixes (plus the alignment)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsift.lm.prefix_tree import TreePlan, TreeStep, eval_chunks, tree_plan, tree_tokens


def distinct_prefixes(id_lists: Sequence[Sequence[int]]) -> int:
    return len({tuple(ids[:n]) for ids in id_lists for n in range(1, len(ids) + 1)})


def run_plan(id_lists: Sequence[Sequence[int]], plan: TreePlan, cached: Sequence[int] = (), min_run: int = 1) -> int:
    """Replay the plan on a simulated cache whose rows remember the length of the run that made
    them; check that every step keeps ids it has, none made by a run shorter than ``min_run``, and
    ends holding its prompt, and that a step without tokens follows the same prompt. Tokens run."""
    cache, made_by, run, last = list(cached), [min_run] * len(cached), 0, None
    for step in plan.steps:
        ids = list(id_lists[step.index])
        if step.keep == len(ids):
            assert last == ids, "a step that runs nothing must follow the same prompt (its logits stand)"
            continue
        assert step.keep <= len(cache) and cache[: step.keep] == ids[: step.keep]
        assert all(n >= min_run for n in made_by[: step.keep]), "kept a row of a short run"
        n = len(ids) - step.keep
        cache, made_by = cache[: step.keep] + ids[step.keep :], made_by[: step.keep] + [n] * n
        run += n
        last = ids
    good = next((i for i, n in enumerate(made_by) if n < min_run), len(made_by))
    assert list(plan.reusable) == cache[: len(plan.reusable)] and len(plan.reusable) <= good
    return run


prompts = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(prompts)
def test_the_plan_runs_each_node_of_the_prefix_tree_once(id_lists: list[list[int]]) -> None:
    plan = tree_plan(id_lists)
    assert sorted(s.index for s in plan.steps) == list(range(len(id_lists)))
    assert run_plan(id_lists, plan) == tree_tokens(id_lists) == distinct_prefixes(id_lists)


@settings(max_examples=300, deadline=None)
@given(prompts, st.lists(st.integers(0, 3), max_size=12), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 3, 8]))
def test_aligned_plans_start_at_multiples_run_enough_and_little_more_than_the_tree(
    id_lists: list[list[int]], cached: list[int], align: int, min_run: int
) -> None:
    plan = tree_plan(id_lists, cached, align=align, min_run=min_run)
    for step in plan.steps:
        n = len(id_lists[step.index])
        if step.keep < n:
            assert step.keep % align == 0 and n - step.keep >= min(min_run, n)
    run = run_plan(id_lists, plan, cached, min_run)
    assert run <= tree_tokens(id_lists) + (align - 1 + min_run) * len(id_lists)
    assert run >= 1  # the first prompt always runs: the cache holds no logits


def test_a_document_head_and_context_run_once_and_each_sentence_after_them() -> None:
    head, context_a, context_b = [1, 2, 3], [10, 11, 12, 13], [20, 21]
    sentences = [[30, 31], [32], [33, 34, 35]]
    id_lists = [head + context + s for context in (context_a, context_b) for s in sentences]
    assert run_plan(id_lists, tree_plan(id_lists)) == len(head) + len(context_a) + len(context_b) + 2 * 6


def test_identical_prompts_run_once_and_a_prefix_prompt_before_its_extensions() -> None:
    id_lists = [[5, 6, 7], [5, 6], [5, 6, 7], [5, 6]]
    plan = tree_plan(id_lists)
    assert run_plan(id_lists, plan) == 3 == tree_tokens(id_lists)
    assert [len(id_lists[s.index]) for s in plan.steps] == [2, 2, 3, 3]


def test_what_the_cache_already_holds_is_reused_but_the_first_prompt_runs_its_last_token() -> None:
    assert tree_plan([[1, 2, 3]], cached=[1, 2, 3]).steps == [TreeStep(0, 2)]
    assert tree_plan([[1, 2, 3, 4]], cached=[1, 2, 9]).steps == [TreeStep(0, 2)]
    assert tree_plan([[1, 2, 3, 4, 5, 6]], cached=[1, 2, 3, 4, 5], align=4).steps == [TreeStep(0, 4)]


def test_a_prompt_equal_to_the_cached_one_runs_min_run_ids_again() -> None:
    ids = list(range(20))
    assert tree_plan([ids], cached=ids, align=4, min_run=8).steps == [TreeStep(0, 12)]
    short = tree_plan([ids[:5]], cached=ids, align=4, min_run=8)
    assert short.steps == [TreeStep(0, 0)] and short.reusable == ()  # all of it, in a run too short to keep


def test_the_rows_of_a_short_prompt_are_not_kept_for_the_prompts_after_it() -> None:
    short, long = [1, 2, 3], [1, 2, 3] + list(range(10, 30))
    plan = tree_plan([long, short], align=4, min_run=8)
    assert plan.steps == [TreeStep(1, 0), TreeStep(0, 0)] and plan.reusable == tuple(long)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 50), st.integers(0, 2000), st.sampled_from([(16, 4, 8), (512, 4, 8), (20, 1, 1), (24, 4, 3)]))
def test_eval_chunks_cover_the_range_in_aligned_batches_none_too_small(
    start_blocks: int, length: int, settings_: tuple[int, int, int]
) -> None:
    n_batch, align, min_run = settings_
    start = start_blocks * align
    chunks = eval_chunks(start, start + length, n_batch, align, min_run)
    assert [a for a, _ in chunks][:1] == ([start] if length else [])
    assert all(b == c for (_, b), (c, _) in zip(chunks, chunks[1:], strict=False))
    assert (chunks[-1][1] if chunks else start) == start + length
    for a, b in chunks:
        assert a % align == 0 and 0 < b - a <= n_batch
    if len(chunks) > 1:
        assert chunks[-1][1] - chunks[-1][0] >= min_run


def test_empty_prompts_and_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        tree_plan([[1], []])
    with pytest.raises(ValueError, match="align"):
        tree_plan([[1]], align=0)
    with pytest.raises(ValueError, match="multiples of align"):
        eval_chunks(2, 10, 16, align=4)
