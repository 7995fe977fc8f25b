"""Issue 53 row 8: a compressor label holding a ``$`` pair (``cost$1$``, ``$\\frac``) is drawn as
text, never parsed as matplotlib mathtext (which crashed the report, or rendered it as math)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.evaluation.report import plots as pl
from ragsift.evaluation.report.plots import TradeoffPoint, plot_evidence, plot_latency_stages, plot_tradeoff

LABELS = ["bm25 $k$", "cost$\\frac{$", "a$^$b", "plain"]


def _summary() -> dict:
    values = {"evidence_precision": {"mean": 0.5, "low": 0.4, "high": 0.6},
              "evidence_recall": {"mean": 0.6, "low": 0.5, "high": 0.7}}
    return {"metrics": {"evidence_precision": {"label": "precision $x$"}, "evidence_recall": {"label": "recall"}},
            "compressors": {label: {"values": values, "latency_ms": {"split": {"mean": 1.0}, "score": {"mean": 5.0}}}
                            for label in LABELS},
            "confidence": 0.95}


@pytest.fixture
def texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text drawn, collected when a figure is saved (after a full draw)."""
    from matplotlib.text import Text

    seen: list[str] = []
    save = pl._save

    def drawing_save(fig, out: Path, tight: bool = False) -> Path:
        fig.canvas.draw()
        for text in fig.findobj(Text):
            if text.get_text():
                assert not text.get_usetex()
                assert text._preprocess_math(text.get_text()) == (text.get_text(), False)  # drawn as it reads
                seen.append(text.get_text())
        return save(fig, out, tight)

    monkeypatch.setattr(pl, "_save", drawing_save)
    return seen


def test_dollar_labels_are_drawn_as_text_in_every_plot(tmp_path: Path, texts: list[str]) -> None:
    points = [TradeoffPoint(label, i, i, i, 30.0 + i, 30.0 + i, 30.0 + i) for i, label in enumerate(LABELS)]
    assert plot_tradeoff([("EM $%$", points)], "tokens", "EM $ against $ tokens", tmp_path / "t.png").exists()
    assert plot_evidence(_summary(), tmp_path / "e.png") is not None
    assert plot_latency_stages(_summary(), tmp_path / "l.png") is not None
    for label in LABELS:
        assert label in texts


def test_the_host_process_keeps_its_own_math_setting(tmp_path: Path) -> None:
    import matplotlib

    before = matplotlib.rcParams["text.parse_math"]
    plot_evidence(_summary(), tmp_path / "e.png")
    assert matplotlib.rcParams["text.parse_math"] == before


def test_a_log_axis_labels_its_ticks_as_plain_numbers(tmp_path: Path, texts: list[str]) -> None:
    """Costs spanning more than 20x draw a log axis: its ticks read 100, 1000, not $\\mathdefault{10^{2}}$."""
    points = [TradeoffPoint(label, 50.0 * 10 ** i, 40.0 * 10 ** i, 60.0 * 10 ** i, 30.0 + i, 30.0 + i, 30.0 + i)
              for i, label in enumerate(LABELS[:3])]
    plot_tradeoff([("EM", points)], "tokens", "EM against tokens", tmp_path / "t.png")
    assert not [t for t in texts if "mathdefault" in t or "^{" in t]
    assert "100" in texts and "1000" in texts
