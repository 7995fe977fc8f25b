"""The model card written next to trained weights: ``card.json`` and a readable ``README.md``.

Anything below the line ``<!-- notes -->`` in an existing README.md (evaluation figures added
by hand, say) is kept when the card is written again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_card", "NOTES_MARKER"]

NOTES_MARKER = "<!-- notes -->"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _markdown(card: dict[str, Any]) -> str:
    lines = [f"# {card['name']}", "", card.get("description", "").strip(), ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| trainer | `{card['trainer']['name']}` |", f"| base model | {card['base_model'] or 'none (fitted from scratch)'} |",
              f"| scorer | `{json.dumps(card['scorer'])}` |", f"| labels | {card['labels']} |"]
    for role, info in card["data"].items():
        if info:
            lines.append(f"| {role} data | `{info['path']}` ({info['questions']} questions, sha256 `{info['sha256'][:16]}…`) |")
    if card.get("labeler"):
        lines.append(f"| labeler | `{json.dumps(card['labeler'])}` |")
    lines += [f"| seed | {card['seed']} |", f"| training time | {card['training_seconds']:.1f} s ({card['machine']}) |",
              f"| ragsift | {card['ragsift_version']} (commit {card.get('git_commit') or 'unknown'}) |", ""]
    lines += ["## Hyper-parameters", "", "```json", json.dumps(card["hyperparameters"], indent=2), "```", ""]
    report = card["report"]
    lines += ["## Development questions", ""]
    if report.get("chosen"):
        chosen = report["chosen"]
        lines += [f"{report['development_questions']} questions, {report['development_sentences']} sentences. "
                  f"ROC-AUC {_fmt(report.get('roc_auc'))}. Chosen selection: `{json.dumps(chosen['selector'])}` "
                  f"(evidence P {chosen['precision']:.3f}, R {chosen['recall']:.3f}, F1 {chosen['f1']:.3f}, "
                  f"{chosen['kept']:.2f} sentences kept per question"
                  + (f", nothing kept on {chosen['empty']:.1%} of the questions" if "empty" in chosen else "")
                  + (f"; thresholds limited to those keeping nothing on at most {report['max_empty']:.1%}"
                     if report.get("max_empty") is not None else "") + ").", ""]
        lines += ["| k | P | R | F1 |", "|---:|---:|---:|---:|"]
        lines += [f"| {k} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} |" for k, v in report["top_k"].items()]
        lines += ["", "Confusion per sample type at the chosen selection:", "", "| type | kept | dropped |", "|---|---:|---:|"]
        lines += [f"| {kind} | {row['kept']} | {row['dropped']} |" for kind, row in report["confusion"].items()]
        lines.append("")
    else:
        lines += ["No development questions.", ""]
    if report.get("final"):
        final = ", ".join(f"{k} {v:.4f}" for k, v in report["final"].items() if k != "step")
        lines += [f"Final step {report['final']['step']}: {final}", ""]
    lines += [f"Figures: {', '.join(report.get('figures', [])) or 'none'}. Command: `{card['command']}`", ""]
    return "\n".join(lines)


def write_card(output: Path, card: dict[str, Any]) -> None:
    (output / "card.json").write_text(json.dumps(card, indent=2, default=str) + "\n", encoding="utf-8")
    readme = output / "README.md"
    notes = ""
    if readme.is_file():
        text = readme.read_text(encoding="utf-8")
        if NOTES_MARKER in text:
            notes = text[text.index(NOTES_MARKER):]
    readme.write_text(_markdown(card) + "\n" + (notes or f"{NOTES_MARKER}\n"), encoding="utf-8")
