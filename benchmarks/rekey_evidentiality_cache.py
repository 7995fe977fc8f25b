"""Re-key a reader cache written by the evidentiality labeler before issue 25.

The labeler's old cache (``labelers/reader_cache.CachedReader``) keyed an answer by the reader's
name and config, the question and the context; the one reader cache it now shares with the
evaluation (:class:`ragsift.readers.caching.CachingReader`) also keys it by the hashes of the
model files the config names (so a retrained model under the same path is asked again). Old keys
are hashes and cannot be read back, so this script replays the labeling run: it labels the same
examples with the same params, answering every reader call from the OLD cache by its old key
(never from a model: a call the old cache cannot answer is an error), and the new cache records
each answer under its new key. It then checks that the records it produced are byte for byte
the ones the old run wrote (``--records``), and writes the new cache only if they are.

    python benchmarks/rekey_evidentiality_cache.py \
        --manifest benchmarks/results/evidentiality/evi-qwen-200.jsonl.manifest.json \
        --records benchmarks/results/evidentiality/evi-qwen-200.jsonl \
        --old benchmarks/results/evidentiality/evi-qwen-cache.jsonl --limit 200 --out NEW.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ragsift.datasets import load_examples
from ragsift.disk_cache import JsonlStore
from ragsift.readers.base import ReaderAnswer
from ragsift.readers.caching import CachingReader
from ragsift.registry import build_plugin


def _old_key(identity: str, question: str, context: str) -> str:
    """The key of the labeler's cache before issue 25 (reader name and config, question, context)."""
    return hashlib.sha256(json.dumps([identity, question, context]).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, required=True, help="the label run's manifest (its labeler params)")
    parser.add_argument("--records", type=Path, required=True, help="the records that run wrote")
    parser.add_argument("--old", type=Path, required=True, help="its reader cache (old keys)")
    parser.add_argument("--input", type=Path, help="the examples (default: the manifest's input path)")
    parser.add_argument("--limit", type=int, required=True, help="the run's --limit")
    parser.add_argument("--out", type=Path, required=True, help="the re-keyed cache (a new file)")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"--out {args.out} exists; give a new file")
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    params = dict(manifest["labeler"]["config"])
    labeler = build_plugin("labeler", {"name": manifest["labeler"]["name"], **params, "cache": None}, "rekey")
    reader = build_plugin("reader", params["reader"], "rekey reader")  # never warmed up: no model is loaded
    identity = json.dumps([reader.registered_name or type(reader).__name__, reader.config()], sort_keys=True)
    old = {r["key"]: r for r in (json.loads(line) for line in args.old.read_text(encoding="utf-8").splitlines() if line)}

    def replay(questions: Sequence[str], contexts: Sequence[str]) -> list[ReaderAnswer]:
        out = []
        for q, c in zip(questions, contexts, strict=True):
            entry = old.get(_old_key(identity, q, c))
            if entry is None:
                raise SystemExit(f"{args.old}: no answer for a call of the replayed run (question {q!r}); not re-keyed")
            out.append(ReaderAnswer(entry["answer"], entry.get("prompt_tokens"), entry.get("completion_tokens"), 0.0))
        return out

    reader.answer_many = replay  # type: ignore[method-assign]
    tmp = args.out.with_name(args.out.name + ".partial")
    tmp.unlink(missing_ok=True)
    labeler._reader = CachingReader(reader, JsonlStore(tmp), params.get("batch_size"))
    source = args.input or Path(manifest["input"]["path"])
    lines = [json.dumps(r.to_record(), ensure_ascii=False) + "\n"
             for r in labeler.label(load_examples(source, limit=args.limit))]
    if "".join(lines).encode("utf-8") != args.records.read_bytes():
        tmp.unlink(missing_ok=True)
        print(f"the replayed records differ from {args.records}; not re-keyed", file=sys.stderr)
        return 1
    tmp.replace(args.out)
    report = labeler.report()
    print(f"{args.out}: {report['reader_calls']} answers re-keyed ({len(old)} in {args.old}; "
          f"{report['cache_hits']} repeated calls); the replayed records equal {args.records}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
