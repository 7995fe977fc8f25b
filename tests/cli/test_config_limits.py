"""Issue 53 row 10: a 5,000-digit integer or a 2,000-deep array in a config file or ``--set`` is a
ConfigError naming the file (or the --set key), and ``config validate`` lists it instead of
crashing with "a bug in ragsift"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.cli import main
from ragsift.config import load_config, parse_override
from ragsift.errors import ConfigError

VALUES = {
    "digits": ("9" * 5000, "an integer with more than 4300 digits"),
    "deep": ("[" * 2000 + "]" * 2000, "nested too deeply"),
    "deep-but-readable": ("[" * 100 + "]" * 100, "nested more than 64 levels deep"),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_a_config_file_with_such_a_value_is_a_clear_error(tmp_path: Path, case: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    value, needle = VALUES[case]
    config = tmp_path / "odd.toml"
    config.write_text(f'[compressor]\nname = "bm25"\n[compressor.selector]\nname = "top-k"\nk = {value}\n')
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(config)
    assert str(config) in str(info.value)
    assert main(["config", "validate", str(config)]) != 0
    err = capsys.readouterr().err
    assert f"ragsift: error: {config}: " in err and needle in err and "bug in ragsift" not in err


@pytest.mark.parametrize("case", sorted(VALUES))
def test_a_set_with_such_a_value_is_a_clear_error(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    value, needle = VALUES[case]
    with pytest.raises(ConfigError, match=needle) as info:
        parse_override(f"compressor.selector.k={value}")
    assert "--set compressor.selector.k" in str(info.value) and value not in str(info.value)
    assert main(["compress", "-c", "bm25", "--set", f"compressor.selector.k={value}", "--limit", "1", "-q"]) != 0
    err = capsys.readouterr().err
    assert err.count("ragsift: error:") == 1 and needle in err and "bug in ragsift" not in err
