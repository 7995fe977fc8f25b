"""A reader that runs a causal LM in-process with transformers (greedy decoding)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from ragsift.errors import PromptTooLongError
from ragsift.model_plugins import ModelParams, ModelPlugin
from ragsift.models import OFFLINE_SMOLLM2, try_describe_model
from ragsift.readers.base import Reader, ReaderAnswer, ReaderParams, cut_at_stop

__all__ = ["TransformersReader", "TransformersReaderParams"]


class TransformersReaderParams(ReaderParams, ModelParams):
    model: str = Field(OFFLINE_SMOLLM2, description="Hub id, folder, GGUF file or package:PKG/PATH")
    batch_size: int = Field(8, ge=1, le=1024, description="prompts per generate() call")
    max_input_tokens: int | None = Field(
        None, ge=16, description="prompt + answer budget; default: the model's max positions"
    )


class TransformersReader(ModelPlugin, Reader):
    """Greedy decoding with a local causal LM.

    The prompt goes through the tokenizer's chat template when it has one (system + user
    messages), else the two parts are joined with a newline. Prompts are left-padded by hand
    (the shared, cached tokenizer is never mutated). A prompt whose length plus
    ``max_new_tokens`` exceeds the budget raises :class:`PromptTooLongError`; nothing is truncated.
    """

    Params = TransformersReaderParams
    _device: str | None = None

    def load_model(self) -> tuple[Any, Any]:
        from ragsift.models import load_causal_lm, resolve_device

        self._device = resolve_device(self.params.device)
        return load_causal_lm(self.params.model, device=self._device, dtype=self.params.dtype)

    def tokenizer_spec(self) -> str | None:
        return self.params.model

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["model"] = try_describe_model(self.params.model)
        return out

    def _budget(self) -> int:
        if self.params.max_input_tokens is not None:
            return self.params.max_input_tokens
        positions = getattr(self._model.config, "max_position_embeddings", None)
        return int(positions) if positions else 4096

    def encode_prompt(self, question: str, context: str) -> list[int]:
        """Token ids of the full prompt (chat template applied when the tokenizer has one)."""
        self.warm_up()
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(
                self.prompt.messages(question, context), add_generation_prompt=True, tokenize=False
            )
            ids = tok(text, add_special_tokens=False)["input_ids"]
        else:
            ids = tok(self.prompt.plain(question, context))["input_ids"]
        budget = self._budget()
        if len(ids) + self.params.max_new_tokens > budget:
            raise PromptTooLongError(
                f"TransformersReader: the prompt has {len(ids)} tokens and the answer may take "
                f"{self.params.max_new_tokens} more, but model '{self.params.model}' accepts {budget} "
                f"({len(context)} characters of context). Nothing is truncated: compress the context "
                "more, shorten the templates, lower max_new_tokens or raise max_input_tokens."
            )
        return list(ids)

    def _sync(self) -> None:
        if self._device and self._device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()

    def _generate(self, prompts: list[list[int]]) -> list[tuple[str, int]]:
        import torch

        tok = self._tokenizer
        eos = tok.eos_token_id
        pad = tok.pad_token_id if tok.pad_token_id is not None else eos
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, p in enumerate(prompts):
            ids[row, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[row, width - len(p) :] = 1
        kwargs: dict[str, Any] = {}
        if self.params.stop:
            kwargs.update(stop_strings=list(self.params.stop), tokenizer=tok)
        with torch.inference_mode():
            out = self._model.generate(
                input_ids=ids.to(self._model.device),
                attention_mask=mask.to(self._model.device),
                max_new_tokens=self.params.max_new_tokens,
                do_sample=False,
                num_beams=1,
                pad_token_id=pad,
                eos_token_id=eos,
                **kwargs,
            )
        results = []
        stops = {eos} if eos is not None else set()
        for row in out[:, width:].tolist():
            n = 0
            for n, token in enumerate(row, start=1):  # noqa: B007 - n is used after the loop
                if token in stops:
                    break
            new = row[:n] if row else []
            text = tok.decode(new, skip_special_tokens=True)
            results.append((cut_at_stop(text, self.params.stop), len(new)))
        return results

    def answer_many(self, questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        self._check_lengths(questions, contexts)
        if not questions:
            return []
        self.warm_up()
        prompts = [self.encode_prompt(q, c) for q, c in zip(questions, contexts, strict=True)]
        answers: list[ReaderAnswer] = []
        size = self.params.batch_size
        for start in range(0, len(prompts), size):
            batch = prompts[start : start + size]
            self._sync()
            t = time.perf_counter()
            generated = self._generate(batch)
            self._sync()
            share = (time.perf_counter() - t) / len(batch)
            answers.extend(
                ReaderAnswer(text, len(p), n, share) for p, (text, n) in zip(batch, generated, strict=True)
            )
        return answers
