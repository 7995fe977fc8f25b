"""Checks shared by the framework adapter tests (tests/integrations): the configs they run, the
metadata they give each document, and the check of an adapter's output against the record that
``ragsift compress`` wrote for the same example.

Each adapter test turns its framework's output into ``(input index, text, metadata)`` triples;
:func:`check_against_cli` derives what they must be from the CLI record on its own (it does not
use :mod:`ragsift.integrations.sifting`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragsift.types import Example

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {name: ROOT / "configs" / f"{name}.toml" for name in ("bm25", "embedding")}
N_EXAMPLES = 3

#: an adapter's output, framework-neutral: (position of the document in the input, text, metadata)
Output = Sequence[tuple[int, str, dict[str, Any]]]


def original_metadata(example: Example, i: int) -> dict[str, Any]:
    """The metadata the tests give document ``i`` of ``example`` (it must come back unchanged)."""
    return {"title": example.documents[i].title, "source": "hotpotqa", "retrieval_rank": i}


def check_against_cli(output: Output, example: Example, record: dict[str, Any]) -> None:
    """``output`` holds exactly the documents of ``example`` that keep a sentence in the CLI's
    ``record``, in input order, with the kept sentences' text and ragsift's metadata."""
    assert record["id"] == example.id
    kept: dict[int, list[dict[str, Any]]] = {}
    totals: dict[int, int] = {}
    for s in record["sentences"]:
        totals[s["doc"]] = totals.get(s["doc"], 0) + 1
        if s["kept"]:
            kept.setdefault(s["doc"], []).append(s)
    assert kept, "the sample example kept nothing: pick another"
    assert len(kept) < len(example.documents), "no document was dropped: the check would miss a failure to drop"

    assert [i for i, _, _ in output] == sorted(kept)  # one per document that keeps a sentence, in input order
    for i, text, metadata in output:
        sentences = sorted(kept[i], key=lambda s: s["start"])
        original = example.documents[i].text
        assert text == " ".join(s["text"] for s in sentences)
        assert text.strip()
        assert [original[s["start"]:s["end"]] for s in sentences] == [s["text"] for s in sentences]
        assert {k: v for k, v in metadata.items() if k not in ("ragsift", "relevance_score")} == original_metadata(example, i)
        best = max(s["score"] for s in sentences)
        assert metadata.get("relevance_score", best) == best  # LangChain's rerankers' key, where an adapter sets it
        assert metadata["ragsift"] == {
            "compressor": record["compressor"],
            "sentences": [{"index": int(s["id"].split(":")[1]), "start": s["start"], "end": s["end"],
                           "score": s["score"], "rank": s["rank"]} for s in sentences],
            "score": best,
            "sentences_total": totals[i],
            "original_chars": len(original),
        }
