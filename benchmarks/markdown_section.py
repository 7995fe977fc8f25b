"""Writing one benchmark's section of BENCHMARKS.md, leaving the other sections alone."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_section", "run_dir_main"]


def write_section(path: Path, heading: str, body: str) -> None:
    """Replace the section that starts with ``heading`` (a ``## `` line) up to the next ``## ``
    heading, or append it when the file has none."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    section = f"{heading}\n\n{body}\n"
    start = text.find(heading + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("\n" + text[nxt + 1 :] if nxt >= 0 else "")
    path.write_text(text)


def run_dir_main(argv: list[str] | None, doc: str | None, heading: str, section: Callable[[Path], str]) -> int:
    """The command line of a script that makes its section from one run folder: prints
    ``section(run_dir)``, and with ``--write`` replaces ``heading``'s section of BENCHMARKS.md."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--write", nargs="?", type=Path, const=Path(__file__).parents[1] / "BENCHMARKS.md",
                        help="replace this section of BENCHMARKS.md (or of the file given)")
    args = parser.parse_args(argv)
    body = section(args.run_dir)
    print(body)
    if args.write:
        write_section(args.write, heading, body)
    return 0
