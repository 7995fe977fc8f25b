"""The llama.cpp Yes/No engine (``backend = "llama-cpp"`` of EXIT's scorer and the causal judge).

Params without a model; then the real Qwen2.5-Coder-0.5B-Instruct GGUF: prefix reuse gives the
scores of every prompt run alone (to 1e-4) for about the prompt tree's distinct tokens, the score
is the two-way share of the full next-token distribution, overlong prompts are refused, the answer
words are checked on the model's own tokenizer, and the shipped configs' templates are the
model's chat template.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragsift.config import load_config
from ragsift.datasets import load_examples
from ragsift.errors import ConfigError, PromptTooLongError
from ragsift.judges.causal import CausalJudge
from ragsift.lm import EncodedPrompt, chat_prompt, single_token_id
from ragsift.lm.llamacpp_engine import LlamaCppYesNoEngine
from ragsift.lm.llamacpp_model import LlamaCppTokenizer
from ragsift.lm.sentence_prompt import YesNoTemplate
from ragsift.models import OFFLINE_QWEN_0_5B, OFFLINE_QWEN_1_5B
from ragsift.registry import build_plugin
from ragsift.scorers.causal_yes_no import CausalYesNoScorer
from ragsift.splitters.sentencizer import SentencizerSplitter

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "tests" / "data" / "hotpotqa-train-sf100.json"  # development data, not the evaluation file
EXIT_USER = ('Query:\n{query}\nFull context:\n{context}\nSentence:\n{sentence}\n'
             'Is this sentence useful in answering the query? Answer only "Yes" or "No".')


# -- params (no model) ----------------------------------------------------------------------------


def test_the_backend_is_a_param_and_torch_only_settings_are_refused_with_llama_cpp() -> None:
    scorer = build_plugin("scorer", {"name": "causal-yes-no", "backend": "llama-cpp", "model": OFFLINE_QWEN_0_5B,
                                     "adapter": "", "n_threads": 2})
    assert isinstance(scorer, CausalYesNoScorer) and scorer.config()["backend"] == "llama-cpp"
    assert CausalYesNoScorer().params.backend == "torch"  # unchanged default
    for extra, name in (({}, "adapter"), ({"adapter": "", "load_in_4bit": True}, "load_in_4bit"),
                        ({"adapter": "", "dtype": "bf16"}, "dtype"), ({"adapter": "", "device": "cuda"}, "device"),
                        ({"adapter": "", "readout": "r.safetensors"}, "readout"),
                        ({"adapter": "", "share_hidden_states": True}, "share_hidden_states")):
        with pytest.raises(ConfigError, match=f"{name}.*torch backend"):
            CausalYesNoScorer(backend="llama-cpp", model=OFFLINE_QWEN_0_5B, **extra)
    with pytest.raises(ConfigError, match="readout.*torch backend"):
        CausalJudge(backend="llama-cpp", model=OFFLINE_QWEN_0_5B, readout="r.safetensors")
    with pytest.raises(ConfigError, match="n_threads applies to backend"):
        CausalJudge(n_threads=2)
    with pytest.raises(ConfigError, match="'backend'"):
        CausalJudge(backend="vllm")


def test_a_model_that_is_not_a_gguf_file_is_refused_by_the_llama_cpp_backend(tmp_path: Path) -> None:
    scorer = CausalYesNoScorer(backend="llama-cpp", model=str(tmp_path), adapter="")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        scorer.warm_up()


# -- the real 0.5B model --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example_sentences():
    example = next(iter(load_examples(TRAIN, limit=1)))
    sentences = SentencizerSplitter().split_all(example.documents)
    # three documents' sentences: several sentences share each document's head and context
    docs = sorted({s.doc_index for s in sentences})[:3]
    return example, [s for s in sentences if s.doc_index in docs]


@pytest.fixture(scope="module")
def scorers() -> Iterator[dict[str, CausalYesNoScorer]]:
    config = load_config(ROOT / "configs" / "exit-qwen-0.5b.toml")
    assert config.compressor is not None
    spec = dict(config.compressor["scorer"])
    yield {mode: build_plugin("scorer", {**spec, "mode": mode}) for mode in ("prefix-shared", "reference")}


@pytest.mark.integration
@pytest.mark.slow
def test_prefix_reuse_scores_equal_a_no_reuse_run_for_the_prompt_trees_tokens(scorers, example_sentences) -> None:
    example, sentences = example_sentences
    shared, reference = scorers["prefix-shared"], scorers["reference"]
    scores = shared.score(example, sentences)
    stats = dict(shared.stats)
    alone = reference.score(example, sentences)
    assert len(scores) == len(sentences) > 6
    assert np.abs(scores - alone).max() <= 1e-4
    assert stats["layout"] == "prefix-tree" and reference.stats["layout"] == "separate"
    # the bound: every distinct prefix of the prompts once; the engine runs at most 10% more
    prompts = shared.prompts(example, sentences)
    assert stats["tree_tokens"] == len({tuple(p.ids[:n]) for p in prompts for n in range(1, len(p) + 1)})
    assert stats["tree_tokens"] <= stats["tokens"] <= 1.1 * stats["tree_tokens"]
    assert reference.stats["tokens"] == sum(len(p) for p in prompts) > 2 * stats["tokens"]
    assert scores.min() > 0.0 and scores.max() < 1.0 and scores.std() > 0  # real, varying probabilities
    # the cache kept between calls: the same sentences again reuse it, with the same scores
    again = shared.score(example, sentences[:3])
    assert np.abs(again - alone[:3]).max() <= 1e-4 and shared.stats["reused_tokens"] > 0


@pytest.mark.integration
@pytest.mark.slow
def test_the_score_is_the_two_way_share_of_the_full_next_token_distribution(scorers, example_sentences) -> None:
    import llama_cpp

    example, sentences = example_sentences
    scorer = scorers["prefix-shared"]
    prompt = scorer.prompts(example, sentences[:1])[0]
    score = scorer.score(example, sentences[:1])[0]
    engine = scorer.engine
    assert isinstance(engine, LlamaCppYesNoEngine)
    # another instance of the model, the prompt from an empty cache, the whole row of logits read out
    # (logits_all = False as in the engine: with logits_all = True llama.cpp computes the output layer
    # for every row, grouped by 4, and the last row's rounding differs)
    other = llama_cpp.Llama(model_path=engine.llm.model_path, n_ctx=1024, n_threads=2, logits_all=False, verbose=False)
    try:
        other.eval(prompt.ids)
        logits = np.ctypeslib.as_array(other._ctx.get_logits_ith(-1), shape=(other.n_vocab(),)).astype(np.float64)
    finally:
        other.close()
    assert logits.shape == (engine.n_vocab,) and np.isfinite(logits).all()
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    yes, no = probs[engine.positive_id], probs[engine.negative_id]
    assert abs(score - yes / (yes + no)) <= 1e-4


@pytest.mark.integration
@pytest.mark.slow
def test_the_judge_runs_each_growing_evidence_set_after_the_previous_one(example_sentences) -> None:
    example, sentences = example_sentences
    evidence = [f"{example.documents[s.doc_index].title}: {s.text}" for s in sentences]
    sets = [evidence[:k] for k in (2, 4, 6, 8)]
    config = load_config(ROOT / "configs" / "ecorag-qwen-0.5b.toml")
    assert config.compressor is not None
    spec = dict(config.compressor["selector"]["judge"])
    shared = build_plugin("judge", spec)
    separate = build_plugin("judge", {**spec, "share_prefix": False})
    probs = np.array(shared.probabilities(example.question, sets))
    stats = dict(shared.engine.stats)
    alone = np.array(separate.probabilities(example.question, sets))
    assert np.abs(probs - alone).max() <= 1e-4
    prompts = shared.encoded_prompts(example.question, sets)
    assert stats["layout"] == "prefix-tree" and stats["tree_tokens"] <= stats["tokens"] <= 1.1 * stats["tree_tokens"]
    assert stats["tokens"] < 0.5 * sum(len(p) for p in prompts)  # about the longest prompt alone
    # the sequential loop: one set per call, each after the previous one on the cache
    steps = []
    for candidate in sets:
        steps.append(shared.probabilities(example.question, [candidate])[0])
        steps_stats = dict(shared.engine.stats)
    assert np.abs(np.array(steps) - alone).max() <= 1e-4
    assert steps_stats["reused_tokens"] > 0.5 * len(prompts[-1])


@pytest.mark.integration
@pytest.mark.slow
def test_overlong_prompts_are_refused_never_cut(example_sentences) -> None:
    example, sentences = example_sentences
    small = CausalYesNoScorer(backend="llama-cpp", model=OFFLINE_QWEN_0_5B, adapter="", n_threads=2,
                              max_length=64, overflow="error", template="{query}\n{context}\n{sentence}")
    with pytest.raises(PromptTooLongError, match="max_length 64"):
        small.score(example, sentences[:1])
    engine = small.engine
    assert isinstance(engine, LlamaCppYesNoEngine)
    window = engine.context_window
    assert window >= 64
    with pytest.raises(PromptTooLongError, match=f"context window is {window}"):
        engine.probabilities([EncodedPrompt((), tuple([engine.positive_id] * (window + 1)))], "auto")
    judge = CausalJudge(backend="llama-cpp", model=OFFLINE_QWEN_0_5B, n_threads=2, max_length=64)
    with pytest.raises(PromptTooLongError, match="max_length is 64"):
        judge.probabilities(example.question, [[s.text for s in sentences]])


@pytest.mark.integration
@pytest.mark.slow
def test_the_answer_words_are_checked_on_the_models_own_tokenizer(scorers) -> None:
    engine = scorers["prefix-shared"].engine
    assert isinstance(engine, LlamaCppYesNoEngine)
    tokenizer = engine.tokenizer
    assert isinstance(tokenizer, LlamaCppTokenizer)
    assert engine.positive_id == engine.llm.tokenize(b"Yes", add_bos=False)[0] != engine.negative_id
    assert tokenizer.convert_ids_to_tokens([engine.positive_id, engine.negative_id]) == ["Yes", "No"]
    with pytest.raises(ConfigError, match=r"LlamaCppTokenizer .*qwen2\.5-coder-0\.5b.* encodes 'Zorblatically' as \d+ tokens"):
        single_token_id(tokenizer, "Zorblatically", "test")
    judge = CausalJudge(backend="llama-cpp", model=OFFLINE_QWEN_0_5B, n_threads=2, positive_token="Zorblatically")
    with pytest.raises(ConfigError, match="exactly one token"):
        judge.warm_up()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize(("size", "model"), [("0.5b", OFFLINE_QWEN_0_5B), ("1.5b", OFFLINE_QWEN_1_5B)])
def test_the_shipped_exit_templates_are_the_models_chat_template(size: str, model: str) -> None:
    import llama_cpp

    from ragsift.lm.llamacpp_model import gguf_path

    config = load_config(ROOT / "configs" / f"exit-qwen-{size}.toml")
    assert config.compressor is not None
    scorer = config.compressor["scorer"]
    assert scorer["backend"] == "llama-cpp" and scorer["model"] == model
    assert config.compressor["selector"] == {"name": "threshold", "threshold": 0.5}
    vocab = llama_cpp.Llama(model_path=gguf_path(model, "test"), vocab_only=True, verbose=False)
    try:
        rendered = chat_prompt(LlamaCppTokenizer(vocab, model), EXIT_USER, None, True, "test")
    finally:
        vocab.close()
    assert scorer["template"] == rendered
    YesNoTemplate.parse(rendered)


@pytest.mark.integration
@pytest.mark.slow
def test_reuse_stays_exact_across_batch_shapes(scorers) -> None:
    """The shapes where llama.cpp's CPU kernels round differently: a prompt of fewer than 8 tokens
    that starts a longer one, a prompt 3 tokens past a 512-token batch, one sharing all but its
    last 3 tokens with another, a duplicate, and a call that starts from the previous call's cache."""
    engine = scorers["prefix-shared"].engine
    assert isinstance(engine, LlamaCppYesNoEngine)
    text = (ROOT / "ragsift" / "lm" / "engine.py").read_text()
    base = engine.tokenizer.encode(text, add_special_tokens=False)[:700]
    id_lists = [base[:6], base[:515], base[:600], base[:597], base[:40], base[:6], [base[3], *base[100:130]]]
    prompts = [EncodedPrompt((), tuple(ids)) for ids in id_lists]
    tree = engine.probabilities(prompts, "auto")
    tokens = engine.stats["tokens"]
    alone = engine.probabilities(prompts, "separate")
    assert np.abs(tree - alone).max() <= 1e-4
    assert tree[0] == tree[5] and tokens < 0.5 * sum(len(p) for p in prompts)
    again = engine.probabilities(prompts[1:3], "auto")  # after the separate run's cache
    assert np.abs(again - alone[1:3]).max() <= 1e-4 and engine.stats["reused_tokens"] > 500
