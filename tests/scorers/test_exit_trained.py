"""``config validate``'s checks of a Yes/No scorer's readout and adapter files (and the shipped
exit-trained config with its readout, models/exit-trained)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragsift.cli import main
from ragsift.lm.readout import save_readout
from ragsift.models import OFFLINE_SMOLLM2

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "exit-trained.toml"
READOUT = REPO / "models" / "exit-trained" / "readout.safetensors"


def _validate(capsys, *paths: Path) -> tuple[int, str, str]:
    code = main(["config", "validate", *map(str, paths)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _config(tmp_path: Path, name: str, **scorer: str) -> Path:
    fields = "".join(f'{key} = "{value}"\n' for key, value in scorer.items())
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[compressor]\nname = "exit"\n[compressor.scorer]\nname = "causal-yes-no"\n'
                    f'model = "{OFFLINE_SMOLLM2}"\ndevice = "cpu"\n{fields}')
    return path


def test_config_validate_names_a_missing_or_broken_readout_and_a_missing_adapter(capsys, tmp_path):
    missing = _config(tmp_path, "missing", adapter="", readout=str(tmp_path / "nowhere.safetensors"))
    code, _, err = _validate(capsys, missing)
    assert code == 2 and f"{missing}, compressor 'exit'" in err and "nowhere.safetensors': no such file or folder" in err, err
    (tmp_path / "broken.safetensors").write_text("not tensors")
    broken = _config(tmp_path, "broken", adapter="", readout=str(tmp_path / "broken.safetensors"))
    code, _, err = _validate(capsys, broken)
    assert code == 2 and str(broken) in err and "broken.safetensors: not a safetensors readout file" in err, err
    no_adapter = _config(tmp_path, "no-adapter", adapter="models/no-such-adapter")
    code, _, err = _validate(capsys, no_adapter)
    assert code == 2 and str(no_adapter) in err and "adapter 'models/no-such-adapter': no such folder" in err, err
    save_readout(tmp_path / "good.safetensors", np.zeros(576), 0.0)
    good = _config(tmp_path, "good", adapter="", readout=str(tmp_path / "good.safetensors"))
    code, out, err = _validate(capsys, good)
    assert code == 0 and out.count(": OK") == 1, err
def test_the_shipped_config_validates_with_its_readout(capsys):
    assert READOUT.is_file() and READOUT.stat().st_size < 20_000
    code, out, err = _validate(capsys, CONFIG)
    assert code == 0 and ": OK" in out, err


@pytest.mark.slow
def test_the_shipped_readout_scores_in_unit_range_and_keeps_evidence():
    """exit-trained on one development question of data/training/ cut to its two supporting
    documents (SmolLM2 on CPU: about ten sentences)."""
    from dataclasses import replace

    from ragsift.config import load_config
    from ragsift.datasets import load_examples

    compressors = load_config(CONFIG).build_compressors()
    trained = compressors["exit-trained"]
    scorer = trained.stages["scorer"]
    assert scorer.params.readout == "models/exit-trained/readout.safetensors"
    example = next(iter(load_examples(REPO / "data" / "training" / "hotpotqa-dev-pool.json", limit=1)))
    supporting = sorted({span.doc_index for span in example.evidence})
    example = replace(example, documents=tuple(example.documents[i] for i in supporting), evidence=None)
    result = trained.compress(example)
    scores = np.array(result.scores)
    assert len(scores) >= 4 and np.all((scores >= 0) & (scores <= 1))
    assert result.kept, "exit-trained kept nothing"
