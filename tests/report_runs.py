"""Small real run directories for the report tests (module-scoped fixtures build them once)."""

from __future__ import annotations

import json
from pathlib import Path

from openai_fakes import fake_openai_server

from ragsift.datasets import load_examples
from ragsift.evaluation.run.runner import RunOptions, run_evaluation

DATA = Path(__file__).parent / "data"
HOTPOT = DATA / "hotpotqa-train-sf100.json"  # development data with gold evidence

COMPRESSORS = """
[compressors.none]
name = "none"
[compressors.oracle]
name = "oracle"
[compressors.bm25]
name = "bm25"
"""

#: text a browser would run or render as markup if the report did not escape it
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def run(tmp: Path, body: str, data: Path = HOTPOT, limit: int = 5, evaluation: str = "",
        **kw: object) -> tuple[Path, list[str]]:
    """Evaluate ``body`` (compressors, reader) on the first ``limit`` examples of ``data``
    (``evaluation``: more lines of its [evaluation] table); returns the run directory and what
    the run printed."""
    config = tmp / "run.toml"
    config.write_text(f'[dataset]\nname = "hotpotqa"\npath = "{data}"\n{body}\n'
                      f"[evaluation]\nlimit = {limit}\nwarmup = 0\nbootstrap_samples = 200\n{evaluation}\n")
    echoed: list[str] = []
    out = tmp / "run"
    run_evaluation(RunOptions(config=config, out=out, progress=False, echo=echoed.append, **kw))  # type: ignore[arg-type]
    return out, echoed


def reader_run(tmp: Path, limit: int = 6, evaluation: str = "") -> tuple[Path, list[str]]:
    """A run with a fake OpenAI-compatible reader that answers right exactly when the gold answer
    is in the context it is given (so compressors that drop it lose EM) and counts the prompt's
    words as its prompt tokens."""
    gold = {ex.question: ex.answers[0] for ex in load_examples(HOTPOT, limit=limit)}

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        question = body["messages"][-1]["content"].removeprefix("Query: ").removesuffix("\nAnswer:")
        context = " ".join(m["content"] for m in body["messages"][:-1])
        return gold[question] if gold[question].lower() in context.lower() else "I do not know"

    with fake_openai_server([200], answer, count_words=True) as server:
        return run(tmp, COMPRESSORS + f"""
[reader]
name = "openai"
base_url = "{server.base_url}"
model = "fake"
max_retries = 0
""", limit=limit, evaluation=evaluation)


def hostile_dataset(path: Path) -> Path:
    """Two HotpotQA-format questions whose question, titles, sentences and answer hold markup."""
    records = [{
        "_id": f"evil-{i}", "type": "bridge", "level": "easy",
        "question": f"Which tag is {HOSTILE} number {i}?",
        "answer": f"<b>tag {i}</b>",
        "supporting_facts": [[f"Title {HOSTILE}", 1]],
        "context": [[f"Title {HOSTILE}", ["First & plain sentence.", f" The answer is <b>tag {i}</b> {HOSTILE}."]],
                    ["Other", ["Nothing here.", " Still nothing </p></details>."]]],
    } for i in range(2)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path
