"""report.html opened in headless Chromium (Debian's ``chromium``; scripts/setup.sh installs it):
the DOM a browser builds, and a screenshot in which the table, the plots and the highlighted
sentences are actually drawn."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from report_runs import reader_run

pytestmark = pytest.mark.slow

KEPT = (0xBF, 0xE8, 0xC4)  # the highlight of a kept piece (example_view.view_css)
TOP_SCORE = (0xA9, 0xC3, 0xEC)  # a dropped sentence in the top quarter of the chosen compressor's scores
GOLD = (0xF0, 0xA0, 0x00)  # the underline of gold evidence
BARS = (0x4C, 0x72, 0xB0)  # the evidence-precision bars (plots.plot_evidence)


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is missing: run scripts/setup.sh (apt-get install chromium) to test the report"
    return path


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"  # its own profile: runs in parallel do not share a lock
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
               "--no-first-run", f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def _pixels(image: Image.Image, colour: tuple[int, int, int], tolerance: int = 6) -> int:
    rgb = image.convert("RGB")
    return sum(count for count, c in rgb.getcolors(maxcolors=1 << 24) or []
               if all(abs(a - b) <= tolerance for a, b in zip(c, colour, strict=True)))


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    out, _ = reader_run(tmp_path)
    url = (out / "report.html").resolve().as_uri()

    dom = _browser(tmp_path, "--dump-dom", url).stdout
    assert '<table class="results sortable" id="results-table">' in dom and re.search(r"<th[^>]*>compressor</th>", dom)
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', dom)
    assert len(images) == 4  # the plots, embedded
    assert re.search(r'<details class="ex" id="ex-[^"]+" open="?"?>', dom)  # the first example is open
    assert re.search(r'<span class="[^"]*\bk\d\b[^"]*"', dom)  # kept pieces
    assert re.search(r'<span class="[^"]*\bgold\b[^"]*"', dom)  # gold evidence
    assert re.search(r'<input type="radio"[^>]* checked', dom)

    shot = tmp_path / "report.png"
    _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,8000", url)
    data = shot.read_bytes()
    image = Image.open(io.BytesIO(data))
    assert image.size == (1280, 8000) and len(data) > 100_000
    assert _pixels(image, KEPT) > 2_000, "no highlighted (kept) sentence drawn"
    assert _pixels(image, GOLD) > 200, "no gold-evidence underline drawn"
    assert _pixels(image, BARS) > 2_000, "the plots are not drawn"


_PROBE = """<script>(function () {
  var out = {};
  ["results-table-wrap", "paired-table-wrap"].forEach(function (id) {
    var e = document.getElementById(id);
    out[id] = e.scrollWidth + "/" + e.clientWidth;
  });
  document.body.setAttribute("data-probe", JSON.stringify(out));
})();</script></body>"""


def _first_metric_heading(dom: str, table: str) -> str:
    head = dom.split(f'id="{table}"', 1)[1].split("</thead>", 1)[0]
    headings = [h for h in re.findall(r"<th[^>]*>([^<]*)</th>", head) if h not in ("compressor", "n")]
    return headings[0]


def test_report_at_1400_px_outcome_first_compare_view_and_without_script(tmp_path: Path) -> None:
    """Issue 27: at 1,400 px EM is the first metric column of the results and the paired tables and
    neither overflows; the compare view for two named compressors (none against bm25, from the
    link's #compare=none,bm25) lists a question where they differ in EM first; sentences are
    shaded by score; with script disabled the page still holds the tables, the compare view and
    the highlighted examples."""
    import json

    out, _ = reader_run(tmp_path)
    records = {label: {json.loads(line)["id"]: json.loads(line)["metrics"]["em"] for line in
                       (out / "predictions" / f"{label}.jsonl").read_text().splitlines()} for label in ("none", "bm25")}
    differing = [i for i in records["none"] if records["none"][i] != records["bm25"][i]]
    assert differing, "the fake reader should make bm25 miss some answers"
    probe = out / "probe.html"
    probe.write_text((out / "report.html").read_text(encoding="utf-8").replace("</body>", _PROBE), encoding="utf-8")
    url = probe.resolve().as_uri() + "#compare=none,bm25"

    dom = _browser(tmp_path, "--window-size=1400,900", "--dump-dom", url).stdout
    assert _first_metric_heading(dom, "results-table") == "EM (%)"
    assert _first_metric_heading(dom, "paired-table") == "EM"
    widths = json.loads(re.search(r'data-probe="([^"]+)"', dom).group(1).replace("&quot;", '"'))
    for table, value in widths.items():
        scroll, client = map(int, value.split("/"))
        assert scroll <= client, f"{table} overflows at 1400 px ({scroll} > {client})"
    # the script rendered the pair named in the link: none (A) is right where bm25 (B) is wrong
    assert '<th id="compare-head-a">A: none</th>' in dom and '<th id="compare-head-b">B: bm25</th>' in dom
    rows = re.findall(r'<tr class="([^"]+)" data-id="([^"]+)"', dom.split('id="compare-body"', 1)[1])
    assert rows[0] == ("a-right", differing[0])
    assert re.search(r'<span class="[^"]*\bs\d-4\b[^"]*" title="[^"]*#1/\d+', dom)  # score level and rank

    shot = tmp_path / "report-1400.png"
    _browser(tmp_path, f"--screenshot={shot}", "--window-size=1400,6000", (out / "report.html").resolve().as_uri())
    image = Image.open(io.BytesIO(shot.read_bytes()))
    assert _pixels(image, TOP_SCORE, tolerance=3) > 500, "no score shading drawn"

    # without script: the page with its scripts taken out (headless Chromium's own dump and
    # screenshot need JavaScript, so --blink-settings=scriptEnabled=false cannot be used here)
    page = (out / "report.html").read_text(encoding="utf-8")
    bare = out / "noscript.html"
    bare.write_text(re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S), encoding="utf-8")
    assert "<script" not in bare.read_text(encoding="utf-8")
    off = _browser(tmp_path, "--window-size=1400,900", "--dump-dom", bare.resolve().as_uri()).stdout
    assert 'data-v="' in off and _first_metric_heading(off, "results-table") == "EM (%)"
    # the default pair (bm25 against none), rendered in the page: a question bm25 gets wrong first
    static = re.findall(r'<tr class="([^"]+)" data-id="([^"]+)"', off.split('id="compare-body"', 1)[1])
    assert static[0] == ("b-right", differing[0]) and len(static) == 6
    assert re.search(r'<input type="radio"[^>]* checked', off) and re.search(r'<span class="[^"]*\bk\d\b', off)
    shot_off = tmp_path / "report-noscript.png"
    _browser(tmp_path, f"--screenshot={shot_off}", "--window-size=1400,6000", bare.resolve().as_uri())
    image_off = Image.open(io.BytesIO(shot_off.read_bytes()))
    assert _pixels(image_off, KEPT) > 2_000, "no kept sentence drawn without script"
    assert _pixels(image_off, TOP_SCORE, tolerance=3) > 500, "no score shading drawn without script"


_TOPS = """<script>(function () {
  var out = {};
  ["answer", "primary", "results-table", "plot-tradeoff_tokens", "plot-tradeoff_latency", "tests"].forEach(function (id) {
    var e = document.getElementById(id);
    out[id] = e ? Math.round(e.getBoundingClientRect().top + window.scrollY) : -1;
  });
  document.body.setAttribute("data-tops", JSON.stringify(out));
})();</script></body>"""


def test_at_1400_px_the_answer_and_the_tradeoff_plot_are_on_the_first_two_screens(tmp_path: Path) -> None:
    """Issue 51: the frontier sentence, the primary verdict and the trade-off plot within the first
    two screens (1,400 x 900 px), the plots before the paired tests (the old page put them after)."""
    import json

    out, _ = reader_run(tmp_path, evaluation='primary = "bm25"')
    probe = out / "tops.html"
    probe.write_text((out / "report.html").read_text(encoding="utf-8").replace("</body>", _TOPS), encoding="utf-8")
    dom = _browser(tmp_path, "--window-size=1400,900", "--dump-dom", probe.resolve().as_uri()).stdout
    tops = json.loads(re.search(r'data-tops="([^"]+)"', dom).group(1).replace("&quot;", '"'))
    assert 0 <= tops["answer"] < 900 and "frontier" in dom.split('id="answer"', 1)[1].split("</div>", 1)[0]
    assert 0 <= tops["plot-tradeoff_tokens"] < 2 * 900, tops
    assert tops["answer"] < tops["results-table"] < tops["plot-tradeoff_tokens"] < tops["tests"], tops
