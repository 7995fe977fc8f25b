"""Writing one benchmark's section of BENCHMARKS.md, leaving the other sections alone."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_section"]


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
