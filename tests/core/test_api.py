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


def test_the_front_door_exports_the_plugin_authors_surface_and_loads_no_plugin():
    import subprocess
    import sys

    code = (
        "import sys, ragsift\n"
        "assert not any(m.startswith(('ragsift.scorers.bm25', 'ragsift.compressors.exit', 'torch')) for m in sys.modules)\n"
        "missing = [n for n in ragsift.__all__ if getattr(ragsift, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert ragsift.Scorer.stage == 'scorer' and ragsift.Judge.stage == 'judge'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("bad", [None, 5, "", ["bm25"]])
def test_load_compressor_of_a_wrong_value_is_a_usage_error(bad):
    """Issue 24, case 11: the library's usage error, not an AttributeError from deep inside."""
    import ragsift
    from ragsift.errors import UsageError

    with pytest.raises(UsageError, match="load_compressor: expected a config name"):
        ragsift.load_compressor(bad)


def test_the_lazy_names_are_in_dir():
    import ragsift

    assert {"load_compressor", "load_config", "make_example", "check_plugin"} <= set(dir(ragsift))
    assert set(ragsift.__all__) <= set(dir(ragsift))


def test_load_compressor_overrides_a_stage_the_config_gives_by_name(tmp_path):
    config = tmp_path / "named.toml"
    config.write_text('[compressor]\nname = "bm25"\nselector = "top-k"\n')
    compressor = ragsift.load_compressor(str(config), selector={"k": 2})
    assert (compressor.config()["selector"]["name"], compressor.config()["selector"]["k"]) == ("top-k", 2)
    assert ragsift.load_compressor(str(config), selector="threshold").config()["selector"]["name"] == "threshold"


def test_the_only_compressor_check_has_one_message_for_every_entry_point(tmp_path):
    config = tmp_path / "two.toml"
    config.write_text('[compressors.a]\nname = "bm25"\n[compressors.b]\nname = "random"\n')
    with pytest.raises(ConfigError, match=r"'load_compressor' needs a config with one compressor; it has 2 \(a, b\)"):
        ragsift.load_compressor(str(config))
    from ragsift.cli import main

    assert main(["compress", "-c", str(config), "-o", str(tmp_path / "out.jsonl")]) != 0


def test_make_example_takes_sentence_spans_and_the_service_builds_the_same_example():
    from ragsift.service.schema import ExampleIn

    text = "Marie Curie, physicist. Born in Warsaw"  # one span the sentencizer would not find
    docs = [{"title": "Curie", "text": text, "sentence_spans": [[0, 23], [24, len(text)]], "score": 2}]
    example = ragsift.make_example("Where was she born?", docs, answers="Warsaw", id="q")
    assert example.documents[0].sentence_spans == ((0, 23), (24, len(text))) and example.documents[0].score == 2.0
    served = ExampleIn(question="Where was she born?", documents=docs, id="q", answers=["Warsaw"]).to_example(0)
    assert served == example
    result = ragsift.load_compressor("bm25", splitter="presplit", selector={"k": 1}).compress(example)
    assert [s.text for s in result.sentences] == ["Marie Curie, physicist.", "Born in Warsaw"]


@pytest.mark.parametrize(("spans", "problem"), [([[0, 99]], r"span \[0, 99\) is not inside the text \(5 characters\)"),
                                                ([[0, 1, 2]], "pair of integers"), ([["0", "1"]], "pair of integers")])
def test_make_example_refuses_a_sentence_span_outside_the_text(spans, problem):
    from ragsift.errors import UsageError

    with pytest.raises(UsageError, match=rf"make_example: document 0: .*{problem}"):
        ragsift.make_example("q", [{"text": "hello", "sentence_spans": spans}])
