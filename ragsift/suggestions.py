"""Did-you-mean hints for unknown names (configs, plugins, stages): one helper, one wording."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" Did you mean 'X'?"`` for the known name closest to ``name`` (``difflib``'s default
    cutoff, 0.6), else ``""``: appended to an error message that already lists what is known."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" Did you mean '{close[0]}'?" if close else ""
