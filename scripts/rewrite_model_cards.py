"""Write the model cards of the shipped models (models/*/card.json) again with the current card
writer (Hugging Face metadata, portable paths, the LoRA adapter's Hub base), without training:
python scripts/rewrite_model_cards.py [MODEL_FOLDER ...]"""

from __future__ import annotations

import sys
from pathlib import Path

from ragsift.training.card import rewrite_card

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    folders = [Path(a) for a in sys.argv[1:]] or sorted(p.parent for p in (ROOT / "models").glob("*/card.json"))
    for folder in folders:
        rewrite_card(folder)
        print(f"rewrote {folder / 'README.md'} and {folder / 'card.json'}")
