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
from ragsift.evaluation.html_report import write_report
from ragsift.evaluation.plots import TradeoffPoint, pareto_front, plot_tradeoff, tradeoff_points

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
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
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
    family = summary["p_adjustment"]["comparisons"]
    assert f"Holm's correction over all {family} comparisons" in page
    oracle_p = summary["comparisons"]["oracle"]["evidence_precision"]
    assert f"Holm {oracle_p['p_holm']:.3f}" in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_per_example_view_marks_kept_dropped_and_gold(no_reader_run: tuple[Path, list[str]]) -> None:
    out = no_reader_run[0]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('<details class="ex"') == 5 and page.count("<details class=\"ex\" id=") == 5
    labels = list(json.loads((out / "summary.json").read_text())["compressors"])
    bm25 = labels.index("bm25")
    # bm25 is highlighted first (not the baseline, not the oracle); the page holds its kept pieces
    assert re.search(rf'class="r{bm25}" checked', page)
    first = page.split('<details class="ex"')[1]
    kept = [m for m in re.findall(r'<span class="([^"]*)">', first) if f"k{bm25}" in m.split()]
    gold = [m for m in re.findall(r'<span class="([^"]*)">', first) if "gold" in m.split()]
    assert kept and gold
    records = [json.loads(line) for line in (out / "predictions" / "bm25.jsonl").read_text().splitlines()]
    # every kept bm25 sentence's text is on the page inside bm25-kept pieces
    record = next(r for r in records if f'id="ex-{r["id"]}"' in page.split('<details class="ex"')[1][:200])
    kept_text = "".join(re.findall(rf'<span class="[^"]*\bk{bm25}\b[^"]*">([^<]*)</span>', first))
    for s in record["sentences"]:
        if s["kept"]:
            assert s["text"].replace("&", "&amp;").replace('"', "&quot;").replace("'", "&#x27;")[:40] in kept_text


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_reader_run_plots_em_f1_and_lists_disagreements_first(with_reader_run: tuple[Path, list[str]]) -> None:
    out, _ = with_reader_run
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "This run has no reader" not in page
    assert "EM / F1 against reader input tokens" in page and "EM / F1 against latency" in page
    assert "compress + read, retrieval excluded" in page
    assert "x: the reader&#x27;s prompt tokens as the reader reports them" in page
    for name in PLOTS:
        assert_nontrivial_png((out / "plots" / f"{name}.png").read_bytes())
    records = {label: {json.loads(line)["id"]: json.loads(line) for line in
                       (out / "predictions" / f"{label}.jsonl").read_text().splitlines()}
               for label in ("none", "oracle", "bm25")}
    differs = {i for i in records["none"] if len({records[c][i]["metrics"]["em"] for c in records}) > 1}
    assert differs, "the fake reader should make bm25 miss some answers"
    order = re.findall(r'<details class="ex" id="ex-([^"]+)"', page)
    assert set(order[: len(differs)]) == differs  # disagreements first
    assert page.count("EM differs") == len(differs)
    # the reader's answer and the gold answer are shown
    some = next(iter(differs))
    assert records["bm25"][some]["prediction"] in page and records["none"][some]["answers"][0] in page
    # McNemar's second opinion for EM, from summary.json
    assert "exact McNemar test" in page


@pytest.mark.slow  # a real evaluate run (module fixture) or a report of one
def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    from report_runs import COMPRESSORS

    out, _ = run(tmp_path, COMPRESSORS, data=hostile_dataset(tmp_path / "evil.json"), limit=2, no_reader=True)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img src=x" not in page
    assert "<b>tag" not in page and "</p></details>." not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and "&lt;b&gt;tag 0&lt;/b&gt;" in page
    assert page.count('<details class="ex"') == page.count("</details>") == 2
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
    # documents once per example, a few classes per piece: 100 examples x 10 compressors stay a few MB
    assert len(text.encode()) < 5 * 25_000, len(text.encode())
