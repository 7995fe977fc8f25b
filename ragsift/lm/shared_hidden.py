"""Final hidden states shared by the Yes/No scorers of one process (opt-in).

A zero-shot Yes/No score and a trained readout are both read from the same final hidden state
``h`` at each prompt's last position (``sigmoid((w_yes - w_no) . h)`` and ``sigmoid(w . h + b)``;
:mod:`ragsift.lm.engine`). Scorers that set ``share_hidden_states`` keep the ``h`` of every call in
:data:`SHARED_HIDDEN_STATES`, keyed by the loaded model object, the layout and the prompts' token
ids, so a second scorer on the same model and prompts (zero-shot EXIT beside a trained readout in
one ``ragsift evaluate`` run) runs no forward pass. The later scorer's measured time is then a
lookup, not the model's. Entries are dropped oldest first beyond ``max_bytes``; an entry whose
model object was freed is never returned (a new model at the same address is another model).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragsift.lm.prompts import EncodedPrompt

__all__ = ["SharedHiddenStates", "SHARED_HIDDEN_STATES"]


class SharedHiddenStates:
    """An LRU map (model, layout, prompts) -> hidden states ``[len(prompts), hidden]``."""

    def __init__(self, max_bytes: int = 512 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(model: Any, layout: str, prompts: Sequence[EncodedPrompt]) -> tuple[Any, ...]:
        return (id(model), layout, tuple(tuple(p.ids) for p in prompts))

    def get(self, model: Any, layout: str, prompts: Sequence[EncodedPrompt]) -> np.ndarray | None:
        key = self._key(model, layout, prompts)
        entry = self._entries.get(key)
        if entry is None or entry[0]() is not model:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, model: Any, layout: str, prompts: Sequence[EncodedPrompt], hidden: np.ndarray) -> None:
        key = self._key(model, layout, prompts)
        if key in self._entries:
            self._bytes -= self._entries.pop(key)[1].nbytes
        self._entries[key] = (weakref.ref(model), hidden)
        self._bytes += hidden.nbytes
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            self._bytes -= self._entries.popitem(last=False)[1][1].nbytes

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0


#: the process-wide store the ``causal-yes-no`` scorer uses with ``share_hidden_states = true``
SHARED_HIDDEN_STATES = SharedHiddenStates()
