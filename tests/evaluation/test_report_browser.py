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
    assert '<table class="results">' in dom and "<th>compressor</th>" in dom  # the results table
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', dom)
    assert len(images) == 4  # the plots, embedded
    assert re.search(r'<details class="ex" id="ex-[^"]+" open="?"?>', dom)  # the first example is open
    assert re.search(r'<span class="[^"]*\bk\d\b[^"]*">', dom)  # kept pieces
    assert re.search(r'<span class="[^"]*\bgold\b[^"]*">', dom)  # gold evidence
    assert re.search(r'<input type="radio"[^>]* checked', dom)

    shot = tmp_path / "report.png"
    _browser(tmp_path, f"--screenshot={shot}", "--window-size=1280,5200", url)
    data = shot.read_bytes()
    image = Image.open(io.BytesIO(data))
    assert image.size == (1280, 5200) and len(data) > 100_000
    assert _pixels(image, KEPT) > 2_000, "no highlighted (kept) sentence drawn"
    assert _pixels(image, GOLD) > 200, "no gold-evidence underline drawn"
    assert _pixels(image, BARS) > 2_000, "the plots are not drawn"
