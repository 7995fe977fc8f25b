"""report.html and plots/*.png: written by ``ragsift evaluate`` and ``ragsift report``, on real
small runs (bm25 / oracle / none, with and without a fake reader) and on hostile text."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image
from report_runs import HOSTILE, hostile_dataset, reader_run, run

from ragsift.cli import main
from ragsift.evaluation.report.html import write_report
from ragsift.evaluation.report.plots import TradeoffPoint, pareto_front, plot_tradeoff, tradeoff_points

PLOTS = ("tradeoff_tokens", "tradeoff_latency", "evidence", "latency_stages")


@pytest.fixture(scope="module")
def no_reader_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    from report_runs import COMPRESSORS

    return run(tmp_path_factory.mktemp("noreader"), COMPRESSORS, no_reader=True)


@pytest.fixture(scope="module")
def with_reader_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return reader_run(tmp_path_factory.mktemp("reader"))


def assert_nontrivial_png(data: bytes, min_width: int = 400, min_height: int = 250) -> None:
    """A real picture: big enough, and many colours (not a blank or single-colour canvas)."""
    assert len(data) > 8_000, f"PNG of {len(data)} bytes"
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    width, height = image.size
    assert width >= min_width and height >= min_height, image.size
    colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 20, "almost a single colour"
    # no colour covers the whole picture (a blank canvas has one colour on ~100% of pixels)
    assert max(count for count, _ in colours) < 0.97 * width * height


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_evaluate_writes_the_report_and_non_trivial_plots(no_reader_run: tuple[Path, list[str]]) -> None:
    out, echoed = no_reader_run
    assert (out / "report.html").is_file()
    assert any(line.startswith("report: ") and str(out / "report.html") in line for line in echoed)
    for name in PLOTS:
        assert_nontrivial_png((out / "plots" / f"{name}.png").read_bytes())


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_the_page_is_self_contained(no_reader_run: tuple[Path, list[str]]) -> None:
    page = (out := no_reader_run[0] / "report.html").read_text(encoding="utf-8")
    # one small inline script and its JSON data, nothing loaded from anywhere
    scripts = re.findall(r"<script[^>]*>", page.lower())
    assert scripts == ['<script type="application/json" id="compare-data">', "<script>"], scripts
    assert "<link" not in page.lower() and "@import" not in page and "fetch(" not in page and "XMLHttpRequest" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page), "an external resource"
    sources = re.findall(r'<img [^>]*src="([^"]+)"', page)
    assert len(sources) == len(PLOTS)
    for src in sources:  # every plot embedded, and the same bytes as the PNG file
        assert src.startswith("data:image/png;base64,")
        assert_nontrivial_png(base64.b64decode(src.split(",", 1)[1]))
    assert base64.b64encode((out.parent / "plots" / "evidence.png").read_bytes()).decode() in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_a_run_without_reader_says_so_and_plots_evidence(no_reader_run: tuple[Path, list[str]]) -> None:
    out = no_reader_run[0]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "This run has no reader" in page and "there is no EM or F1" in page
    assert "Ev-R / Ans-in-ctx against context tokens" in page and "EM / F1" not in page
    summary = json.loads((out / "summary.json").read_text())
    # the tables carry summary.json's numbers as summary.md formats them
    bm25 = summary["compressors"]["bm25"]["values"]["evidence_recall"]
    assert f"{bm25['mean']:.1f}<br><small>[{bm25['low']:.1f}, {bm25['high']:.1f}]</small>" in page
    families = summary["p_adjustment"]["families"]
    assert f"Holm&#39;s correction within each metric&#39;s family ({len(families)} families of 2 comparison(s)" in page
    # 5 questions, 2 compressors per family: no test can reach the level; one line says so, and the
    # cells give the unadjusted p-values (no column of Holm values)
    assert not any(f["reachable"] for f in families.values())
    assert "Too few questions to reach the level for every tested metric: with n = 5 pairs" in page
    oracle_p = summary["comparisons"]["oracle"]["evidence_precision"]
    assert f"p={oracle_p['p_value']:.3f} (unadjusted)" in page and "Holm 1.000" not in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_per_example_view_marks_kept_dropped_and_gold(no_reader_run: tuple[Path, list[str]]) -> None:
    out = no_reader_run[0]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('<details class="ex"') == 5 and page.count("<details class=\"ex\" id=") == 5
    labels = list(json.loads((out / "summary.json").read_text())["compressors"])
    bm25 = labels.index("bm25")
    # bm25 is highlighted first (not the baseline, not the oracle); the page holds its kept pieces
    assert re.search(rf'class="r{bm25}" data-label="bm25" checked', page)
    first = page.split('<details class="ex"')[1]
    kept = [m for m in re.findall(r'<span class="([^"]*)"', first) if f"k{bm25}" in m.split()]
    gold = [m for m in re.findall(r'<span class="([^"]*)"', first) if "gold" in m.split()]
    assert kept and gold
    records = [json.loads(line) for line in (out / "predictions" / "bm25.jsonl").read_text().splitlines()]
    # every kept bm25 sentence's text is on the page inside bm25-kept pieces
    record = next(r for r in records if f'id="ex-{r["id"]}"' in page.split('<details class="ex"')[1][:200])
    kept_text = "".join(re.findall(rf'<span class="[^"]*\bk{bm25}\b[^"]*"(?: title="[^"]*")?>([^<]*)</span>', first))
    for s in record["sentences"]:
        if s["kept"]:
            assert s["text"].replace("&", "&amp;").replace('"', "&#34;").replace("'", "&#39;")[:40] in kept_text


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_reader_run_plots_em_f1_and_lists_disagreements_first(with_reader_run: tuple[Path, list[str]]) -> None:
    out, _ = with_reader_run
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "This run has no reader" not in page
    assert "EM / F1 against reader input tokens" in page and "EM / F1 against latency" in page
    assert "compress + read, retrieval excluded" in page
    assert "x: the reader&#39;s prompt tokens as the reader reports them" in page
    for name in PLOTS:
        assert_nontrivial_png((out / "plots" / f"{name}.png").read_bytes())
    records = {label: {json.loads(line)["id"]: json.loads(line) for line in
                       (out / "predictions" / f"{label}.jsonl").read_text().splitlines()}
               for label in ("none", "oracle", "bm25")}
    differs = {i for i in records["none"] if len({records[c][i]["metrics"]["em"] for c in records}) > 1}
    assert differs, "the fake reader should make bm25 miss some answers"
    order = re.findall(r'<details class="ex" id="ex-([^"]+)"', page)
    assert set(order[: len(differs)]) == differs  # disagreements first
    assert page.count('<span class="badge em">EM differs') == len(differs)
    # the reader's answer and the gold answer are shown
    some = next(iter(differs))
    assert records["bm25"][some]["prediction"] in page and records["none"][some]["answers"][0] in page
    # McNemar's second opinion for EM, from summary.json
    assert "exact McNemar test" in page
    # the smallest detectable difference beside each tested interval, as summary.json has it
    summary = json.loads((out / "summary.json").read_text())
    f1 = summary["comparisons"]["bm25"]["f1"]  # (EM's is none on 6 questions: too few for any difference)
    assert f1["mdd"] is not None and f"<small>MDD {f1['mdd']:.1f}</small>" in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    from report_runs import COMPRESSORS

    out, _ = run(tmp_path, COMPRESSORS, data=hostile_dataset(tmp_path / "evil.json"), limit=2, no_reader=True)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<script") == 2 and '<script>alert' not in page and "<img src=x" not in page  # the page's own two
    assert "<b>tag" not in page and "</p></details>." not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page and "&lt;b&gt;tag 0&lt;/b&gt;" in page
    data = page.split('<script type="application/json" id="compare-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and "\\u003cscript\\u003e" in data  # the compare view's JSON cannot close its tag
    assert page.count('<details class="ex"') == 2 and page.count("<details") == page.count("</details>")
    assert HOSTILE not in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_ragsift_report_rewrites_an_existing_run(tmp_path: Path, no_reader_run: tuple[Path, list[str]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(no_reader_run[0], copy)
    shutil.rmtree(copy / "plots")
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 0
    assert f"report: {copy / 'report.html'}" in capsys.readouterr().out
    assert (copy / "report.html").is_file() and (copy / "plots" / "tradeoff_tokens.png").is_file()


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_report_without_the_input_file_rebuilds_documents(tmp_path: Path, no_reader_run: tuple[Path, list[str]]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(no_reader_run[0], copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["input"]["path"] = str(tmp_path / "moved-away.json")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    page = write_report(copy).read_text(encoding="utf-8")
    assert "cannot be read here: documents are rebuilt from the recorded sentences" in page
    assert page.count('<details class="ex"') == 5 and 'class="gold"' not in page
    assert "Gold evidence unknown for this example" in page


def test_report_of_a_directory_without_summary_is_a_clear_error(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragsift: error: ") and "no summary.json" in err and "--resume" in err
    (tmp_path / "summary.json").write_text("{not json")
    assert main(["report", str(tmp_path)]) == 2
    assert f"{tmp_path / 'summary.json'}:1: not valid JSON" in capsys.readouterr().err


def _point(label: str, x: float, y: float, family: str | None = None) -> TradeoffPoint:
    return TradeoffPoint(label, x, x, x, y, y, y, family)


def test_pareto_front_keeps_the_points_nothing_dominates() -> None:
    points = [_point("none", 1400, 50), _point("oracle", 110, 60), _point("bm25", 180, 40),
              _point("cheap", 50, 20), _point("same-cost-worse", 110, 55), _point("best", 2000, 70)]
    assert [p.label for p in pareto_front(points)] == ["cheap", "oracle", "best"]
    assert pareto_front([]) == []
    tie = [_point("a", 10, 5), _point("b", 10, 5)]
    assert len(pareto_front(tie)) == 1  # an equal point does not dominate, but adds nothing to the line


def test_tradeoff_points_read_the_summary_and_keep_sweep_families() -> None:
    stat = lambda m: {"mean": m, "low": m - 1, "high": m + 1}  # noqa: E731
    summary = {"compressors": {
        "t0.3": {"family": "exit-threshold", "values": {"em": stat(40), "compressed_tokens": stat(300)},
                 "latency_ms": {"total": stat(900)}},
        "t0.5": {"family": "exit-threshold", "values": {"em": stat(45), "compressed_tokens": stat(200)},
                 "latency_ms": {"total": stat(800)}},
        "none": {"values": {"compressed_tokens": stat(1400)}, "latency_ms": {"total": stat(2000)}},  # no EM: left out
    }}
    by_tokens = tradeoff_points(summary, "em", "compressed_tokens")
    assert [(p.label, p.family, p.x, p.x_low, p.y_high) for p in by_tokens] == [
        ("t0.3", "exit-threshold", 300, 299, 41), ("t0.5", "exit-threshold", 200, 199, 46)]
    assert [p.x for p in tradeoff_points(summary, "em", "latency_ms:total")] == [900, 800]


def test_a_sweep_family_is_drawn_as_a_line(tmp_path: Path) -> None:
    sweep = [TradeoffPoint(f"t{t}", 100 + 200 * t, 90 + 200 * t, 110 + 200 * t, 30 + 40 * t, 25 + 40 * t, 35 + 40 * t,
                           family="threshold") for t in (0.1, 0.5, 0.9)]
    alone = [_point("none", 1400, 60)]
    path = plot_tradeoff([("EM (%)", sweep + alone)], "tokens", "EM against tokens", tmp_path / "sweep.png")
    assert_nontrivial_png(path.read_bytes(), min_width=300)


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_the_page_stays_small_per_example(no_reader_run: tuple[Path, list[str]]) -> None:
    page = (no_reader_run[0] / "report.html").read_text(encoding="utf-8")
    text = re.sub(r'src="data:image/png;base64,[^"]+"', "", page)
    # documents once per example, a few classes per piece (kept, score level) and a rank tooltip; the
    # compare view's data holds each compressor's context once, none for one that keeps everything:
    # 100 examples x 10 compressors stay a few MB
    assert len(text.encode()) < 5 * 30_000, len(text.encode())


def test_the_oracle_is_a_reference_not_a_frontier_point() -> None:
    """Issue 27: a compressor that reads the gold labels is drawn as a reference; the frontier runs
    over real compressors only (here the oracle would otherwise dominate bm25 and cheap)."""
    oracle = TradeoffPoint("oracle", 110, 110, 110, 60, 60, 60, reference=True)
    points = [_point("none", 1400, 50), oracle, _point("bm25", 180, 40), _point("cheap", 50, 20),
              _point("best", 2000, 70)]
    front = pareto_front(points)
    assert oracle not in front and [p.label for p in front] == ["cheap", "bm25", "none", "best"]
    # without the flag the same point shapes the frontier (bm25 and none fall off it)
    assert [p.label for p in pareto_front([*points[:1], _point("oracle", 110, 60), *points[2:]])] == \
        ["cheap", "oracle", "best"]
    stat = lambda m: {"mean": m, "low": m, "high": m}  # noqa: E731
    summary = {"compressors": {"oracle": {"values": {"em": stat(60)}, "latency_ms": {"total": stat(2500)}},
                               "bm25": {"values": {"em": stat(40)}, "latency_ms": {"total": stat(1200)}}}}
    pts = tradeoff_points(summary, "em", "latency_ms:total", references=["oracle"], seconds=True)
    assert [(p.label, p.reference, p.x) for p in pts] == [("oracle", True, 2.5), ("bm25", False, 1.2)]


def test_twenty_compressors_get_distinct_styles(tmp_path: Path) -> None:
    from ragsift.evaluation.report.plots import Anchor, style_of

    labels = [f"c{i}" for i in range(20)]
    styles = style_of(labels)
    assert len(set(styles.values())) == 20 and len({colour for colour, _ in styles.values()}) == 20
    points = [_point(label, 100 + 10 * i, 30 + i) for i, label in enumerate(labels)]
    points.append(_point("tie", 100, 30))  # on top of c0: one label "c0 = tie"
    path = plot_tradeoff([("EM (%)", points)], "seconds", "EM against latency", tmp_path / "many.png",
                         anchors=[Anchor("EXIT, Fig. 1", 150, 45, "EM")])
    assert_nontrivial_png(path.read_bytes(), min_width=300)


@pytest.mark.slow  # a real evaluate run with a fake reader
def test_primary_comparison_csv_and_compare_view_of_a_reader_run(tmp_path: Path) -> None:
    """Issue 23 item 3 and issue 27: [evaluation] primary is validated, its test is shown first with
    its provenance; records.csv holds the page's per-question records; the compare view lists the
    questions where the default pair differs in EM first; the oracle is a reference in the plots."""
    import csv

    from report_runs import reader_run

    out, echoed = reader_run(tmp_path, evaluation='primary = "bm25"\nprimary_chosen_on = "dev questions, 2026-11-30"')
    summary = json.loads((out / "summary.json").read_text())
    primary = summary["primary"]
    assert primary["compressor"] == "bm25" and primary["chosen"] == {"note": "dev questions, 2026-11-30"}
    assert primary["p_value"] == summary["comparisons"]["bm25"]["em"]["p_value"]
    printed = "\n".join(echoed)
    assert printed.index("primary comparison (declared before the evaluation): bm25 vs none on EM") < \
        printed.index("difference vs 'none'")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('<h2 id="primary">') < page.index('<h2 id="results">') < page.index('<h2 id="tests">')
    assert "chosen: dev questions, 2026-11-30" in page
    # EM leads the results table; the reader is one line with its provenance a click away
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page.split('id="results-table"', 1)[1].split("</thead>", 1)[0])
    assert heads[:3] == ["compressor", "n", "EM (%)"]
    assert "openai: fake" in page and "full provenance" in page
    # the CSV: one row per question and compressor, the values the page shows
    rows = list(csv.DictReader((out / "records.csv").open(encoding="utf-8")))
    records = {label: {json.loads(line)["id"]: json.loads(line) for line in
                       (out / "predictions" / f"{label}.jsonl").read_text().splitlines()} for label in ("none", "bm25")}
    assert len(rows) == 3 * 6 and {r["compressor"] for r in rows} == {"none", "oracle", "bm25"}
    for r in rows:
        if r["compressor"] in records:
            rec = records[r["compressor"]][r["id"]]
            assert float(r["em"]) == rec["metrics"]["em"] and r["prediction"] == rec["prediction"]
            assert int(r["prompt_tokens"]) == rec["reader"]["prompt_tokens"]
    # the compare view (bm25 against none, without script): a question bm25 gets wrong first
    differs = [i for i in records["none"] if records["none"][i]["metrics"]["em"] != records["bm25"][i]["metrics"]["em"]]
    assert differs
    compare = page.split('<tbody id="compare-body">', 1)[1].split("</tbody>", 1)[0]
    first = re.findall(r'<tr class="([^"]+)" data-id="([^"]+)"', compare)
    assert first[0] == ("b-right", differs[0]) and len(first) == 6
    assert "reader prompt" in compare and "keeps all" in compare  # none gave the reader the full documents
    assert "oracle, which read the gold labels" in page
