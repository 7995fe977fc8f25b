"""A reader that runs a GGUF model in-process with llama.cpp (``llama-cpp-python``), greedy.

No server to start: the model file is memory-mapped on first use (``warm_up``). The prompt is
rendered with the model's own chat template (the GGUF's ``tokenizer.chat_template``), tokenized,
and refused with :class:`PromptTooLongError` when it plus ``max_new_tokens`` does not fit the
context window (nothing is truncated). Decoding is greedy (temperature 0, no repetition
penalty) and stops at the model's end-of-generation tokens, the template's stop string and the
configured ``stop`` strings. Every prompt is evaluated from an empty KV cache, so an answer
does not depend on what was read before it: the same prompt gives the same answer.

llama.cpp's OpenMP threads spin while they wait by default, which made it about 4x slower on a
shared 2-core machine; ``OMP_WAIT_POLICY=PASSIVE`` is set before the library loads unless the
environment already sets it (:mod:`ragsift.openmp`, for torch too).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from ragsift.errors import PromptTooLongError
from ragsift.lm.llamacpp_model import chat_formatter, cpu_threads, gguf_path, load_llama
from ragsift.models import OFFLINE_QWEN_1_5B, try_describe_model
from ragsift.provenance import package_version
from ragsift.readers.base import Reader, ReaderAnswer, ReaderError, ReaderParams, cut_at_stop

__all__ = ["LlamaCppReader", "LlamaCppReaderParams", "load_llama"]


class LlamaCppReaderParams(ReaderParams):
    model: str = Field(OFFLINE_QWEN_1_5B, description="a GGUF file: path, package:PKG/FILE.gguf or split:NAME")
    n_ctx: int | None = Field(
        8192, ge=64, description="context window (prompt + answer, tokens); null: the model's training context"
    )
    n_threads: int | None = Field(None, ge=1, le=512, description="CPU threads; null: the CPUs this process may use")
    n_batch: int = Field(512, ge=1, le=65536, description="prompt tokens per forward pass")
    n_gpu_layers: int = Field(0, ge=-1, description="layers offloaded to a GPU build of llama.cpp; -1: all")
    seed: int = Field(0, ge=0, description="sampler seed (decoding is greedy; kept for reproducibility)")


class LlamaCppReader(Reader):
    """Greedy answers from a GGUF model run in-process by llama.cpp (see the module docstring)."""

    Params = LlamaCppReaderParams
    needs_model: ClassVar[bool] = True
    extras: ClassVar[tuple[str, ...]] = ("llama-cpp",)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._llm: Any = None
        self._llm_lock = threading.Lock()
        self._formatter: Any = None
        self._path: str | None = None

    def warm_up(self) -> None:
        if self._llm is not None:
            return
        self._path = gguf_path(self.params.model, "LlamaCppReader")
        llm, lock = load_llama(
            self._path, n_ctx=self.params.n_ctx, n_threads=cpu_threads(self.params.n_threads),
            n_batch=self.params.n_batch, n_gpu_layers=self.params.n_gpu_layers, seed=self.params.seed,
        )
        self._formatter = chat_formatter(llm, self.params.model, "LlamaCppReader")
        self._llm, self._llm_lock = llm, lock

    def context_window(self) -> int:
        """Tokens the prompt and the answer share (loads the model)."""
        self.warm_up()
        return int(self._llm.n_ctx())

    def tokenizer_spec(self) -> str | None:
        return self.params.model

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["n_threads"] = cpu_threads(self.params.n_threads)
        out["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
        out["llama_cpp_python"] = package_version("llama-cpp-python")
        out["model"] = try_describe_model(self.params.model)
        return out

    def render_prompt(self, question: str, context: str) -> tuple[list[int], list[str]]:
        """Token ids of the full prompt (the model's chat template applied) and the template's
        stop strings; raises :class:`PromptTooLongError` when the prompt and the answer budget
        do not fit the context window."""
        self.warm_up()
        rendered = self._formatter(messages=self.prompt.messages(question, context))
        ids = self._llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        window = int(self._llm.n_ctx())
        if len(ids) + self.params.max_new_tokens > window:
            raise PromptTooLongError(
                f"LlamaCppReader: the prompt has {len(ids)} tokens and the answer may take "
                f"{self.params.max_new_tokens} more, but the context window of model "
                f"'{self.params.model}' is {window} tokens ({len(context)} characters of context). "
                "Nothing is truncated: compress the context more, shorten the templates, lower "
                "max_new_tokens or raise n_ctx."
            )
        stops = rendered.stop if isinstance(rendered.stop, list) else [rendered.stop] if rendered.stop else []
        return list(ids), [s for s in stops if s]

    def _generate(self, ids: list[int], template_stops: list[str]) -> tuple[str, int]:
        with self._llm_lock:
            self._llm.reset()  # evaluate from an empty cache: answers never depend on earlier prompts
            try:
                out = self._llm.create_completion(
                    prompt=ids,
                    max_tokens=self.params.max_new_tokens,
                    temperature=0.0,
                    top_k=1,
                    top_p=1.0,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    seed=self.params.seed,
                    stop=[*template_stops, *self.params.stop] or None,
                )
            except ValueError as exc:  # llama.cpp's own limit check; ours runs first
                raise ReaderError(f"LlamaCppReader: model '{self.params.model}': {exc}") from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return cut_at_stop(choice.get("text") or "", self.params.stop), int(usage.get("completion_tokens", 0))

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self._check_lengths(questions, contexts)
        if not questions:
            return []
        self.warm_up()
        prompts = [self.render_prompt(q, c) for q, c in zip(questions, contexts, strict=True)]
        answers = []
        for ids, stops in prompts:
            t = time.perf_counter()
            text, n = self._generate(ids, stops)
            answers.append(ReaderAnswer(text, len(ids), n, time.perf_counter() - t))
        return answers
