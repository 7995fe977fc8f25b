"""Issue 50's coverage check on a finished run: for each conformal compressor of a run directory, the
observed coverage of its calibrated target (Clopper-Pearson interval) against 1 - alpha, the tokens
it kept, and a note when it was calibrated on another dataset than the one evaluated.

    ragsift evaluate -c configs/tuned/bridge-conformal-hotpotqa-a10.toml --data hotpotqa-eval --no-reader \\
        --out runs/conformal-hotpotqa-a10
    ragsift evaluate -c configs/tuned/bridge-order.toml --data hotpotqa-eval --no-reader --out runs/bridge-k3-hotpotqa
    python benchmarks/conformal_coverage.py --data hotpotqa-eval --run runs/conformal-hotpotqa-a10 \\
        --run runs/bridge-k3-hotpotqa

``--data`` is the file or named dataset the runs read (the same one). Every conformal compressor of
the runs is checked against its own calibration (target, level, alpha, dataset); every other
compressor against ``--target`` / ``--level`` / ``--alpha`` (default: documents, document, 0.1), for
comparison (e.g. the fixed k = 3 ranker). docs/conformal.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragsift.calibration.coverage import conformal_coverage, coverage_check, kept_from_record
from ragsift.datasets import resolve_data
from ragsift.evaluation.predictions import prediction_path, read_records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, type=Path, action="append", help="a run directory (repeatable)")
    parser.add_argument("--data", required=True, help="the file or named dataset the runs read")
    parser.add_argument("--target", default="documents", choices=["sentences", "documents", "answer"],
                        help="for the compressors that are not conformal")
    parser.add_argument("--level", default="document", choices=["sentence", "document"])
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    source = resolve_data(None, args.data)
    examples = list(source.load())
    by_id = {ex.id: ex for ex in examples}
    evaluated = source.name or args.data
    out = {}
    for run in args.run:
        manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        for label, spec in manifest["config"]["compressors"].items():
            records = read_records(prediction_path(run, label))
            if not records:
                continue
            selector = spec.get("selector") or {}
            check = conformal_coverage(examples, records, selector, evaluated)
            if check is None:  # not conformal: the comparison's target
                tokens = [(r.get("metrics") or {}).get("compressed_tokens") for r in records]
                check = coverage_check([(by_id[str(r["id"])], *kept_from_record(r)) for r in records], args.target,
                                       args.level, args.alpha, tokens=None if None in tokens else tokens)
            out[f"{run.name}/{label}"] = check
    if args.json:
        print(json.dumps({label: check.to_dict() for label, check in out.items()}, indent=2))
    else:
        for label, check in out.items():
            print(f"{label}: {check.describe()}")


if __name__ == "__main__":
    main()
