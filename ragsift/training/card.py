"""The model card written next to trained weights: ``card.json`` and a readable ``README.md``.

The README starts with Hugging Face's YAML metadata (``license``, ``base_model`` as a Hub id,
``library_name: ragsift``, ``tags``, ``datasets``, and a ``model-index`` with the development
metrics the card reports), so the folder uploads to the Hub as it is and
``huggingface_hub.ModelCard.load`` reads it. Paths in the card are relative (to ragsift's shipped
data, the working directory or the model folder's parent), never this machine's. A LoRA adapter's
``adapter_config.json`` names its base by Hub id (``base_model_name_or_path``, what peft resolves);
ragsift's own offline location of the base stays in ``card.json`` (``base_model``).

Anything below the line ``<!-- notes -->`` in an existing README.md (evaluation figures added
by hand, say) is kept when the card is written again. :func:`rewrite_card` writes a card again
from its recorded ``card.json`` (no training).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ragsift.provenance import portable_path

__all__ = ["write_card", "rewrite_card", "hub_metadata", "portable_paths", "NOTES_MARKER", "LICENSE", "DATASETS"]

#: the licence of the trained files: ragsift's, and that of every base model they are trained on
LICENSE = "apache-2.0"
#: the Hub dataset the training and development pools of data/training/ come from
DATASETS = ["hotpotqa/hotpot_qa"]

NOTES_MARKER = "<!-- notes -->"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


#: a whole word that is an absolute path of two parts or more (``/work/x/models/m``), not prose such as ``a / b``
_ABSOLUTE = re.compile(r"/[\w.~+@-]+(?:/[\w.~+@-]+)+/?")


def _portable(text: str, roots: list[Path]) -> str:
    """``text`` with every absolute path under one of ``roots`` made relative to it; any other
    absolute path cut to its last part (a card must not hold this machine's paths)."""
    return " ".join(portable_path(Path(w), roots) or Path(w).name if _ABSOLUTE.fullmatch(w) else w
                    for w in text.split(" "))


def portable_paths(value: Any, output: Path) -> Any:
    """``value`` (a card, or any part of it) with absolute paths made portable (:func:`_portable`):
    relative to ragsift's shipped data, else the working directory, else the model folder's parent."""
    from ragsift.config_files import shipped_roots

    roots = [r.resolve() for r in (*shipped_roots(), Path.cwd(), output.resolve().parent)]
    if isinstance(value, dict):
        return {k: portable_paths(v, output) for k, v in value.items()}
    if isinstance(value, list):
        return [portable_paths(v, output) for v in value]
    return _portable(value, roots) if isinstance(value, str) else value


def _questions(card: dict[str, Any], role: str) -> int | None:
    info = (card.get("data") or {}).get(role)
    return None if not info else info.get("questions")


def hub_metadata(card: dict[str, Any]) -> dict[str, Any]:
    """The model card's Hugging Face YAML metadata, from the card."""
    from ragsift.models import hub_id

    report = card.get("report") or {}
    base = hub_id(card.get("base_model"))
    tags = ["ragsift", "rag", "context-compression", "evidence-selection", f"trainer:{card['trainer']['name']}"]
    if any(str(a).endswith("adapter_config.json") for a in card.get("artefacts") or []):
        tags += ["peft", "lora"]
    meta: dict[str, Any] = {"license": LICENSE, "library_name": "ragsift", "tags": tags, "datasets": DATASETS}
    if base:
        meta["base_model"] = base
    chosen = report.get("chosen")
    if chosen:
        metrics = [{"type": "roc_auc", "name": "development ROC-AUC", "value": round(report["roc_auc"], 4)}] \
            if report.get("roc_auc") is not None else []
        where = f"at {json.dumps(chosen['selector'])}"
        metrics += [{"type": key, "name": f"evidence {label} {where}", "value": round(chosen[key], 4)}
                    for key, label in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))]
        meta["model-index"] = [{"name": card["name"], "results": [{
            "task": {"type": "text-classification", "name": "Evidence sentence selection"},
            "dataset": {"type": DATASETS[0], "name": f"HotpotQA development pool of ragsift "
                        f"({report.get('development_questions')} questions)", "split": "development"},
            "metrics": metrics,
        }]}]
    return meta


def _front_matter(card: dict[str, Any]) -> str:
    import yaml

    return "---\n" + yaml.safe_dump(hub_metadata(card), sort_keys=False, allow_unicode=True) + "---\n"


def _run_note(card: dict[str, Any]) -> str:
    """What this run trained on, from its data: the config's description may describe another
    run (a ``--limit`` smoke run of a config written for the full data)."""
    train, dev = _questions(card, "train"), _questions(card, "development")
    said = f"This run: {train} training questions" + (f", {dev} development questions" if dev is not None else "")
    if card.get("limit"):
        return (f"**Smoke run (`--limit {card['limit']}`).** {said}; the description below is the training config's, "
                "written for its full run, so its counts are not this run's.")
    return f"{said}."


def _markdown(card: dict[str, Any]) -> str:
    lines = [f"# {card['name']}", "", _run_note(card), "", card.get("description", "").strip(), ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| trainer | `{card['trainer']['name']}` |", f"| base model | {card['base_model'] or 'none (fitted from scratch)'} |",
              f"| scorer | `{json.dumps(card['scorer'])}` |", f"| labels | {card['labels']} |"]
    for role, info in card["data"].items():
        if info:
            lines.append(f"| {role} data | `{info['path']}` ({info['questions']} questions, sha256 `{info['sha256'][:16]}…`) |")
    if card.get("labeler"):
        lines.append(f"| labeler | `{json.dumps(card['labeler'])}` |")
    lines += [f"| seed | {card['seed']} |", f"| training time | {card['training_seconds']:.1f} s ({card['machine']}) |",
              f"| ragsift | {card['ragsift_version']} (commit {(card.get('git') or {}).get('commit', '')[:12] or 'unknown'}) |", ""]
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


def _hub_adapter_configs(output: Path, card: dict[str, Any]) -> None:
    """Every LoRA ``adapter_config.json`` of the card's artefacts names its base by Hub id."""
    from ragsift.models import hub_id

    base = hub_id(card.get("base_model"))
    for name in card.get("artefacts") or []:
        path = output / name
        if base and path.name == "adapter_config.json" and path.is_file():
            config = json.loads(path.read_text(encoding="utf-8"))
            if config.get("base_model_name_or_path") != base:
                config["base_model_name_or_path"] = base
                path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def write_card(output: Path, card: dict[str, Any]) -> dict[str, Any]:
    """Write ``card.json`` and ``README.md`` (metadata, card, kept notes) into ``output``, with
    portable paths, and point LoRA adapters at their base's Hub id; return the card written."""
    card = portable_paths(card, output)
    (output / "card.json").write_text(json.dumps(card, indent=2, default=str) + "\n", encoding="utf-8")
    _hub_adapter_configs(output, card)
    readme = output / "README.md"
    notes = ""
    if readme.is_file():
        text = readme.read_text(encoding="utf-8")
        if NOTES_MARKER in text:
            notes = text[text.index(NOTES_MARKER):]
    readme.write_text(_front_matter(card) + "\n" + _markdown(card) + "\n" + (notes or f"{NOTES_MARKER}\n"), encoding="utf-8")
    return card


def rewrite_card(output: Path) -> dict[str, Any]:
    """Write the card of the trained model in ``output`` again from its ``card.json`` (as the
    current card writer does: metadata, portable paths, the adapter's Hub base), without training;
    a card recorded before ``limit`` was, reads it from its command (``--limit N``); one recorded
    before :func:`ragsift.provenance.stamp`, its ``git_commit`` as ``git``."""
    card = json.loads((output / "card.json").read_text(encoding="utf-8"))
    if "git_commit" in card and "git" not in card:
        card["git"] = {"commit": card.pop("git_commit")}
    if "limit" not in card:
        words = str(card.get("command", "")).split()
        card["limit"] = int(words[words.index("--limit") + 1]) if "--limit" in words[:-1] else None
    return write_card(output, card)
