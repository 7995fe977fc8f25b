"""What ``ragsift compare`` checks before it combines runs (:mod:`ragsift.evaluation.run.compare`):
that they ran on the same data, with the same reader and metrics (and limit), and finished. Each
refusal names both run folders and what differs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError

__all__ = ["check_comparable", "refuse_unfinished", "RUNTIME_KEYS"]

#: reader settings that say where and how fast it ran, not what it answers: runs that differ only
#: in these are compared (a server moved to another port, more threads, a longer timeout)
RUNTIME_KEYS = frozenset({
    "server", "base_url", "api_key_env", "timeout", "max_concurrency", "max_retries", "backoff_seconds",
    "max_backoff_seconds", "n_threads", "omp_wait_policy", "llama_cpp_python", "batch_size", "device", "path",
})

_MISSING = "(absent)"


def _flat(value: Any, prefix: str = "", drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A nested table as dotted keys -> values (lists kept whole), without the keys in ``drop``."""
    if not isinstance(value, Mapping) or not value:
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        if str(key) not in drop:
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key), drop))
    return out


def _show(value: Any) -> str:
    text = value if value == _MISSING else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _differences(a: Any, b: Any, drop: frozenset[str] = frozenset()) -> list[str]:
    fa, fb = _flat(a, drop=drop), _flat(b, drop=drop)
    keys = dict.fromkeys([*fa, *fb])
    return [f"{key + ': ' if key else ''}{_show(fa.get(key, _MISSING))} vs {_show(fb.get(key, _MISSING))}"
            for key in keys if fa.get(key, _MISSING) != fb.get(key, _MISSING)]


def _data(m: Mapping[str, Any]) -> dict[str, Any]:
    recorded = m.get("input") or {}
    return {"sha256": recorded.get("sha256"), "format": recorded.get("format"),
            "datasets": [d.get("name") for d in recorded.get("datasets") or []] or None}


def _reader(m: Mapping[str, Any]) -> dict[str, Any]:
    run = m.get("run") or {}
    return {"no_reader": bool(run.get("no_reader")), "reader": m.get("reader"),
            "reader_limit": (run.get("evaluation") or {}).get("reader_limit")}


def _metrics(m: Mapping[str, Any]) -> dict[str, Any]:
    return {str(spec.get("name")): {k: v for k, v in spec.items() if k != "name"} or "used" for spec in m.get("metrics") or []}


#: (what, how to read it from a manifest, keys left out, what to do about it)
_CHECKS: tuple[tuple[str, Callable[[Mapping[str, Any]], Any], frozenset[str], str], ...] = (
    ("the input data", _data, frozenset(), "a comparison pairs the questions of one data set"),
    ("the reader", _reader, RUNTIME_KEYS, "accuracy from two readers is not one comparison (where it ran may differ: "
     + ", ".join(sorted(RUNTIME_KEYS)) + ")"),
    ("the metrics", _metrics, frozenset(), "the tables would not hold the same columns"),
)


def check_comparable(runs: Sequence[tuple[Path, Mapping[str, Any]]], *, common: bool = False) -> None:
    """Refuse runs whose data, reader or metrics differ from the first run's (and, unless
    ``common``, whose limit differs), naming both folders and the first differences."""
    first_dir, first = runs[0]
    checks = list(_CHECKS)
    if not common:
        checks.append(("the limit", lambda m: (m.get("run") or {}).get("limit"), frozenset(),
                       "they hold different questions; pass --common-questions to pair on those both answered"))
    for run_dir, manifest in runs[1:]:
        for what, get, drop, why in checks:
            differences = _differences(get(first), get(manifest), drop)
            if differences:
                shown = "; ".join(differences[:3]) + (f"; and {len(differences) - 3} more" if len(differences) > 3 else "")
                if get is _data:  # name the files too: the hashes alone do not say which data
                    what += f" ({(first.get('input') or {}).get('path')} vs {(manifest.get('input') or {}).get('path')})"
                raise ConfigError(f"cannot compare: {first_dir} and {run_dir} differ in {what}: {shown}; {why}.")


def refuse_unfinished(runs: Sequence[tuple[Path, Mapping[str, Any]]]) -> None:
    """Refuse a run that did not finish (paused, failed, interrupted, running) or that is one
    shard of a run: it holds only some of the questions."""
    for run_dir, manifest in runs:
        shard = (manifest.get("run") or {}).get("shard")
        if shard:
            raise ConfigError(f"cannot compare: {run_dir} is shard {shard.get('index')}/{shard.get('count')} of a run; "
                              "merge its shards first ('ragsift merge'), or pass --common-questions to pair on the "
                              "questions every run answered.")
        status = manifest.get("status")
        if status != "complete":
            raise ConfigError(f"cannot compare: {run_dir} did not finish (status: {status}); finish it with the same "
                              "'ragsift evaluate ... --resume', or pass --common-questions to pair on the questions "
                              "every run answered.")
