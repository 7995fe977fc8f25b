"""The ``llama-cpp`` reader: llama.cpp in-process, on the real Qwen2.5-Coder-0.5B-Instruct GGUF."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsift.config import build_plugin, load_config
from ragsift.errors import ConfigError, MissingDependencyError, PromptTooLongError
from ragsift.models import OFFLINE_QWEN_0_5B, OFFLINE_QWEN_1_5B
from ragsift.readers.llamacpp_reader import LlamaCppReader

# Facts no model knows: the answer must come from the context.
CONTEXT = "Zorblat Vennick, a maker of brass telescopes, was born in the small town of Quillsby in 1874."
QUESTION = "In which town was Zorblat Vennick born?"
ROOT = Path(__file__).resolve().parents[2]
SHORT_SYSTEM = "Answer the question using the context. Reply with the answer only: a short phrase, no sentence."
SHORT_USER = "Context:\n{context}\n\nQuestion: {query}"


def test_params_are_validated_and_nothing_loads_on_construction() -> None:
    reader = build_plugin("reader", {"name": "llama-cpp", "model": "/no/such/model.gguf", "n_threads": 2})
    assert isinstance(reader, LlamaCppReader) and reader.config()["n_threads"] == 2
    assert LlamaCppReader().params.model == OFFLINE_QWEN_1_5B  # the main job's reader
    with pytest.raises(ConfigError, match="unknown parameter 'threads'"):
        LlamaCppReader(threads=2)
    with pytest.raises(ConfigError, match="'n_threads'"):
        LlamaCppReader(n_threads=0)
    with pytest.raises(ConfigError, match="'n_ctx'"):
        LlamaCppReader(n_ctx=8)
    with pytest.raises(ConfigError, match="no such file or folder"):
        reader.warm_up()


def test_a_model_that_is_not_a_gguf_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a GGUF file"):
        LlamaCppReader(model=str(tmp_path)).warm_up()


def test_without_llama_cpp_python_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ragsift.lm import llamacpp_model

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragsift\[llama-cpp\]'"):
        llamacpp_model.import_llama_cpp()


@pytest.mark.parametrize(("preset", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_omp_wait_policy_is_passive_unless_the_user_set_it(preset: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset:
        env["OMP_WAIT_POLICY"] = preset
    code = ("import os; from ragsift.lm.llamacpp_model import import_llama_cpp; "
            "assert 'llama_cpp' not in __import__('sys').modules; import_llama_cpp(); "
            "print(os.environ['OMP_WAIT_POLICY'])")
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == expected


def test_the_reader_configs_name_the_split_models() -> None:
    for name, model in (("reader-qwen1.5b", OFFLINE_QWEN_1_5B), ("reader-qwen0.5b", OFFLINE_QWEN_0_5B)):
        config = load_config(name)
        assert config.reader is not None and config.reader["name"] == "llama-cpp"
        assert config.reader["model"] == model
        reader = config.build_reader()
        assert isinstance(reader, LlamaCppReader) and reader.params.max_new_tokens == 32
        # the prompt chosen on development questions (benchmarks/reader_prompt.py, "short")
        assert reader.params.system_template == SHORT_SYSTEM and reader.params.user_template == SHORT_USER


# -- the real 0.5B model -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reader() -> Iterator[LlamaCppReader]:
    yield LlamaCppReader(model=OFFLINE_QWEN_0_5B, n_threads=2, max_new_tokens=32, stop=["\n"])


@pytest.mark.integration
@pytest.mark.slow
def test_answers_a_one_sentence_context(reader: LlamaCppReader) -> None:
    answer = reader.answer(QUESTION, CONTEXT)
    assert "Quillsby" in answer.text
    assert answer.prompt_tokens is not None and answer.prompt_tokens > 40  # the EXIT prompt, whole
    assert 0 < (answer.completion_tokens or 0) <= 32 and answer.seconds > 0
    assert "<|im_end|>" not in answer.text and "\n" not in answer.text


@pytest.mark.integration
@pytest.mark.slow
def test_same_prompt_same_answer_whatever_came_before(reader: LlamaCppReader) -> None:
    other_context = "The Blue Lantern inn stands on Harrow Lane in the port of Tessaly."
    answers = reader.answer_many(
        [QUESTION, "On which lane does the Blue Lantern inn stand?", QUESTION],
        [CONTEXT, other_context, CONTEXT],
    )
    again = reader.answer(QUESTION, CONTEXT)
    assert answers[0].text == answers[2].text == again.text
    assert answers[0].completion_tokens == again.completion_tokens
    assert "Harrow" in answers[1].text


@pytest.mark.integration
@pytest.mark.slow
def test_an_overlong_prompt_is_refused_not_truncated() -> None:
    small = LlamaCppReader(model=OFFLINE_QWEN_0_5B, n_ctx=256, n_threads=2, max_new_tokens=16)
    with pytest.raises(PromptTooLongError) as info:
        small.answer(QUESTION, CONTEXT + " Filler sentence about nothing." * 60)
    message = str(info.value)
    assert "context window" in message and "256 tokens" in message and "Nothing is truncated" in message
    # a prompt that fits alone but not with its answer budget is refused too
    ids, _ = small.render_prompt(QUESTION, CONTEXT)
    tight = LlamaCppReader(model=OFFLINE_QWEN_0_5B, n_ctx=256, n_threads=2, max_new_tokens=256 - len(ids) + 1)
    with pytest.raises(PromptTooLongError, match=f"the prompt has {len(ids)} tokens"):
        tight.answer(QUESTION, CONTEXT)
    fits = LlamaCppReader(model=OFFLINE_QWEN_0_5B, n_ctx=256, n_threads=2, max_new_tokens=256 - len(ids))
    assert "Quillsby" in fits.answer(QUESTION, CONTEXT).text


@pytest.mark.integration
@pytest.mark.slow
def test_a_context_window_beyond_training_is_refused() -> None:
    with pytest.raises(ConfigError, match="exceeds the 32768 tokens"):
        LlamaCppReader(model=OFFLINE_QWEN_0_5B, n_ctx=40000, n_threads=2).warm_up()


@pytest.mark.integration
@pytest.mark.slow
def test_describe_records_the_model_and_its_pinned_hash(reader: LlamaCppReader) -> None:
    described = reader.describe()
    assert described["model"]["sha256"] == {
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    }
    assert described["n_threads"] == 2 and described["llama_cpp_python"]
