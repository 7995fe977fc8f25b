"""Model inputs of the Yes/No scoring modes: prefix groups, packed suffixes, left padding."""

from __future__ import annotations

import pytest
import torch

from ragsift.lm import EncodedPrompt
from ragsift.lm.layouts import (
    Segment,
    chunks,
    common_prefix_length,
    packed_segments,
    padded_batch,
    shared_prefix_groups,
)


def test_groups_share_the_prefix_and_the_common_start_of_the_suffixes():
    prompts = [
        EncodedPrompt((1, 2, 3), (7, 8, 10, 11), 1),
        EncodedPrompt((1, 2, 4), (7, 8, 12), 1),
        EncodedPrompt((1, 2, 3), (7, 8, 13), 1),
        EncodedPrompt((1, 2, 3), (7, 8, 10, 14), 1),
    ]
    groups = shared_prefix_groups(prompts)
    assert [g.members for g in groups] == [[0, 2, 3], [1]]
    assert groups[0].prefix == (1, 2, 3, 7, 8) and groups[0].suffixes == [(10, 11), (13,), (10, 14)]
    # a lone prompt keeps exactly its last token as suffix
    assert groups[1].prefix == (1, 2, 4, 7, 8) and groups[1].suffixes == [(12,)]
    for g in groups:
        for member, suffix in zip(g.members, g.suffixes, strict=True):
            assert list(g.prefix + suffix) == prompts[member].ids
    assert common_prefix_length([g.prefix for g in groups]) == 2
    assert common_prefix_length([]) == 0


def test_a_suffix_that_is_a_prefix_of_another_keeps_one_token():
    groups = shared_prefix_groups([EncodedPrompt((1,), (5, 6), 0), EncodedPrompt((1,), (5, 6, 7), 0)])
    assert groups[0].prefix == (1, 5) and groups[0].suffixes == [(6,), (6, 7)]


def test_packed_suffixes_block_mask_and_positions():
    suffixes = [(10, 11), (12,), (13, 14, 15)]
    packed = packed_segments(3, [Segment(s, ((0, 3),), 3) for s in suffixes], torch.float32)
    assert packed.input_ids.tolist() == [[10, 11, 12, 13, 14, 15]]
    assert packed.position_ids.tolist() == [[3, 4, 3, 3, 4, 5]]
    assert packed.last.tolist() == [1, 2, 5]
    allowed = (packed.attention_mask[0, 0] == 0).int().tolist()
    assert allowed == [
        # prefix | suffix row
        [1, 1, 1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 1, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 1, 0, 0],
        [1, 1, 1, 0, 0, 0, 1, 1, 0],
        [1, 1, 1, 0, 0, 0, 1, 1, 1],
    ]
    assert packed.attention_mask.min().item() == torch.finfo(torch.float32).min
    with pytest.raises(ValueError, match="at least one token"):
        packed_segments(3, [Segment((1,), ((0, 3),), 3), Segment((), ((0, 3),), 3)], torch.float32)


def test_left_padding_with_positions_of_real_tokens():
    ids, mask, positions = padded_batch([[5, 6, 7], [8]], pad_id=2)
    assert ids.tolist() == [[5, 6, 7], [2, 2, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert positions.tolist() == [[0, 1, 2], [0, 0, 0]]


def test_chunks():
    assert [list(r) for r in chunks(5, 2)] == [[0, 1], [2, 3], [4]]
    assert chunks(0, 8) == []


def test_packed_segments_see_only_their_own_cache_ranges():
    segments = [Segment((20, 21), ((0, 2), (2, 4)), 4), Segment((22,), ((0, 2), (4, 5)), 3)]
    packed = packed_segments(5, segments, torch.float32)
    assert packed.input_ids.tolist() == [[20, 21, 22]]
    assert packed.position_ids.tolist() == [[4, 5, 3]]
    assert packed.last.tolist() == [1, 2]
    allowed = (packed.attention_mask[0, 0] == 0).int().tolist()
    assert allowed == [
        [1, 1, 1, 1, 0, 1, 0, 0],
        [1, 1, 1, 1, 0, 1, 1, 0],
        [1, 1, 0, 0, 1, 0, 0, 1],
    ]
    with pytest.raises(ValueError, match="outside the 3 keys before this segment"):
        packed_segments(3, [Segment((1,), ((0, 4),), 4)], torch.float32)


def test_a_context_segment_in_front_is_seen_by_the_segments_after_it():
    # cache = 2 shared tokens; row = a document context (2 tokens), then two suffixes that see
    # the cache AND that context (keys 0..4), as if the context had been cached first
    context = Segment((30, 31), ((0, 2),), 2)
    suffixes = [Segment((40,), ((0, 4),), 4), Segment((41, 42), ((0, 4),), 4)]
    packed = packed_segments(2, [context, *suffixes], torch.float32)
    assert packed.position_ids.tolist() == [[2, 3, 4, 4, 5]]
    assert packed.last.tolist() == [1, 2, 4]
    allowed = (packed.attention_mask[0, 0] == 0).int().tolist()
    assert allowed == [
        [1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 0, 1, 0],
        [1, 1, 1, 1, 0, 1, 1],
    ]
    # a segment may not see itself or what comes after it through ``visible``
    with pytest.raises(ValueError, match="outside the 4 keys"):
        packed_segments(2, [context, Segment((40,), ((0, 5),), 4)], torch.float32)
