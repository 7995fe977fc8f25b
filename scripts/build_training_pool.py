"""Build ragsift's training / development pool of HotpotQA questions (data/training/).

    python scripts/build_training_pool.py [--shared ../shared/data] [--out data/training] [--check]

Sources (all HotpotQA, Yang et al. 2018, CC BY-SA 4.0; see data/training/README.md):

- sentence-labelled (official HotpotQA JSON): hotpotqa-dev-rpt1k.json, hotpotqa-train-sf100.json,
  hotpotqa-dev-ircot52-sf.json
- paragraph-labelled (IRCoT JSONL): hotpotqa-dev-ircot488.jsonl

Rules:

- Questions are deduplicated by id; a question with sentence labels is kept once, in its
  sentence-labelled form (first file in the order above wins), and dropped from the
  paragraph-labelled pool.
- The development split is fixed by the id alone: a sentence-labelled question is a development
  question when ``sha256("ragsift-dev-split:" + id)`` read as a fraction of 2**256 is below
  ``DEV_FRACTION``. Adding or removing other questions never moves a question between splits.
  Paragraph-labelled questions are training data only (development questions need sentence
  labels to choose thresholds on).
- The evaluation file (ragsift/data/hotpotqa-dev-sf100.json) must share no id and no question
  text with any output; the script fails if it does.
- ``hotpotqa-dev-ircot52.jsonl`` holds the IRCoT form of the 52 questions of
  hotpotqa-dev-ircot52-sf.json (both labels exist for them: the paragraph-to-sentence labeler is
  measured on them).

Records are written unchanged (the source's JSON objects), sorted by id, so a rebuild gives the
same bytes; ``manifest.json`` lists counts and SHA-256 of every input and output. ``--check``
rebuilds in memory and fails when the shipped files differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SENTENCE_FILES = ("hotpotqa-dev-rpt1k.json", "hotpotqa-train-sf100.json", "hotpotqa-dev-ircot52-sf.json")
PARAGRAPH_FILE = "hotpotqa-dev-ircot488.jsonl"
EVALUATION_FILE = ROOT / "ragsift" / "data" / "hotpotqa-dev-sf100.json"
DEV_FRACTION = 0.175
SALT = "ragsift-dev-split:"

OUTPUTS = {
    "train": "hotpotqa-train-pool.json",
    "dev": "hotpotqa-dev-pool.json",
    "paragraph": "hotpotqa-paragraph-pool.jsonl",
    "ircot52": "hotpotqa-dev-ircot52.jsonl",
}


def is_development(question_id: str) -> bool:
    """The fixed development split: a hash of the id, nothing else."""
    digest = hashlib.sha256((SALT + question_id).encode()).digest()
    return int.from_bytes(digest, "big") < DEV_FRACTION * 2**256


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def build(shared: Path) -> dict[str, bytes]:
    """Every output file's bytes (manifest included)."""
    evaluation = json.loads(EVALUATION_FILE.read_text(encoding="utf-8"))
    eval_ids = {r["_id"] for r in evaluation}
    eval_questions = {_norm(r["question"]) for r in evaluation}

    sentence: dict[str, dict[str, Any]] = {}
    inputs: dict[str, dict[str, Any]] = {}
    for name in SENTENCE_FILES:
        raw = (shared / name).read_bytes()
        records = json.loads(raw)
        inputs[name] = {"sha256": _sha256(raw), "records": len(records)}
        for record in records:
            sentence.setdefault(record["_id"], record)
    raw = (shared / PARAGRAPH_FILE).read_bytes()
    ircot = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    inputs[PARAGRAPH_FILE] = {"sha256": _sha256(raw), "records": len(ircot)}
    ircot52_ids = {r["_id"] for r in json.loads((shared / "hotpotqa-dev-ircot52-sf.json").read_text(encoding="utf-8"))}

    paragraph: dict[str, dict[str, Any]] = {}
    for record in ircot:
        qid = str(record["question_id"])
        if qid not in sentence:
            paragraph.setdefault(qid, record)
    ircot52 = {str(r["question_id"]): r for r in ircot if str(r["question_id"]) in ircot52_ids}
    if len(ircot52) != len(ircot52_ids):
        raise SystemExit(f"expected the IRCoT form of all {len(ircot52_ids)} ircot52-sf questions; found {len(ircot52)}")

    for pool, key, text in ((sentence, "_id", "question"), (paragraph, "question_id", "question_text")):
        for record in pool.values():
            if str(record[key]) in eval_ids or _norm(record[text]) in eval_questions:
                raise SystemExit(f"question {record[key]} is in the evaluation file {EVALUATION_FILE}; refusing to build")

    dev = [sentence[i] for i in sorted(sentence) if is_development(i)]
    train = [sentence[i] for i in sorted(sentence) if not is_development(i)]
    out = {
        OUTPUTS["train"]: _json_array(train),
        OUTPUTS["dev"]: _json_array(dev),
        OUTPUTS["paragraph"]: _jsonl([paragraph[i] for i in sorted(paragraph)]),
        OUTPUTS["ircot52"]: _jsonl([ircot52[i] for i in sorted(ircot52)]),
    }
    manifest = {
        "built_by": "scripts/build_training_pool.py",
        "development_split": f"sha256('{SALT}' + id) / 2**256 < {DEV_FRACTION}",
        "evaluation_file": {"path": str(EVALUATION_FILE.relative_to(ROOT)), "sha256": _sha256(EVALUATION_FILE.read_bytes()),
                            "ids": len(eval_ids), "shared_ids": 0},
        "inputs": inputs,
        "outputs": {
            name: {"sha256": _sha256(data), "records": _count(name, data)} for name, data in sorted(out.items())
        },
    }
    out["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    return out


def _json_array(records: list[dict[str, Any]]) -> bytes:
    # one record per line inside the array: readable diffs, and the hotpotqa loader reads it
    return ("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n").encode()


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def _count(name: str, data: bytes) -> int:
    if name.endswith(".jsonl"):
        return sum(1 for line in data.splitlines() if line.strip())
    return len(json.loads(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data", help="folder with the source files")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "training", help="output folder")
    parser.add_argument("--check", action="store_true", help="compare a rebuild with the files in --out; write nothing")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        parser.error(f"no source folder {args.shared}; pass --shared")
    files = build(args.shared)
    if args.check:
        differ = [n for n, data in files.items() if not (args.out / n).is_file() or (args.out / n).read_bytes() != data]
        if differ:
            print(f"differs from a rebuild: {', '.join(differ)}", file=sys.stderr)
            return 1
        print(f"{args.out}: identical to a rebuild from {args.shared}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    manifest = json.loads(files["manifest.json"])
    for name, info in manifest["outputs"].items():
        print(f"{args.out / name}: {info['records']} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
