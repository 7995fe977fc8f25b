"""report.html answers "which one?" first (issue 51): the frontier sentence and the primary verdict
before the results table, the trade-off plots right after it and before the paired tests, the
McNemar detail folded, best values marked, significance shaded by direction, the compare view on
the primary compressor, no absolute path of this machine in the page."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from report_runs import reader_run

from ragsift.evaluation.report.html import load_run, render_html, shown_path

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out, _ = reader_run(tmp_path_factory.mktemp("answers"), evaluation='primary = "bm25"')
    return out, (out / "report.html").read_text(encoding="utf-8")


def _at(html: str, needle: str) -> int:
    assert needle in html, needle
    return html.index(needle)


def test_the_answer_comes_first_and_the_tradeoff_plots_right_after_the_results(run: tuple[Path, str]) -> None:
    out, html = run
    answer, results = _at(html, 'id="answer"'), _at(html, 'id="results-table"')
    tradeoffs, tests = _at(html, 'id="plot-tradeoff_tokens"'), _at(html, 'id="tests"')
    assert answer < _at(html, 'class="meta"') < results < tradeoffs < _at(html, 'id="plot-tradeoff_latency"') < tests
    text = re.sub(r"<[^>]+>", "", html[answer:results])
    summary = load_run(out).summary
    assert "On the EM against reader input tokens frontier" in text and "On the EM against end-to-end latency frontier" in text
    verdict = summary["primary"]["verdict"].upper()
    assert f"Primary comparison, bm25 vs none on EM: {verdict}" in text
    # the frontier named is the plots' own: bm25 answers less often than none here, with far fewer tokens
    tokens_front = re.search(r"reader input tokens frontier[^:]*: ([^.]+)\.", text).group(1).split(", ")
    assert "oracle" not in tokens_front and set(tokens_front) <= {"none", "bm25"} and tokens_front
    # the McNemar detail is folded, after the paired tests; the other plots after them too
    assert tests < _at(html, '<details class="mcnemar" id="mcnemar">') and tests < _at(html, 'id="plot-evidence"')


def test_best_values_and_significance_by_direction(run: tuple[Path, str]) -> None:
    out, html = run
    results = html.split('id="results-table"', 1)[1].split("</table>", 1)[0]
    rows = {re.search(r'<td data-v="([^"]+)"', row).group(1): row for row in results.split("<tr>")[2:]}
    best_em = re.findall(r'<td class="best"[^>]*>', rows["none"])  # none's EM beats bm25's (the reader needs the answer)
    assert best_em and "oracle" in rows and 'class="best"' not in rows["oracle"]  # the gold reader is never "best"
    assert re.search(r'class="best" title="best in this column \(lowest\)"', rows["bm25"])  # fewest prompt tokens
    # significance by direction, on the run's summary made significant both ways (a real run of 6 questions cannot be)
    data = load_run(out)
    summary = copy.deepcopy(data.summary)
    for family in summary["p_adjustment"].get("families", {}).values():
        family["reachable"] = True
    for label, sign in (("bm25", -1), ("oracle", +1)):
        summary["comparisons"][label]["em"] |= {"mean_difference": sign * 20.0, "p_value": 0.001, "p_holm": 0.001}
    data.summary = summary
    page = render_html(data, [], [], {}, None)
    paired = page.split('id="paired-table"', 1)[1].split("</table>", 1)[0]
    cells = {label: re.search(r'<td class="([^"]*)"[^>]*data-v="([^"]+)"', paired.split(f'data-v="{label}"', 1)[1])
             for label in ("bm25", "oracle")}
    assert cells["bm25"].groups() == ("sig worse", "-20.0") and cells["oracle"].groups() == ("sig better", "20.0")
    assert re.search(r"td\.sig\.better\{background:#[0-9a-f]{6}\}td\.sig\.worse\{background:#[0-9a-f]{6}\}", page)


def test_the_compare_view_opens_on_the_primary_against_the_baseline(run: tuple[Path, str]) -> None:
    _, html = run
    assert '<th id="compare-head-a">A: bm25</th>' in html and '<th id="compare-head-b">B: none</th>' in html


def test_no_absolute_path_of_this_machine(run: tuple[Path, str]) -> None:
    out, html = run
    for folder in {str(REPO), str(out), str(out.parent), str(Path.home())}:
        assert folder not in html, folder
    assert "tests/data/hotpotqa-train-sf100.json" in html  # the input, relative to the source tree
    assert shown_path(out / "plots" / "x.png", out) == "plots/x.png"
    assert shown_path("/somewhere/else/file.json", out) == ".../file.json"
    assert shown_path("relative/stays.json", out) == "relative/stays.json"
