"""Issue 53 row 14: records.csv quotes text a spreadsheet would run as a formula (OWASP, "CSV
Injection"): questions, answers and predictions come from data files and readers."""

from __future__ import annotations

import csv

from ragsift.evaluation.report.html import write_csv


def test_text_starting_like_a_formula_gets_a_leading_quote(tmp_path):
    starts = ["=HYPERLINK(\"http://x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"]
    rows = [{"id": f"q{i}", "compressor": "bm25", "question": text, "answers": text, "prediction": text, "em": -1.0}
            for i, text in enumerate(starts)]
    rows.append({"id": "plain", "compressor": "bm25", "question": "Who owns MTV?", "answers": "Viacom",
                 "prediction": None, "em": 0.5})
    path = write_csv(tmp_path / "records.csv", rows)
    read = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    for text, row in zip(starts, read, strict=False):
        assert row["question"] == row["answers"] == row["prediction"] == "'" + text
        assert row["em"] == "-1.0"  # a number is a number, not text
    assert read[-1] == {"id": "plain", "compressor": "bm25", "question": "Who owns MTV?", "answers": "Viacom",
                        "prediction": "", "em": "0.5"}
