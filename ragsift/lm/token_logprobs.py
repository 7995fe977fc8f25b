"""Token log-probabilities of a causal LM: ``log p(ids[t] | ids[:t])`` for every token of many
sequences, batched. The one engine behind Selective-Context's self-information (every token of a
document given the text before it) and LongLLMLingua's question likelihood (the question's
tokens given a document).

Layouts (the building blocks of :mod:`ragsift.lm.layouts`): ``padded`` runs up to ``batch_size``
complete sequences per forward pass, left-padded; ``packed`` puts several sequences side by side
in one row of at most ``row_tokens`` tokens under a block-diagonal attention mask (each sequence
sees only itself, positions restart at 0), so no padding is run. Both give the same values
(tested). Prefix sharing does not apply to these two methods: the text a log-probability is
conditioned on comes first and differs for every unit, while what they share (LongLLMLingua's
question) comes last, where a causal model cannot share it.

Values are ``log_softmax`` of the fp32 logits, returned as float64 arrays. The only model call is
:class:`~ragsift.lm.causal_call.CausalLMCall`, shared with the Yes/No engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ragsift.errors import ConfigError
from ragsift.lm.causal_call import CausalLMCall
from ragsift.lm.layouts import Segment, chunks, packed_segments, padded_batch

__all__ = ["TokenLogProbEngine", "LogProbLayout", "start_token_id"]

LogProbLayout = Literal["padded", "packed"]


def start_token_id(tokenizer: Any, start_token: str | None, owner: str) -> int:
    """The id that opens every sequence (the first real token needs something to be predicted
    from): ``start_token`` when given (it must be one token of the vocabulary), else the
    tokenizer's BOS, else its EOS (GPT-2's ``<|endoftext|>`` is both)."""
    if start_token is not None:
        ids = tokenizer.convert_tokens_to_ids([start_token])
        unk = getattr(tokenizer, "unk_token_id", None)
        if not ids or ids[0] is None or (unk is not None and ids[0] == unk and start_token != tokenizer.unk_token):
            raise ConfigError(f"{owner}: start_token {start_token!r} is not a token of the tokenizer "
                              f"'{getattr(tokenizer, 'name_or_path', '?')}'; name one of its special tokens.")
        return int(ids[0])
    for candidate in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    raise ConfigError(f"{owner}: the tokenizer has neither a BOS nor an EOS token; set start_token.")


class TokenLogProbEngine:
    """Per-token log-probabilities of sequences under a causal LM already in memory."""

    def __init__(self, model: Any, *, batch_size: int = 8, row_tokens: int = 2048, pad_id: int = 0,
                 owner: str = "TokenLogProbEngine") -> None:
        self.model, self.batch_size, self.row_tokens, self.pad_id, self.owner = model, batch_size, row_tokens, pad_id, owner
        embeddings = model.get_input_embeddings().weight
        self.device, self.activation_dtype = embeddings.device, embeddings.dtype
        self._call = CausalLMCall(model)
        #: counters of the last call: forward passes and tokens run (padding included)
        self.stats: dict[str, Any] = {}

    def logprobs(self, sequences: Sequence[Sequence[int]], layout: LogProbLayout = "packed",
                 last: int | None = None) -> list[np.ndarray]:
        """For each sequence ``ids`` (at least 2 ids), the array ``[log p(ids[t] | ids[:t]) for t
        in 1 .. len(ids) - 1]``, in the order given; with ``last = n`` only its final n values
        (the output layer then runs only where they are read)."""
        import torch

        if layout not in ("padded", "packed"):
            raise ConfigError(f"{self.owner}: unknown layout {layout!r}; choose padded or packed.")
        for i, ids in enumerate(sequences):
            if len(ids) < 2 or (last is not None and not 1 <= last < len(ids)):
                raise ValueError(f"{self.owner}: sequence {i} has {len(ids)} ids; it needs at least 2 "
                                 f"and more than last = {last}")
        self.stats = {"forward_passes": 0, "tokens": 0, "layout": layout}
        out: list[np.ndarray] = [np.zeros(0)] * len(sequences)
        with torch.inference_mode():
            if layout == "padded":
                self._padded(sequences, out, last)
            else:
                self._packed(sequences, out, last)
        return out

    def _padded(self, sequences: Sequence[Sequence[int]], out: list[np.ndarray], last: int | None) -> None:
        for rows in chunks(len(sequences), self.batch_size):
            ids, mask, positions = padded_batch([sequences[i] for i in rows], self.pad_id, self.device)
            width = ids.shape[1]
            # rows end in the last column: the final ``last`` predictions sit in the same columns
            keep = width - 1 if last is None else last
            logits = self._call(ids, attention_mask=mask, position_ids=positions, keep=keep + 1)[:, :-1]
            for row, i in enumerate(rows):
                n = min(len(sequences[i]) - 1, keep)
                out[i] = self._gather(logits[row, keep - n :], ids[row, width - n :])
            self._count(ids.numel())

    def _packed(self, sequences: Sequence[Sequence[int]], out: list[np.ndarray], last: int | None) -> None:
        import torch

        for members in self._rows(sequences):
            segments = [Segment(tuple(sequences[i]), (), 0) for i in members]
            packed = packed_segments(0, segments, self.activation_dtype, self.device)
            ids = packed.input_ids[0]
            predict, sizes = [], []  # per sequence: the row positions whose logits are read, how many
            start = 0
            for i in members:
                end = start + len(sequences[i])
                first = start if last is None else end - 1 - last
                predict.append(torch.arange(first, end - 1))
                sizes.append(end - 1 - first)
                start = end
            where = torch.cat(predict).to(self.device)
            logits = self._call(packed.input_ids, attention_mask=packed.attention_mask, position_ids=packed.position_ids,
                                keep=where)[0]
            values = self._gather(logits, ids[where + 1])
            offset = 0
            for i, size in zip(members, sizes, strict=True):
                out[i] = values[offset : offset + size]
                offset += size
            self._count(packed.input_ids.shape[1])

    def _rows(self, sequences: Sequence[Sequence[int]]) -> list[list[int]]:
        """Consecutive sequences packed greedily into rows of at most ``row_tokens`` tokens (a longer
        sequence gets a row of its own)."""
        rows: list[list[int]] = []
        used = 0
        for i, ids in enumerate(sequences):
            if rows and used + len(ids) <= self.row_tokens:
                rows[-1].append(i)
                used += len(ids)
            else:
                rows.append([i])
                used = len(ids)
        return rows

    @staticmethod
    def _gather(logits: Any, targets: Any) -> np.ndarray:
        """``log_softmax(logits)[t, targets[t]]`` per position, fp32, as float64."""
        import torch

        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1).double().cpu().numpy()

    def _count(self, tokens: int) -> None:
        self.stats["forward_passes"] += 1
        self.stats["tokens"] += int(tokens)
