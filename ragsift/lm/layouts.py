"""Batch layouts of encoded prompts, built without a model: ``padded`` (complete prompts, left
padding, positions of real tokens), ``trunk`` (the longest prompt into a KV cache, the others
cropping it back to what they share) and ``packed`` (a prefix tree: the shared start once, each
group's prefix packed in one row in front of its suffixes under a block attention mask).
Written up in docs/exit.md ("Modes"); :func:`layout_tokens` counts what each layout runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragsift.lm.prompts import EncodedPrompt

__all__ = [
    "PrefixGroup", "PackedSegments", "shared_prefix_groups", "common_prefix_length", "packed_segments", "Segment",
    "padded_batch", "chunks", "trunk_plan", "layout_tokens"
]


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """How many leading ids all ``seqs`` share (0 for no sequences)."""
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != first[i] for s in seqs):
            return i
    return n


@dataclass
class PrefixGroup:
    """Prompts ``members`` (indices into the prompt list) = ``prefix + suffixes[i]``; every suffix
    keeps at least one token, so the last suffix token yields the next-token logits."""

    prefix: tuple[int, ...]
    members: list[int] = field(default_factory=list)
    suffixes: list[tuple[int, ...]] = field(default_factory=list)


def shared_prefix_groups(prompts: Sequence[EncodedPrompt]) -> list[PrefixGroup]:
    """Group prompts with the same ``prefix`` (first-seen order) and move the longest common
    start of their suffixes into the group's prefix (leaving >= 1 suffix token each)."""
    by_prefix: dict[tuple[int, ...], list[int]] = {}
    for i, prompt in enumerate(prompts):
        by_prefix.setdefault(prompt.prefix, []).append(i)
    groups = []
    for prefix, members in by_prefix.items():
        suffixes = [prompts[i].suffix for i in members]
        shared = min(common_prefix_length(suffixes), min(len(s) for s in suffixes) - 1)
        shared = max(shared, 0)
        groups.append(PrefixGroup(prefix + tuple(suffixes[0][:shared]), members, [s[shared:] for s in suffixes]))
    return groups


def chunks(n: int, size: int) -> list[range]:
    """``range(n)`` cut into consecutive ranges of at most ``size``."""
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


@dataclass(frozen=True)
class Segment:
    """Token ids placed in a packed row after a KV cache. They see the key positions in
    ``visible`` (``(start, end)`` ranges over the cache followed by the row, restricted to what
    lies before the segment) and the earlier ids of the same segment; positions start at ``position``."""

    ids: tuple[int, ...]
    visible: tuple[tuple[int, int], ...]
    position: int


@dataclass
class PackedSegments:
    """One row holding several segments after a KV cache of ``cache_length`` positions.

    ``attention_mask`` is additive (0 = attend, dtype minimum = blocked), shape
    ``[1, 1, S, cache_length + S]``; ``last`` holds each segment's last position in the row.
    """

    input_ids: Any
    position_ids: Any
    attention_mask: Any
    last: Any


def packed_segments(cache_length: int, segments: Sequence[Segment], dtype: Any, device: Any = "cpu") -> PackedSegments:
    """Inputs that run several segments in one forward pass, each seeing only its ``visible`` keys and itself."""
    import torch

    lengths = [len(seg.ids) for seg in segments]
    if not lengths or min(lengths) < 1:
        raise ValueError("packed_segments needs at least one segment, each with at least one token")
    total = sum(lengths)
    ids = torch.tensor([t for seg in segments for t in seg.ids], dtype=torch.long, device=device).unsqueeze(0)
    allowed = torch.zeros(total, cache_length + total, dtype=torch.bool, device=device)
    positions = torch.empty(total, dtype=torch.long, device=device)
    last = []
    start = 0
    for seg, n in zip(segments, lengths, strict=True):
        end = start + n
        for lo, hi in seg.visible:
            if not 0 <= lo <= hi <= cache_length + start:
                raise ValueError(f"visible range {(lo, hi)} is outside the {cache_length + start} keys before this segment")
            allowed[start:end, lo:hi] = True
        allowed[start:end, cache_length + start : cache_length + end] = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        positions[start:end] = torch.arange(seg.position, seg.position + n, device=device)
        last.append(end - 1)
        start = end
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, torch.finfo(dtype).min)
    return PackedSegments(
        input_ids=ids,
        position_ids=positions.unsqueeze(0),
        attention_mask=mask[None, None],
        last=torch.tensor(last, dtype=torch.long, device=device),
    )


def padded_batch(id_lists: Sequence[Sequence[int]], pad_id: int, device: Any = "cpu",
                 side: str = "left") -> tuple[Any, Any, Any]:
    """``(input_ids, attention_mask, position_ids)`` of complete prompts padded with ``pad_id``
    on the ``left`` (causal LMs: every row ends in the last column) or the ``right``."""
    import torch

    width = max(len(ids) for ids in id_lists)
    input_ids = torch.full((len(id_lists), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(id_lists), width), dtype=torch.long)
    for row, ids in enumerate(id_lists):
        if ids:
            cols = slice(width - len(ids), width) if side == "left" else slice(0, len(ids))
            input_ids[row, cols] = torch.tensor(list(ids), dtype=torch.long)
            attention_mask[row, cols] = 1
    position_ids = (attention_mask.cumsum(-1) - 1).clamp_min(0)
    return input_ids.to(device), attention_mask.to(device), position_ids.to(device)


def trunk_plan(id_lists: Sequence[Sequence[int]]) -> tuple[int, list[tuple[int, int]]]:
    """``(trunk, [(i, start), ...])``: the longest prompt, then every other prompt with the index
    of its first id to run (it shares the ids before ``start`` with the trunk; at least its last
    id runs), longest shared part first so that the cache only ever shrinks back to a prefix."""
    trunk = max(range(len(id_lists)), key=lambda i: len(id_lists[i]))
    starts = {
        i: min(common_prefix_length([ids, id_lists[trunk]]), len(ids) - 1)
        for i, ids in enumerate(id_lists)
        if i != trunk
    }
    return trunk, sorted(starts.items(), key=lambda item: -item[1])


def layout_tokens(prompts: Sequence[EncodedPrompt], layout: str, batch_size: int) -> int:
    """Tokens ``layout`` runs through the model for ``prompts`` (padding included)."""
    if layout == "padded":
        return sum(len(rows) * max(len(prompts[i]) for i in rows) for rows in chunks(len(prompts), batch_size))
    if layout == "trunk":
        ids = [p.ids for p in prompts]
        trunk, rest = trunk_plan(ids)
        return len(ids[trunk]) + sum(len(ids[i]) - start for i, start in rest)
    groups = shared_prefix_groups(prompts)
    root = common_prefix_length([g.prefix for g in groups])
    return root + sum(len(g.prefix) - root + sum(map(len, g.suffixes)) for g in groups)
