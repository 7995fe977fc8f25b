"""``ragsift datasets``: the named datasets (:mod:`ragsift.datasets.catalogue`), as ``ragsift plugins``
lists the plugins."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ragsift.cli_types import one_of
from ragsift.datasets.catalogue import CATALOGUE, DEVELOPMENT, EVALUATION, NamedDataset
from ragsift.errors import ConfigError

__all__ = ["add_datasets_command", "describe_datasets"]

_EPILOG = """examples:
  ragsift datasets
  ragsift datasets --role development
  ragsift datasets --json
  ragsift evaluate -c configs/quickstart.toml --data hotpotqa-eval --no-reader --limit 5

role: development (choose k, thresholds, prompts on it) or evaluation (never trained, tuned or chosen
on: 'ragsift tune', 'train' and 'label' refuse it, by name, content, question id and question text).
labels: sentence (supporting-fact sentences: sentence-level evidence metrics) or paragraph
(supporting paragraphs only: no sentence-level evidence metrics). docs/datasets.md."""


def _path(dataset: NamedDataset) -> str | None:
    try:
        return str(dataset.path())
    except ConfigError:  # a source-tree dataset in an installed package
        return None


def describe_datasets(role: str | None = None) -> list[dict[str, Any]]:
    """The named datasets (of ``role``) as JSON-ready dicts: the catalogue's fields, plus ``path``
    (None where this installation lacks the file) and ``available``."""
    out = []
    for dataset in CATALOGUE.values():
        if role is None or dataset.role == role:
            path = _path(dataset)
            out.append({**dataset.to_dict(), "path": path, "available": path is not None})
    return out


def _cmd_datasets(args: argparse.Namespace) -> int:
    rows = describe_datasets(args.role)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'name':<16} {'role':<12} {'n':>4}  {'labels':<9} {'format':<9} licence")
    for row in rows:
        print(f"{row['name']:<16} {row['role']:<12} {row['n']:>4}  {row['labels']:<9} {row['format']:<9} {row['licence']}")
        print(f"    {row['description']}")
        print(f"    source: {row['source']}")
        print(f"    file: {row['path'] or row['file'] + ' (in the source tree only: not in this installation)'}")
    return 0


def add_datasets_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``datasets`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "datasets", help="list the named datasets (--data NAME)", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EPILOG,
        description="List the datasets ragsift ships under a name, usable wherever a data file is (--data NAME, a "
        "config's [dataset] path): role, number of questions, label granularity, format, source and licence.",
    )
    p.add_argument("--role", type=one_of([DEVELOPMENT, EVALUATION], "role"), help="only development or evaluation datasets")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_datasets)
    return p
