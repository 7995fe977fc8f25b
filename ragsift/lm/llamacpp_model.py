"""GGUF models run in-process by llama.cpp (``llama-cpp-python``): loading (cached per process),
the model's chat template, and a tokenizer view with the methods ragsift's prompt builders call.

Shared by the ``llama-cpp`` reader and the llama.cpp Yes/No engine. llama.cpp's OpenMP threads
spin while they wait by default, which made it about 4x slower on a shared 2-core machine;
``OMP_WAIT_POLICY=PASSIVE`` is set by the ``ragsift`` command (:mod:`ragsift.openmp`), before torch
or llama.cpp load their OpenMP runtime (torch's wheel ships ``libgomp.so.1``, which llama.cpp then
shares, with the policy read when torch loaded it: measured 3x the CPU time for the same tokens
when torch came first without it); a warning says when llama_cpp was loaded before.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsift.errors import ConfigError, MissingDependencyError
from ragsift.openmp import LOADED_BEFORE, prefer_passive_wait

__all__ = ["import_llama_cpp", "load_llama", "cpu_threads", "chat_formatter", "LlamaCppTokenizer", "LlamaCppModel",
           "gguf_path"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_models: dict[tuple[Any, ...], tuple[Any, threading.Lock]] = {}


@atexit.register
def _close_models() -> None:
    """Free the cached models before interpreter teardown (llama.cpp's finalizers fail once
    module globals are gone)."""
    with _lock:
        for llm, _ in _models.values():
            llm.close()
        _models.clear()


def cpu_threads(requested: int | None) -> int:
    """``requested``, or the CPUs this process may use."""
    if requested is not None:
        return requested
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def import_llama_cpp() -> Any:
    """``llama_cpp``, imported with ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy
    (:mod:`ragsift.openmp`; a warning when the runtime was loaded before ragsift could set it)."""
    if "llama_cpp" in prefer_passive_wait() or "llama_cpp" in LOADED_BEFORE:
        log.warning("llama_cpp was imported before ragsift could set OMP_WAIT_POLICY=PASSIVE; "
                    "on a busy machine set it in the environment")
    try:
        import llama_cpp
    except ImportError:
        raise MissingDependencyError(
            "ragsift's llama.cpp components (the llama-cpp reader, the llama-cpp Yes/No backend) need "
            "llama-cpp-python (it compiles llama.cpp, a few minutes once): pip install 'ragsift[llama-cpp]' "
            "(or run scripts/setup.sh)."
        ) from None
    return llama_cpp


def gguf_path(spec: str, owner: str) -> str:
    """The GGUF file a model spec names (path, ``package:PKG/FILE.gguf`` or ``split:NAME``);
    anything else is refused."""
    from ragsift.models import resolve_model

    location = resolve_model(spec)
    if location.kind != "gguf" or location.file is None:
        raise ConfigError(
            f"{owner}: model '{spec}' is a {location.kind}, not a GGUF file; llama.cpp runs GGUF files: "
            "name a .gguf file, package:PKG/FILE.gguf or split:NAME (or use the transformers/torch one)."
        )
    return str(location.file)


def load_llama(path: str, *, n_ctx: int | None, n_threads: int, n_batch: int, n_gpu_layers: int,
               seed: int, owner: str = "LlamaCppReader", cap_n_ctx: bool = False) -> tuple[Any, threading.Lock]:
    """A ``llama_cpp.Llama`` for ``path`` and the lock that serialises its use, cached per process
    (components with the same settings share one model). ``n_ctx`` above the model's training
    context is refused, or with ``cap_n_ctx`` lowered to it; None: the training context."""
    key = (path, n_ctx, n_threads, n_batch, n_gpu_layers, seed, cap_n_ctx)
    with _lock:
        if key in _models:
            return _models[key]
        llama_cpp = import_llama_cpp()

        def load(context: int | None) -> Any:
            return llama_cpp.Llama(
                model_path=path,
                n_ctx=context or 0,  # 0: the model's training context
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_batch=n_batch,
                n_gpu_layers=n_gpu_layers,
                seed=seed,
                logits_all=False,
                verbose=False,
            )

        llm = load(n_ctx)
        train_ctx = int(llama_cpp.llama_model_n_ctx_train(llm.model))
        if n_ctx is not None and n_ctx > train_ctx:
            llm.close()
            if not cap_n_ctx:
                raise ConfigError(
                    f"{owner}: n_ctx {n_ctx} exceeds the {train_ctx} tokens the model in {path} "
                    f"was trained on; lower n_ctx (or null for {train_ctx})."
                )
            llm = load(train_ctx)
        _models[key] = (llm, threading.Lock())
        return _models[key]


def chat_formatter(llm: Any, model: str, owner: str) -> Any:
    """The model's own chat template (the GGUF's ``tokenizer.chat_template``) as a
    ``Jinja2ChatFormatter`` with a generation prompt; a model without one is refused."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigError(
            f"{owner}: model '{model}' has no chat template in its GGUF metadata "
            "(tokenizer.chat_template); it needs an instruct model with one."
        )

    def text(token: int) -> str:  # the special token's text, as the template writes it
        return llm.detokenize([token], special=True).decode("utf-8", errors="replace") if token >= 0 else ""

    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(template=template, eos_token=text(eos_id), bos_token=text(bos_id),
                               add_generation_prompt=True, stop_token_ids=[eos_id] if eos_id >= 0 else None)


class LlamaCppTokenizer:
    """The GGUF model's own tokenizer (llama.cpp's), seen through the methods of a Hugging Face
    tokenizer that ragsift's prompt builders call (:mod:`ragsift.lm.prompts`,
    :mod:`ragsift.lm.sentence_prompt`): special tokens written in the text (``<|im_start|>``) are
    parsed as such, as a Hugging Face tokenizer does; BOS is added only where the model's vocabulary
    asks for it."""

    def __init__(self, llm: Any, name_or_path: str, owner: str = "LlamaCppTokenizer") -> None:
        self.llm, self.name_or_path, self.owner = llm, name_or_path, owner
        bos, eos = int(llm.token_bos()), int(llm.token_eos())
        self.bos_token_id = bos if bos >= 0 else None
        self.eos_token_id = eos if eos >= 0 else None
        self.pad_token_id = None
        self.chat_template = llm.metadata.get("tokenizer.chat_template") or None
        self._formatter: Any = None

    @property
    def model_max_length(self) -> int:
        """The context window of the loaded model."""
        return int(self.llm.n_ctx())

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        if not text:
            return []
        return [int(t) for t in self.llm.tokenize(text.encode("utf-8"), add_bos=add_special_tokens, special=True)]

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.llm.detokenize([int(i)], special=True).decode("utf-8", errors="replace") for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.llm.detokenize([int(i) for i in ids], special=True).decode("utf-8", errors="replace"))

    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool = False,
                            add_generation_prompt: bool = True) -> str:
        """The model's chat template rendered for ``messages`` with a generation prompt (text only)."""
        if tokenize or not add_generation_prompt:
            raise ValueError("LlamaCppTokenizer renders text with a generation prompt only")
        if self._formatter is None:
            self._formatter = chat_formatter(self.llm, self.name_or_path, self.owner)
        return str(self._formatter(messages=messages).prompt)


@dataclass(frozen=True)
class LlamaCppModel:
    """A loaded GGUF model: the ``llama_cpp.Llama``, the lock that serialises its use (shared with
    every component of this process on the same model and settings) and its file."""

    llm: Any
    lock: threading.Lock
    path: str
