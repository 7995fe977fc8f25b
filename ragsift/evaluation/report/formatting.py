"""One formatting of every number of a summary (:mod:`ragsift.evaluation.report.summary`), shared
by the terminal table, ``summary.md`` and report.html: the tables' columns, cells, p-values, the
notes beside them and the primary comparison's lines, verdict first."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragsift.evaluation.report.power import POWER
from ragsift.evaluation.report.summary import (
    COLUMN_ORDER,
    LATENCY_STAGES,
    NOT_IN_TABLE,
    OUTCOME_METRICS,
    PROMPT_TOKENS,
    SECONDARY,
    SIGNIFICANCE,
    is_tested,
)

__all__ = ["format_table", "format_markdown", "summary_rows", "metric_columns", "test_method", "unpaired_note",
           "format_cell", "format_p", "Column", "result_columns", "diff_columns", "too_few_note", "primary_lines",
           "format_seconds", "mcnemar_rows", "family_note", "chosen_text", "mcnemar_left_out_note", "format_diff",
           "primary_verdict_line", "mdd_text", "mdd_note"]

@dataclass(frozen=True)
class Column:
    """A column of the results table: a metric (``values``), the reader's prompt tokens or a
    latency stage (``latency_ms:<stage>``, shown in seconds)."""

    key: str
    heading: str
    unit: str
    group: str  # outcome, efficiency, evidence, descriptive
    secondary: bool = False

    def stat(self, comp: Mapping[str, Any]) -> Mapping[str, float] | None:
        if self.key.startswith("latency_ms:"):
            return comp.get("latency_ms", {}).get(self.key.split(":", 1)[1])
        if self.key == PROMPT_TOKENS:
            return comp.get("prompt_tokens")
        return comp.get("values", {}).get(self.key)


def metric_columns(summary: Mapping[str, Any]) -> list[str]:
    """The metric keys of the tables, in :data:`COLUMN_ORDER` (others after, by name)."""
    present = [k for k in summary["metrics"] if k not in NOT_IN_TABLE]
    ordered = [k for k in COLUMN_ORDER if k in present]
    return ordered + sorted(k for k in present if k not in ordered)


def _group(key: str, meta: Mapping[str, Any]) -> str:
    if key in OUTCOME_METRICS:
        return "outcome"
    return "evidence" if is_tested(meta) else "descriptive"


def _heading(meta: Mapping[str, Any]) -> str:
    unit = meta["unit"]
    return meta["label"] if not unit or unit.lower() == meta["label"].lower() else f"{meta['label']} ({unit})"


def result_columns(summary: Mapping[str, Any]) -> list[Column]:
    """Outcome metrics first, then efficiency (prompt tokens, context tokens, end-to-end
    seconds), evidence, descriptive metrics and the compress / read seconds."""
    meta = summary["metrics"]
    keys = metric_columns(summary)
    comps = summary["compressors"].values()
    col = lambda k: Column(k, _heading(meta[k]), meta[k]["unit"], _group(k, meta[k]), k in SECONDARY)  # noqa: E731
    out = [col(k) for k in keys if k in OUTCOME_METRICS]
    if any("prompt_tokens" in c for c in comps):
        out.append(Column(PROMPT_TOKENS, "prompt tokens", "tokens", "efficiency"))
    if "compressed_tokens" in keys:
        out.append(Column("compressed_tokens", "context tokens", "tokens", "efficiency", True))
    stages = [s for s in ("total", "compress", "read") if any(s in c["latency_ms"] for c in comps)]
    if "total" in stages:
        out.append(Column("latency_ms:total", "end-to-end (s)", "s", "efficiency"))
    out += [col(k) for k in keys if k not in OUTCOME_METRICS and k != "compressed_tokens"]
    primary_latency = "total" not in stages
    out += [Column(f"latency_ms:{s}", f"{s} (s)", "s", "efficiency", not (primary_latency and s == "compress"))
            for s in stages if s != "total"]
    return out


def diff_columns(summary: Mapping[str, Any]) -> list[Column]:
    """The paired table's columns: the tested metrics (outcome first), then the descriptive ones."""
    meta = summary["metrics"]
    keys = metric_columns(summary)
    tested = [k for k in keys if is_tested(meta[k])]
    return [Column(k, meta[k]["label"], meta[k]["unit"], _group(k, meta[k]), k in SECONDARY)
            for k in tested + [k for k in keys if k not in tested]]


def _digits(unit: str) -> int:
    return 0 if unit == "tokens" else 1


def _second_digits(seconds: float) -> int:
    """Decimals that give 2-3 significant figures (at least 0, at most 6)."""
    if seconds == 0 or not math.isfinite(seconds):
        return 2
    return max(0, min(6, 2 - math.floor(math.log10(abs(seconds)))))


def format_seconds(ms: float, digits: int | None = None) -> str:
    seconds = ms / 1000
    return f"{seconds:.{_second_digits(seconds) if digits is None else digits}f}"


def format_cell(stat: Mapping[str, float] | None, unit: str, brackets: bool) -> str:
    """``mean [low, high]`` or ``mean±half-width``; unit ``s``: the stat is in ms, shown in seconds."""
    if not stat:
        return "-"
    if unit == "s":
        d = _second_digits(stat["mean"] / 1000)
        mean, low, high = (format_seconds(stat[k], d) for k in ("mean", "low", "high"))
        if brackets:
            return f"{mean} [{low}, {high}]"
        return f"{mean}±{format_seconds((stat['high'] - stat['low']) / 2, d)}"
    d = _digits(unit)
    if brackets:
        return f"{stat['mean']:.{d}f} [{stat['low']:.{d}f}, {stat['high']:.{d}f}]"
    half = (stat["high"] - stat["low"]) / 2
    return f"{stat['mean']:.{d}f}±{half:.{d}f}"


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def format_diff(summary: Mapping[str, Any], test: Mapping[str, Any] | None, key: str, unit: str, brackets: bool,
               mark_exact: bool) -> str:
    """Mean difference [CI] and p-values; ``*`` when the Holm-adjusted p is below SIGNIFICANCE.
    A descriptive metric: the difference and its interval only; a family no test can make
    significant (too few questions): the unadjusted p (summary.md) or none (terminal)."""
    if not test:
        return "-"
    d = _digits(unit)
    diff = f"{test['mean_difference']:+.{d}f}"
    interval = f"[{test['low']:+.{d}f}, {test['high']:+.{d}f}]"
    if test.get("descriptive"):
        return f"{diff} {interval}" if brackets else diff
    exact = " (exact)" if mark_exact and test["exact"] else ""
    if not summary["p_adjustment"].get("families", {}).get(key, {}).get("reachable", True):
        mdd = f" {mdd_text(test, unit)}" if test.get("mdd") is not None else ""
        return f"{diff} {interval} {format_p(test['p_value'])} (unadjusted){exact}" if brackets else diff + mdd
    star = "*" if test["p_holm"] < SIGNIFICANCE else ""
    if brackets:
        holm = "<0.001" if test["p_holm"] < 0.001 else f"{test['p_holm']:.3f}"
        return f"{diff} {interval} {format_p(test['p_value'])}, Holm {holm}{star}{exact}"
    mdd = f" {mdd_text(test, unit)}" if test.get("mdd") is not None else ""
    return f"{diff} {format_p(test['p_holm'])}{star}{exact}{mdd}"


def test_method(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """How the table's p-values were computed, and whether cells must say which are exact."""
    exact = {bool(t["exact"]) for tests in summary["comparisons"].values() for t in tests.values() if not t.get("descriptive")}
    limit = summary.get("exact_test_max_pairs", 16)
    sampled = f"{summary['bootstrap_samples']} random sign patterns"
    if not exact:
        return "two-sided sign-flip test (no comparison has 2 pairs)", False
    if exact == {True}:
        return "exact two-sided sign-flip test (all 2^n sign patterns)", False
    if exact == {False}:
        return f"two-sided sign-flip test, {sampled}", False
    return f"two-sided sign-flip test, exact (all 2^n sign patterns) where n <= {limit} pairs, " \
           f"marked (exact); else {sampled}", True


def unpaired_note(summary: Mapping[str, Any]) -> str | None:
    left_out = {label: max(t.get("unpaired", 0) for t in tests.values())
                for label, tests in summary["comparisons"].items() if tests}
    left_out = {label: k for label, k in left_out.items() if k}
    if not left_out:
        return None
    parts = ", ".join(f"{label}: {k}" for label, k in left_out.items())
    return (f"Pairs are matched by example id; examples that only one side has are left out of the paired "
            f"tests ({parts}).")


def family_note(summary: Mapping[str, Any]) -> str:
    """What the Holm families are, in one sentence."""
    families = summary["p_adjustment"].get("families", {})
    if not families:
        return "No tested metric has 2 paired examples."
    sizes = sorted({f["comparisons"] for f in families.values()})
    size = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    return (f"Holm's correction within each metric's family ({len(families)} families of {size} comparison(s): that "
            f"metric, every compressor against the baseline); descriptive columns (tokens, kept, empty) show the "
            f"difference and its interval, untested.")


def too_few_note(summary: Mapping[str, Any]) -> str | None:
    """One line when some family cannot reach the level whatever the data: its smallest
    attainable p-value, times the family's size (Holm's first step), is not below it."""
    families = summary["p_adjustment"].get("families", {})
    stuck = {k: f for k, f in families.items() if not f["reachable"]}
    if not stuck:
        return None
    meta = summary["metrics"]
    which = "every tested metric" if len(stuck) == len(families) else ", ".join(meta[k]["label"] for k in stuck)
    f = min(stuck.values(), key=lambda f: f["smallest_adjusted"])  # even the most favourable of them
    return (f"Too few questions to reach the level for {which}: with n = {f['n']} pairs the smallest attainable "
            f"p is {f['smallest_p']:.3g}, {f['smallest_adjusted']:.3g} after Holm over {f['comparisons']} "
            f"compressor(s), not below {SIGNIFICANCE}; no difference can be significant there, so Holm-adjusted "
            f"p-values are not shown (unadjusted ones are, in summary.md and report.html).")


def mdd_text(test: Mapping[str, Any] | None, unit: str = "%") -> str:
    """The MDD of a comparison as a short text (``"MDD 13.8"``; ``""`` when it has none)."""
    if not test or test.get("mdd") is None:
        return ""
    return f"MDD {test['mdd']:.{_digits(unit)}f}"


def mdd_note(summary: Mapping[str, Any]) -> str | None:
    """What the MDD beside each interval is, in one sentence (None when no comparison has one)."""
    if not any(t.get("mdd") is not None for tests in summary["comparisons"].values() for t in tests.values()):
        return None
    level = round(1 - summary["confidence"], 6)
    stratified = " (stratified by dataset)" if summary.get("strata") else ""
    return (f"MDD: the minimum detectable difference, the smallest true difference each comparison detects with "
            f"{POWER:.0%} power at its n and two-sided level {level:g}{stratified} (binary metrics from the share of "
            "questions on which the two sides disagree, others from the paired SD; docs/statistics.md). A difference "
            "that is not significant is no evidence of no effect: the run could only have seen differences of at "
            "least its MDD.")


def _unit_words(primary: Mapping[str, Any]) -> str:
    label = primary.get("metric_label") or str(primary.get("metric", "em")).upper()
    return f"{label} points"


def primary_verdict_line(summary: Mapping[str, Any]) -> str | None:
    """The primary test's verdict in one line, the word first (None without a primary test or a
    verdict): e.g. ``"NON-INFERIOR: bridge-ranked vs none on EM, lower 95% bound -1.2 > -3.0 (margin
    3.0 EM points, non-inferiority at one-sided alpha 0.05, paired t, n = 524)"``. report.html
    shows it first."""
    primary = summary.get("primary")
    if not primary or "verdict" not in primary:
        return None
    word, test = primary["verdict"], primary.get("test", "superiority")
    decision = primary.get("decision") or {}
    units = _unit_words(primary)
    alpha = primary.get("alpha", SIGNIFICANCE)
    who = f"{primary['compressor']} vs {primary['baseline']} on {primary.get('metric_label') or 'EM'}"
    n = primary.get("n")
    method = decision.get("method", "")
    seq = primary.get("sequential") or {}
    looks = seq.get("looks") or []
    if test == "superiority":
        conf = int(round(primary["confidence"] * 100))
        detail = (f"{primary['mean_difference']:+.1f} {units} [{primary['low']:+.1f}, {primary['high']:+.1f}] "
                  f"({conf}% interval), {format_p(primary['p_value'])}, superiority at two-sided alpha {alpha:g}")
    else:
        margin = float(primary.get("margin") or 0)
        low, high = decision.get("low", primary.get("bound")), decision.get("high")
        one_sided = int(round((1 - alpha) * 100))
        if test == "equivalence":
            both = int(round((1 - 2 * alpha) * 100))
            where = "inside" if word == "equivalent" else "not inside"
            detail = (f"{both}% interval [{low:+.1f}, {high:+.1f}] {where} (-{margin:g}, +{margin:g}) "
                      f"(TOST at alpha {alpha:g} each)")
        elif test.startswith("non-inferiority") and looks and looks[-1].get("bound") is not None:
            detail = _sequential_statistics(looks[-1], margin)  # the look's boundary, not the fixed-n 1.645
        elif word == "inferior":
            detail = (f"upper {one_sided}% bound {high:+.1f} < -{margin:g}")
        else:
            relation = "> 0" if word == "superior" else f"> -{margin:g}" if word == "non-inferior" else f"not > -{margin:g}"
            detail = f"lower {one_sided}% bound {low:+.1f} {relation}"
        detail += f" (margin {margin:g} {units}, {test} at one-sided alpha {alpha:g})" if test != "equivalence" else \
            f" (margin {margin:g} {units})"
    if looks:
        last = looks[-1]
        otherwise = "all looks done" if seq.get("stop") else "going on"
        stop = {"efficacy": "stopped for efficacy", "futility": "stopped for futility"}.get(seq.get("reason") or "",
                                                                                          otherwise)
        detail += f"; look {len(looks)} at {last['fraction']:.0%} of max n, {stop}"
    tail = ", ".join(x for x in (method, f"n = {n}" if n is not None else "") if x)
    return f"{word.upper()}: {who}, {detail}" + (f"; {tail}" if tail else "")


def _sequential_statistics(look: Mapping[str, Any], margin: float) -> str:
    """A look's non-inferiority (and superiority) statistics against its boundary: with looks, the
    fixed-n one-sided bound would overstate what the run has shown."""
    b = look["boundary"]
    detail = (f"non-inferiority z = {look['z']:.2f} {'>=' if look['z'] >= b else '<'} boundary {b:.2f} "
              f"(lower bound at the boundary {look['bound']:+.1f} {'>' if look['bound'] > -margin else 'not >'} "
              f"-{margin:g})")
    if look.get("z_superiority") is not None:
        zs = look["z_superiority"]
        detail += f", superiority z = {zs:.2f} {'>=' if zs >= b else '<'} {b:.2f}"
    return detail


def _look_line(look: Mapping[str, Any]) -> str:
    crossed = f", crossed ({look['crossed']})" if look.get("crossed") else ""
    n_text = f"n = {look['n']}, " if look.get("n") is not None else ""
    sup = f" (non-inferiority), superiority z = {look['z_superiority']:.2f}" if look.get("z_superiority") is not None else ""
    return f"  look at {look['fraction']:.0%}: {n_text}z = {look['z']:.2f}{sup}, boundary {look['boundary']:.2f}{crossed}"


def primary_lines(summary: Mapping[str, Any]) -> list[str]:
    """The primary comparison in a few plain lines, its verdict first (empty when none was declared)."""
    primary = summary.get("primary")
    if not primary:
        return []
    label = primary.get("metric_label") or "EM"
    head = f"primary comparison (declared before the evaluation): {primary['compressor']} vs {primary['baseline']} on {label}"
    if "error" in primary:
        return [head, f"  {primary['error']}"]
    lines = []
    verdict = None
    if primary.get("scope") == "dataset":  # one dataset of a suite: the declared decision is the pooled one
        head = (f"the primary comparison on this dataset alone, {primary['compressor']} vs {primary['baseline']} on "
                f"{label}: descriptive, no verdict (the declared test is pooled over the suite)")
    else:
        verdict = primary_verdict_line(summary)
    if verdict:
        lines.append(f"verdict: {verdict}")
    lines.append(head)
    conf = int(round(primary["confidence"] * 100))
    level = primary.get("level", SIGNIFICANCE)
    below = "below" if primary["significant"] else "not below"
    seen = ""
    if primary.get("mdd") is not None:  # the MDD reads "not significant" as what it is
        seen = (f"; this run could only have seen differences of at least {primary['mdd']:.1f} {_unit_words(primary)} "
                f"({POWER:.0%} power)" if not primary["significant"] else
                f"; MDD {primary['mdd']:.1f} {_unit_words(primary)} ({POWER:.0%} power)")
    lines.append(f"  {primary['mean_difference']:+.1f} {_unit_words(primary)} [{primary['low']:+.1f}, {primary['high']:+.1f}] "
                 f"({conf}% paired bootstrap), {format_p(primary['p_value'])} ({'exact ' if primary['exact'] else ''}sign-flip, "
                 f"n = {primary['n']}, no family correction): {below} {level}{seen}")
    lines += [_look_line(look) for look in (primary.get("sequential") or {}).get("looks") or []]
    chosen = primary.get("chosen") or {}
    if chosen:
        lines.append(f"  chosen: {chosen_text(chosen)}")
    return lines


def chosen_text(chosen: Mapping[str, Any]) -> str:
    """The record of when and on what the primary compressor was chosen, as one line."""
    parts = []
    if chosen.get("by"):
        parts.append(f"by {chosen['by']}")
    if chosen.get("created_at"):
        parts.append(f"on {chosen['created_at']}")
    if chosen.get("rule"):
        parts.append(f"rule '{chosen['rule']}'")
    dev = chosen.get("development") or {}
    if dev:
        parts.append(f"{dev.get('questions', '?')} development questions of {dev.get('path', '?')} "
                     f"(sha256 {str(dev.get('sha256', '?'))[:12]})")
    if chosen.get("point"):
        parts.append(f"point {chosen['point']}")
    if chosen.get("note"):
        parts.append(str(chosen["note"]))
    return "; ".join(parts) or "(no record)"


def summary_rows(summary: Mapping[str, Any], brackets: bool) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    cols = result_columns(summary)
    header = ["compressor", "n"] + [c.heading for c in cols]
    rows = [[label, str(comp["n"])] + [format_cell(c.stat(comp), c.unit, brackets) for c in cols]
            for label, comp in summary["compressors"].items()]
    dcols = diff_columns(summary)
    mark_exact = test_method(summary)[1]
    # summary.md (brackets): an MDD column beside each tested metric that has one; the terminal
    # puts the MDD in the cell (format_diff)
    with_mdd = {c.key for c in dcols if brackets and c.group != "descriptive" and any(
        (tests.get(c.key) or {}).get("mdd") is not None for tests in summary["comparisons"].values())}
    diff_header = ["compressor"]
    for c in dcols:
        diff_header.append(c.heading if c.group != "descriptive" else f"{c.heading} (no test)")
        if c.key in with_mdd:
            diff_header.append(f"{c.heading} MDD")
    diff_rows = []
    for label, tests in summary["comparisons"].items():
        row = [label]
        for c in dcols:
            row.append(format_diff(summary, tests.get(c.key), c.key, c.unit, brackets, mark_exact))
            if c.key in with_mdd:
                row.append(f"{tests[c.key]['mdd']:.{_digits(c.unit)}f}" if (tests.get(c.key) or {}).get("mdd")
                           is not None else "-")
        diff_rows.append(row)
    return header, rows, diff_header, diff_rows


def _fixed(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))  # noqa: E731
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def format_table(summary: Mapping[str, Any]) -> str:
    """The terminal table: mean ± half the CI width, then differences against the baseline."""
    header, rows, diff_header, diff_rows = summary_rows(summary, brackets=False)
    conf = int(round(summary["confidence"] * 100))
    out = [_fixed(header, rows), f"(mean ± half-width of the {conf}% bootstrap CI; percentages x100; seconds per question)"]
    if summary.get("primary"):
        out += ["", *primary_lines(summary)]
    if diff_rows:
        method, _ = test_method(summary)
        out += ["", f"difference vs '{summary['baseline']}' (paired by example id; * Holm-adjusted p < {SIGNIFICANCE})",
                f"(p: {method}; Holm-adjusted within each metric's family: that metric, the "
                f"{len(diff_rows)} compressor(s) below)", _fixed(diff_header, diff_rows)]
        for note in (mdd_note(summary), too_few_note(summary), unpaired_note(summary)):
            if note:
                out.append(note)
    return "\n".join(out)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(text: object) -> str:
    """Text from the run (labels, metric names, the config's name) for summary.md: what report.html
    escapes is escaped here too (``<``, ``>``, ``&``, quotes as HTML entities, which Markdown
    renders as text), and so are Markdown's own marks (table bars, emphasis, code, links); a
    line break becomes a space."""
    escaped = html.escape(" ".join(str(text).splitlines()), quote=True)
    return _MD_SPECIAL.sub(r"\\\1", escaped)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; the header and the first column (labels) are escaped (:func:`_md`), the
    other cells are ragsift's own formatted numbers."""
    lines = ["| " + " | ".join(map(_md, header)) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join([_md(r[0]), *r[1:]]) + " |" for r in rows]
    return "\n".join(lines)


def format_markdown(summary: Mapping[str, Any], title: str = "ragsift evaluation") -> str:
    """``summary.md``: the primary comparison, the results table with CIs, paired tests and
    per-stage latency."""
    header, rows, diff_header, diff_rows = summary_rows(summary, brackets=True)
    conf = int(round(summary["confidence"] * 100))
    parts = [f"# {_md(title)}", ""]
    if summary.get("primary"):
        parts += ["## Primary comparison", "", *(_md(line.strip()) + "  " for line in primary_lines(summary)), ""]
    parts += [f"Means with {conf}% percentile-bootstrap confidence intervals "
              f"({summary['bootstrap_samples']} resamples, seed {summary['seed']}); percentages x100; seconds "
              "per question.", "", _md_table(header, rows)]
    if diff_rows:
        method, _ = test_method(summary)
        parts += ["", f"## Difference vs {_md(summary['baseline'])}", "",
                  f"Paired by example id: mean difference, paired-bootstrap {conf}% CI, p-value of the {method}, "
                  f"and the Holm-adjusted p-value. {family_note(summary)} "
                  f"`*`: Holm-adjusted p < {SIGNIFICANCE}. See docs/statistics.md.", "",
                  _md_table(diff_header, diff_rows)]
        for note in (mdd_note(summary), too_few_note(summary), unpaired_note(summary)):
            if note:
                parts += ["", _md(note)]
        parts += _mcnemar_section(summary)
    stages = [s for s in LATENCY_STAGES if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    if stages:
        lat_rows = [[label] + [format_cell(c["latency_ms"].get(s), "s", True) for s in stages]
                    for label, c in summary["compressors"].items()]
        parts += ["", "## Latency per example (s)", "",
                  "Stage timings from each compression; compress = the whole compress() call; read = the "
                  "reader's time (with a reading batch of N examples, each example's share of the batch); "
                  "total = compress + read.", "", _md_table(["compressor", *stages], lat_rows)]
    return "\n".join(parts) + "\n"


def mcnemar_rows(summary: Mapping[str, Any]) -> tuple[list[list[str]], int]:
    """McNemar rows (compressor, metric, compressor only, baseline only, p) of the binary tested
    metrics, leaving out pairs with no discordant example (nothing to test); their count."""
    meta = summary["metrics"]
    rows, left_out = [], 0
    for label, tests in summary["comparisons"].items():
        for key, t in tests.items():
            if "mcnemar" not in t:
                continue
            m = t["mcnemar"]
            if m["compressor_only"] + m["baseline_only"] == 0:
                left_out += 1
                continue
            rows.append([label, meta[key]["label"], str(m["compressor_only"]), str(m["baseline_only"]),
                         format_p(m["p_value"])])
    return rows, left_out


def mcnemar_left_out_note(left_out: int) -> str:
    return (f"{left_out} comparison(s) with no discordant example (both sides agree on every question) are left "
            "out: McNemar's test has nothing to test there.")


def _mcnemar_section(summary: Mapping[str, Any]) -> list[str]:
    """Binary outcome metrics: the discordant pairs and the exact McNemar p-value (a second opinion)."""
    rows, left_out = mcnemar_rows(summary)
    if not rows and not left_out:
        return []
    out = ["", "## Binary metrics: exact McNemar test", "",
           f"Examples where only the compressor (only {_md(summary['baseline'])}) scores 1, and the two-sided "
           "exact McNemar p-value (binomial test on those discordant examples; not Holm-adjusted).", ""]
    if rows:
        out.append(_md_table(["compressor", "metric", "compressor only", "baseline only", "McNemar p"],
                             [[r[0], _md(r[1]), *r[2:]] for r in rows]))
    if left_out:
        out += ["", mcnemar_left_out_note(left_out)]
    return out

