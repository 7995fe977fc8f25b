from __future__ import annotations

import pytest

import ragsift
from ragsift.errors import ConfigError


def test_compress_from_python_in_three_lines():
    example = ragsift.make_example(
        "Which city was she born in?",
        [("Marie Curie", "Marie Curie was a physicist. She was born in Warsaw."), "Paris is in France. It is big."],
    )
    compressor = ragsift.load_compressor("bm25", selector={"k": 1})
    result = compressor.compress(example)
    assert result.text == "She was born in Warsaw."


def test_load_compressor_from_a_config_name_with_overrides():
    compressor = ragsift.load_compressor("random", selector={"k": 2})
    assert compressor.config()["selector"]["k"] == 2
    assert compressor.config()["scorer"] == {"name": "random", "seed": 0}


def test_load_compressor_unknown_name():
    with pytest.raises(ConfigError, match="neither a registered compressor"):
        ragsift.load_compressor("nope")
