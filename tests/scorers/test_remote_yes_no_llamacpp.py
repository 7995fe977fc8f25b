"""The ``remote-yes-no`` scorer against the real llama.cpp server (SmolLM2-135M-Instruct Q4_1 GGUF,
as the reader tests start it), compared with the local ``causal-yes-no`` scorer on the same GGUF.

The local scorer dequantises the GGUF into fp32 weights for transformers; llama.cpp computes with
the Q4_1 weights themselves (and 8-bit quantised activations in its matrix products). The server
reads the same prompt token ids as the local encoder makes (checked below, through llama.cpp's
/extras/tokenize and the completion's prompt token count), so the difference is numerics. Measured on these 9
sentences (2026-12-01, a shared 2-core CPU): largest |remote - local| 0.036, mean 0.015; the tolerance is
0.06.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llamacpp_server import LlamaCppServer, llamacpp_server

from ragsift.datasets import load_examples
from ragsift.registry import build_plugin
from ragsift.scorers.remote_yes_no import RemoteScoringError, RemoteYesNoScorer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: largest accepted |P_remote - P_local| per sentence (quantised vs dequantised arithmetic)
TOLERANCE = 0.06


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    with llamacpp_server(tmp_path_factory.mktemp("llamacpp")) as running:
        yield running


@pytest.fixture(scope="module")
def scorer_spec() -> dict[str, Any]:
    """The offline EXIT scorer (SmolLM2 GGUF, its chat format)."""
    return tomllib.loads((ROOT / "configs" / "exit-offline.toml").read_text())["compressor"]["scorer"]


@pytest.fixture(scope="module")
def case() -> tuple[Any, list[Any]]:
    """A training-sample question (never the evaluation file) with its first two documents' sentences."""
    (example,) = load_examples(ROOT / "tests" / "data" / "hotpotqa-train-sf100.json", limit=1)
    splitter = build_plugin("splitter", {"name": "sentencizer"})
    sentences = [s for s in splitter.split_all(example.documents) if s.doc_index < 2][:9]
    return example, sentences


@pytest.fixture(scope="module")
def exact(server: LlamaCppServer, scorer_spec: dict[str, Any], case: tuple[Any, list[Any]]) -> tuple[np.ndarray, RemoteYesNoScorer]:
    remote = RemoteYesNoScorer(base_url=server.base_url, template=scorer_spec["template"], top_logprobs=20, max_concurrency=2)
    return remote.score(*case), remote


def test_remote_scores_equal_the_local_scorer_within_tolerance(server: LlamaCppServer, scorer_spec: dict[str, Any],
                                                                case: tuple[Any, list[Any]], exact: Any) -> None:
    example, sentences = case
    remote_scores, remote = exact
    local = build_plugin("scorer", dict(scorer_spec))
    local_scores = local.score(example, sentences)
    # the same prompt tokens on both sides: the server's count equals the local encoder's
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="no-key")
    reply = client.completions.create(model=server.model, prompt=remote.prompt(example, sentences[0]), max_tokens=1, temperature=0)
    assert reply.usage is not None and reply.usage.prompt_tokens == len(local.prompts(example, sentences[:1])[0].ids)
    import httpx

    tokenized = httpx.post(f"http://127.0.0.1:{server.port}/extras/tokenize", json={"input": remote.prompt(example, sentences[0])},
                           timeout=60).json()["tokens"]
    assert tokenized == list(local.prompts(example, sentences[:1])[0].ids)
    difference = np.abs(remote_scores - local_scores)
    print(f"\nremote vs local on {len(sentences)} sentences: max |diff| {difference.max():.4f}, mean {difference.mean():.4f}")
    print("remote", np.round(remote_scores, 4).tolist(), "\nlocal ", np.round(local_scores, 4).tolist())
    assert remote.stats["floored"] == 0 and len(sentences) >= 6
    assert difference.max() <= TOLERANCE


def _one_missing(tops: list[dict[str, float]], k: int) -> list[int]:
    """Sentences whose top-k (by the exact run's top 20) holds exactly one of Yes and No."""
    out = []
    for i, top in enumerate(tops):
        ranked = sorted(top, key=lambda t: -top[t])[:k]
        if ("Yes" in ranked) != ("No" in ranked):
            out.append(i)
    return out


def test_too_few_logprobs_trigger_the_rule(server: LlamaCppServer, scorer_spec: dict[str, Any], case: tuple[Any, list[Any]],
                                           exact: Any) -> None:
    example, sentences = case
    exact_scores, exact_scorer = exact
    tops = exact_scorer.last_logprobs
    assert all("Yes" in top and "No" in top for top in tops)
    k = next((k for k in range(1, 6) if _one_missing(tops, k)), None)
    assert k is not None, "no sentence with exactly one of Yes/No in its top 5"
    chosen = _one_missing(tops, k)
    subset = [sentences[i] for i in chosen]
    params = {"base_url": server.base_url, "template": scorer_spec["template"], "top_logprobs": k, "max_concurrency": 2}
    with pytest.raises(RemoteScoringError, match=f"not among the top {k} next-token logprobs"):
        RemoteYesNoScorer(**params).score(example, subset)  # missing = "error", the default
    floored = RemoteYesNoScorer(**params, missing="floor")
    bounds = floored.score(example, subset)
    assert floored.stats["floored"] == len(subset)
    for i, bound in zip(chosen, bounds, strict=True):
        ranked = sorted(tops[i], key=lambda t: -tops[i][t])[:k]
        if "Yes" in ranked:  # No missing: its logprob raised to the floor, so the score can only be lower
            assert bound <= exact_scores[i] + 1e-4
        else:  # Yes missing: an upper bound
            assert bound >= exact_scores[i] - 1e-4
    assert floored.stats["lower_bounds"] + floored.stats["upper_bounds"] == len(subset)


def test_the_exit_remote_config_scores_through_the_server(server: LlamaCppServer, case: tuple[Any, list[Any]],
                                                          exact: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/exit-remote.toml with the URL from $RAGSIFT_YES_NO_URL: EXIT's pipeline end to end."""
    from ragsift.api import load_compressor
    from ragsift.types import Example

    example, sentences = case
    monkeypatch.setenv("RAGSIFT_YES_NO_URL", server.base_url)
    compressor = load_compressor("exit-remote")
    two_documents = Example(id=example.id, question=example.question, answers=example.answers, documents=example.documents[:2])
    result = compressor.compress(two_documents)
    by_id = {s.id: score for s, score in zip(result.sentences, result.scores, strict=True)}
    exact_scores, _ = exact
    for sentence, score in zip(sentences, exact_scores, strict=True):  # the same scores as the scorer alone
        assert by_id[sentence.id] == pytest.approx(score, abs=1e-4)
    assert set(result.kept) == {i for i, score in enumerate(result.scores) if score >= 0.5}  # EXIT's threshold
    assert compressor.scorer.config()["base_url"] == server.base_url
