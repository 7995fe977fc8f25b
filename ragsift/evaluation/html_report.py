"""``report.html`` and ``plots/*.png`` of a run directory.

The page is self-contained (it opens with no network): inline CSS, no script, the plots
embedded as base64 PNG data URIs, every text from the run HTML-escaped (questions, documents
and answers are untrusted). Every number of the tables comes from ``summary.json``, formatted
by :mod:`ragsift.evaluation.report` exactly as in ``summary.md``; the plots draw the same
means and intervals. Documents and gold evidence of the per-example view come from the run's
input file (``manifest.json``), checked against its SHA-256; when it cannot be read, the
documents are rebuilt from the recorded sentences and gold evidence is not shown.
"""

from __future__ import annotations

import base64
import html
import json
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsift.errors import ConfigError, RagsiftError
from ragsift.evaluation import plots as pl
from ragsift.evaluation.example_view import (
    DocumentText,
    build_views,
    order_views,
    render_view,
    view_css,
)
from ragsift.evaluation.predictions import prediction_path, read_predictions
from ragsift.evaluation.report import (
    LATENCY_STAGES,
    SIGNIFICANCE,
    format_cell,
    format_p,
    metric_columns,
    summary_rows,
    test_method,
    unpaired_note,
)
from ragsift.evaluation.statistics import bootstrap_ci, derive_seed

__all__ = ["write_report", "load_run", "RunData", "REPORT_NAME", "PLOTS_DIR"]

REPORT_NAME = "report.html"
PLOTS_DIR = "plots"
PROMPT_TOKENS = "reader_prompt_tokens"


@dataclass
class RunData:
    """What a report is made of: the summary, the manifest and the records of each compressor."""

    run_dir: Path
    summary: dict[str, Any]
    manifest: dict[str, Any]
    records: dict[str, list[dict[str, Any]]]

    @property
    def has_reader(self) -> bool:
        return any(k in self.summary["metrics"] for k in ("em", "f1"))


def load_run(run_dir: Path) -> RunData:
    """Read a finished run directory (``summary.json``, ``manifest.json``, predictions)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise ConfigError(f"{run_dir}: no summary.json (not a run directory, or the run did not finish); "
                          "finish it with 'ragsift evaluate ... --resume', then run 'ragsift report' again.")
    summary = _read_json(summary_path)
    manifest_path = run_dir / "manifest.json"
    manifest = _read_json(manifest_path) if manifest_path.is_file() else {}
    if not isinstance(summary.get("compressors"), dict) or "metrics" not in summary:
        raise ConfigError(f"{summary_path}: not a ragsift summary (no 'compressors' / 'metrics').")
    records: dict[str, list[dict[str, Any]]] = {}
    for label in summary["compressors"]:
        seen: set[str] = set()
        unique = []
        for r in read_predictions(prediction_path(run_dir, label)):
            if str(r["id"]) not in seen:
                seen.add(str(r["id"]))
                unique.append(r)
        records[label] = unique
    return RunData(run_dir, summary, manifest, records)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: expected a JSON object.")
    return value


def _prompt_tokens(data: RunData) -> dict[str, dict[str, float]] | None:
    """Mean reader prompt tokens with the summary's bootstrap settings, when every read example
    of every compressor reports them (None otherwise)."""
    out = {}
    s = data.summary
    for label, recs in data.records.items():
        by_id = {str(r["id"]): (r.get("reader") or {}).get("prompt_tokens") for r in recs if r.get("prediction") is not None}
        if not by_id or any(v is None for v in by_id.values()):
            return None
        values = [float(by_id[i] or 0) for i in sorted(by_id)]  # id order, as the summary resamples
        out[label] = bootstrap_ci(values, s.get("bootstrap_samples", 1000), s.get("confidence", 0.95),
                                  derive_seed(s.get("seed", 0), label, PROMPT_TOKENS)).to_dict()
    return out or None


def _quality_keys(data: RunData) -> list[str]:
    if data.has_reader:
        return [k for k in ("em", "f1") if k in data.summary["metrics"]]
    return [k for k in ("evidence_recall", "answer_retention") if k in data.summary["metrics"]]


def _make_plots(data: RunData) -> tuple[list[pl.Plot], list[str]]:
    """Write the PNGs; returns them and notes on plots that could not be drawn."""
    summary = json.loads(json.dumps(data.summary))  # a copy the prompt-token stats may join
    plots_dir = data.run_dir / PLOTS_DIR
    meta = summary["metrics"]
    keys = _quality_keys(data)
    names = " / ".join(meta[k]["label"] for k in keys)
    notes: list[str] = []
    conf = f"{summary.get('confidence', 0.95):.0%}"
    prompt = _prompt_tokens(data) if data.has_reader else None
    if prompt:
        for label, stat in prompt.items():
            summary["compressors"][label]["values"][PROMPT_TOKENS] = stat
        x_tokens, token_axis, token_what = PROMPT_TOKENS, "reader input tokens per question (prompt, mean)", \
            "reader input tokens"
        token_note = "x: the reader's prompt tokens as the reader reports them (template, question and context)"
    else:
        x_tokens, token_axis = "compressed_tokens", "context tokens per question (mean)"
        token_what = "reader input (context) tokens" if data.has_reader else "context tokens"
        token_note = ("x: tokens of the compressed context (the tokenizer of the manifest's metrics), "
                      "without the prompt template and question")
    stage = "total" if data.has_reader else "compress"
    lat_axis = ("end-to-end latency per question (ms): compression + reading" if data.has_reader
                else "compression latency per question (ms); no reader")
    out: list[pl.Plot] = []
    if not keys:
        notes.append("No quality metric to plot against cost (no EM/F1, evidence or answer-retention values).")
    for x, axis, name, what, extra in ((x_tokens, token_axis, "tradeoff_tokens", token_what, token_note),
                                       (f"latency_ms:{stage}", lat_axis, "tradeoff_latency", "latency",
                                        "x: " + ("compress + read, retrieval excluded (EXIT's definition)"
                                                 if data.has_reader else "the whole compress() call"))):
        panels = [(f"{meta[k]['label']} ({meta[k]['unit']})", pl.tradeoff_points(summary, k, x)) for k in keys]
        panels = [(label, pts) for label, pts in panels if pts]
        if not panels:
            if keys:
                notes.append(f"No compressor has both {names} and {what}: the {what} plot is left out.")
            continue
        path = pl.plot_tradeoff(panels, axis, f"{names} against {what}", plots_dir / f"{name}.png")
        out.append(pl.Plot(name, path, f"{names} against {what}, one point per compressor; error bars: {conf} "
                           f"bootstrap intervals of both means; dashed: the Pareto frontier (no other compressor is "
                           f"cheaper and better), ringed points lie on it. {extra}."))
    evidence = pl.plot_evidence(summary, plots_dir / "evidence.png")
    if evidence is None:
        notes.append("No evidence metrics (the dataset has no gold evidence): no evidence plot.")
    else:
        out.append(pl.Plot("evidence", evidence, f"Evidence precision and recall per compressor, {conf} "
                           "bootstrap intervals."))
    latency = pl.plot_latency_stages(summary, plots_dir / "latency_stages.png")
    if latency is not None:
        out.append(pl.Plot("latency_stages", latency, "Mean milliseconds per question and stage; other: the rest "
                           "of the compress() call; read: the reader (with reading batches, each question's share)."))
    return out, notes


def _load_documents(data: RunData) -> tuple[dict[str, tuple[list[DocumentText], bool]], str | None]:
    """id -> (documents, whether gold evidence is known), from the manifest's input file; the
    note says why the documents come from the records instead, when they do."""
    from ragsift.evaluation.manifest import sha256_file

    source = data.manifest.get("input", {})
    path = Path(source["path"]) if source.get("path") else None
    if path is None or not path.is_file():
        return {}, f"The input file ({path}) cannot be read here: documents are rebuilt from the recorded sentences, " \
                   "without titles or gold evidence."
    if source.get("sha256") and sha256_file(path) != source["sha256"]:
        return {}, f"The input file {path} changed since the run (SHA-256 differs): documents are rebuilt from the " \
                   "recorded sentences, without titles or gold evidence."
    wanted = {str(r["id"]) for recs in data.records.values() for r in recs}
    try:
        from ragsift.datasets import load_examples

        examples = load_examples(path, format=source.get("format"), limit=source.get("examples"),
                                 params=_dataset_params(data.run_dir, source.get("format")))
        out = {}
        for ex in examples:
            if ex.id in wanted:
                gold = {i: tuple((e.start, e.end) for e in ex.evidence or () if e.doc_index == i)
                        for i in range(len(ex.documents))}
                out[ex.id] = ([DocumentText(d.title, d.text, gold[i]) for i, d in enumerate(ex.documents)],
                              ex.evidence is not None)
    except (RagsiftError, OSError, ValueError) as exc:
        return {}, f"The input file {path} could not be read ({exc}): documents are rebuilt from the recorded sentences."
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


def _two_lines(cell: str) -> str:
    """A table cell, escaped, with its interval or p-values on a second, smaller line."""
    for cut in (" p=", " p<", " ["):
        if cut in cell:
            head, tail = cell.split(cut, 1)
            return f"{html.escape(head)}<br><small>{html.escape(cut.strip() + tail)}</small>"
    return html.escape(cell)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[Sequence[str]] | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, cell in enumerate(row):
            cls = classes[r][c] if classes else ""
            cells.append(f'<td{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>{_two_lines(cell)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table class="results"><tr>{head}</tr>{"".join(body)}</table></div>'


def _tables_html(summary: Mapping[str, Any]) -> str:
    """The results table, the paired tests (with Holm) and McNemar's, as in summary.md."""
    header, rows, diff_header, diff_rows = summary_rows(summary, brackets=True)
    conf = int(round(summary["confidence"] * 100))
    parts = ['<h2 id="results">Results</h2>',
             f"<p>Means with {conf}% percentile-bootstrap intervals ({summary['bootstrap_samples']} resamples, seed "
             f"{summary['seed']}); percentages x100; latency in ms per question.</p>", _table(header, rows)]
    if diff_rows:
        method, _ = test_method(summary)
        family = summary["p_adjustment"]["comparisons"]
        cols = metric_columns(summary)
        classes = [[""] + ["sig" if (t := summary["comparisons"][row[0]].get(k)) and t["p_holm"] < SIGNIFICANCE else ""
                           for k in cols] for row in diff_rows]
        parts += [f'<h2 id="tests">Paired tests against <code>{html.escape(str(summary["baseline"]))}</code></h2>',
                  f"<p>Paired by example id: mean difference, paired-bootstrap {conf}% interval, p-value of the "
                  f"{html.escape(method)}, and the p-value after Holm's correction over all {family} comparisons in "
                  f"this table; <b>*</b> (shaded): Holm-adjusted p &lt; {SIGNIFICANCE}. docs/statistics.md says what "
                  "each number means.</p>", _table(diff_header, diff_rows, classes)]
        note = unpaired_note(summary)
        if note:
            parts.append(f"<p>{html.escape(note)}</p>")
        meta = summary["metrics"]
        mc = [[label, meta[key]["label"], str(t["mcnemar"]["compressor_only"]), str(t["mcnemar"]["baseline_only"]),
               format_p(t["mcnemar"]["p_value"])]
              for label, tests in summary["comparisons"].items() for key, t in tests.items() if "mcnemar" in t]
        if mc:
            parts += ["<h3>Binary metrics: exact McNemar test</h3>",
                      f"<p>Examples where only the compressor (only <code>{html.escape(str(summary['baseline']))}"
                      "</code>) scores 1, and the two-sided exact McNemar p-value (not Holm-adjusted; a second "
                      "opinion that sets no stars).</p>",
                      _table(["compressor", "metric", "compressor only", "baseline only", "McNemar p"], mc)]
    return "".join(parts)


def _latency_html(summary: Mapping[str, Any]) -> str:
    stages = [s for s in LATENCY_STAGES if any(s in c["latency_ms"] for c in summary["compressors"].values())]
    if not stages:
        return ""
    lat = [[label] + [format_cell(c["latency_ms"].get(s), "ms", True) for s in stages]
           for label, c in summary["compressors"].items()]
    return ('<h2 id="latency">Latency per question (ms)</h2><p>compress: the whole compress() call; read: the reader '
            "(with a reading batch, each question's share); total = compress + read (retrieval excluded).</p>"
            + _table(["compressor", *stages], lat))


def _figure(plot: pl.Plot) -> str:
    data = base64.b64encode(plot.path.read_bytes()).decode("ascii")
    half = " half" if plot.name in ("evidence", "latency_stages") else ""
    return (f'<figure class="plot{half}" id="plot-{plot.name}"><img alt="{html.escape(plot.caption, quote=True)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(plot.caption)} '
            f'(<code>{PLOTS_DIR}/{html.escape(plot.path.name)}</code>)</figcaption></figure>')


def _meta_html(data: RunData) -> str:
    m, s = data.manifest, data.summary
    reader = m.get("reader")
    rows = [("run directory", str(data.run_dir)), ("config", str(s.get("config", m.get("config", {}).get("path", "")))),
            ("input", f"{m.get('input', {}).get('path', '?')} ({s.get('examples', '?')} examples)"),
            ("reader", "none (--no-reader)" if not reader else f"{reader.get('name', '?')}: {reader.get('model', '')}"),
            ("created", f"{m.get('created_at', '?')} · status {m.get('status', '?')}"),
            ("ragsift", f"{m.get('ragsift_version', '?')} · git {m.get('git', {}).get('commit', '?')[:12]}"
                        f"{' (dirty)' if m.get('git', {}).get('dirty') else ''}")]
    if m.get("command_line"):
        rows.append(("command", " ".join(m["command_line"])))
    return '<table class="meta">' + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                                             for k, v in rows) + "</table>"


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1320px;
padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;vertical-align:top}
table.results td{text-align:right;white-space:nowrap}table.results small{color:#666}
table.results td:first-child{text-align:left;font-weight:600}
table.results th{background:#f3f3f3}td.sig{background:#fff3c4;font-weight:600}
table.meta th{text-align:left;background:#f7f7f7;font-weight:600}table.meta td{font-family:monospace;font-size:12px}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:8px 12px}.muted{color:#888}
figure{margin:14px 0;display:block;max-width:100%}figure img{max-width:100%;border:1px solid #eee}
figure.half{display:inline-block;vertical-align:top;width:49%;margin-right:1%}
figcaption{font-size:12px;color:#555;max-width:1000px}.scroll{overflow-x:auto;max-width:100%}
details.ex{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:4px 10px}details.ex>summary{cursor:pointer}
details.ex .q{font-weight:600}.badge{font-size:11px;border-radius:8px;padding:1px 7px;margin-left:4px;color:#fff}
.badge.em{background:#c62828}.badge.f1{background:#ef6c00}.badge.kept{background:#5c6bc0}
table.per-ex td,table.per-ex th{font-size:12px}.right{color:#1b5e20;font-weight:600}.wrong{color:#b71c1c}
details.ex input[type=radio]{display:none}.pick{margin:6px 0}.pick label{display:inline-block;border:1px solid #aaa;
border-radius:10px;padding:0 8px;margin:2px;cursor:pointer;font-size:12px}
.docs .doc{margin:6px 0}.docs .title{font-weight:600;font-size:12px;color:#555}.docs p{margin:2px 0;color:#8a8a8a;
font-size:13px}.docs .gold{border-bottom:3px solid #f0a000}
.legend span{padding:0 6px;margin-right:8px;font-size:12px}
"""


def render_html(data: RunData, plots: Sequence[pl.Plot], notes: Sequence[str],
                documents: Mapping[str, tuple[list[DocumentText], bool]], documents_note: str | None) -> str:
    """The whole page as a string."""
    s = data.summary
    labels = list(s["compressors"])
    title = f"ragsift report: {Path(str(s.get('config', 'run'))).name}"
    views = order_views(build_views(data.records, documents))
    baseline = s.get("baseline")
    # highlight a real compressor first: not the baseline, not the oracle (it keeps the gold evidence)
    default = next((label for label in labels if label not in (baseline, "oracle")),
                   next((label for label in labels if label != baseline), labels[0] if labels else ""))
    disagree = sum(1 for v in views if v.em_differs or v.f1_spread > 0)
    intro = []
    if not data.has_reader:
        intro.append('<p class="note">This run has no reader (<code>--no-reader</code>): there is no EM or F1. '
                     "The trade-off plots show evidence recall and answer retention (gold answer in the compressed "
                     "context) against context tokens and compression latency instead.</p>")
    intro += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    examples_intro = (f"{len(views)} examples; "
                      + (f"{disagree} where the compressors' answers differ (EM or F1) come first, then those where "
                         "their kept text differs most." if data.has_reader else
                         "those where the compressors' kept text differs most come first.")
                      + " Click an example to open it; choose a compressor to highlight the sentences it kept "
                      "(green; dropped text is grey); gold evidence is underlined in orange.")
    body = [f"<h1>{html.escape(title)}</h1>", _meta_html(data), *intro,
            _tables_html(s), '<h2 id="plots">Plots</h2>', *(_figure(p) for p in plots), _latency_html(s),
            '<h2 id="examples">Examples</h2>', f"<p>{html.escape(examples_intro)}</p>",
            '<p class="legend"><span style="background:#bfe8c4">kept</span><span style="color:#8a8a8a">dropped</span>'
            '<span style="border-bottom:3px solid #f0a000">gold evidence</span></p>']
    if documents_note:
        body.append(f'<p class="note">{html.escape(documents_note)}</p>')
    kept_badge = not all(v.kept_differs for v in views)
    body += [render_view(v, labels, data.has_reader, default, open_=(i == 0), kept_badge=kept_badge)
             for i, v in enumerate(views)]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{_CSS}{view_css(labels)}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(run_dir: Path, echo: Callable[[str], None] | None = None) -> Path:
    """Write ``RUN_DIR/plots/*.png`` and ``RUN_DIR/report.html``; returns the page's path."""
    data = load_run(Path(run_dir))
    plots, notes = _make_plots(data)
    documents, documents_note = _load_documents(data)
    path = data.run_dir / REPORT_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_html(data, plots, notes, documents, documents_note), encoding="utf-8")
    tmp.replace(path)
    if echo is not None:
        echo(f"report: {path} (plots in {data.run_dir / PLOTS_DIR})")
    return path
