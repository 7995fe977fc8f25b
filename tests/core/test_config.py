from __future__ import annotations

import pytest

from ragsift.config import find_config, load_config
from ragsift.errors import ConfigError, UnknownPluginError
from ragsift.registry import build_plugin


def write(tmp_path, text, name="c.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_baseline_configs_validate():
    for name in ["none", "oracle", "random", "bm25", "embedding"]:
        config = load_config(name)
        config.validate_all()
        assert list(config.compressor_specs()) == [name]


def test_stage_params_override_defaults_and_keep_the_rest(tmp_path):
    config = load_config(write(tmp_path, '[compressor]\nname = "bm25"\n[compressor.selector]\nk = 2\n'))
    (comp,) = config.build_compressors().values()
    assert comp.config()["selector"] == {"name": "top-k", "k": 2, "per_document": False}
    assert comp.config()["scorer"]["name"] == "bm25"


def test_stage_swapped_by_name(tmp_path):
    config = load_config(
        write(tmp_path, '[compressor]\nname = "bm25"\n[compressor.selector]\nname = "threshold"\nthreshold = 3.0\n')
    )
    (comp,) = config.build_compressors().values()
    assert comp.config()["selector"] == {"name": "threshold", "threshold": 3.0}


def test_bad_stage_param_names_config_plugin_and_value(tmp_path):
    path = write(tmp_path, '[compressor]\nname = "bm25"\n[compressor.selector]\nk = -1\n')
    with pytest.raises(ConfigError) as info:
        load_config(path).validate_all()
    message = str(info.value)
    assert str(path) in message and "TopKSelector" in message and "'k'" in message and "got -1" in message


def test_unknown_stage_param_is_rejected_with_known_keys(tmp_path):
    path = write(tmp_path, '[compressor]\nname = "bm25"\n[compressor.scorer]\nk3 = 1\n')
    with pytest.raises(ConfigError, match=r"BM25Scorer: unknown parameter 'k3' \(known: b, epsilon, k1\)"):
        load_config(path).validate_all()


def test_unknown_compressor_lists_names(tmp_path):
    with pytest.raises(UnknownPluginError, match=r"Unknown compressor 'bm-25'\. Available compressors: .*bm25"):
        load_config(write(tmp_path, '[compressor]\nname = "bm-25"\n')).validate_all()


def test_unknown_top_level_key_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="unknown parameter 'compresor'"):
        load_config(write(tmp_path, '[compresor]\nname = "bm25"\n'))
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[compressor\n"))


def test_missing_name_and_missing_compressor(tmp_path):
    with pytest.raises(ConfigError, match="needs a 'name'"):
        build_plugin("selector", {"k": 3})
    with pytest.raises(ConfigError, match=r"no compressor"):
        load_config(write(tmp_path, 'description = "x"\n')).compressor_specs()


def test_several_labelled_compressors(tmp_path):
    config = load_config(write(tmp_path, '[compressors.a]\nname = "bm25"\n[compressors.b]\nname = "random"\n'))
    assert list(config.build_compressors()) == ["a", "b"]


def test_generic_pipeline_needs_every_stage(tmp_path):
    with pytest.raises(ConfigError, match=r"stage 'splitter' needs a plugin"):
        build_plugin("compressor", {"name": "pipeline"})
    comp = build_plugin(
        "compressor",
        {"name": "pipeline", "splitter": {"name": "regex"}, "scorer": {"name": "bm25"}, "selector": {"name": "all"},
         "assembler": {"name": "rank-order"}},
    )
    assert comp.config()["assembler"]["name"] == "rank-order"


def test_find_config_unknown_name_lists_configs():
    with pytest.raises(ConfigError, match=r"No config 'nope'.*bm25"):
        find_config("nope")


def test_dataset_table_names_loader_path_and_params(tmp_path, data_dir):
    path = write(
        tmp_path,
        f'[dataset]\nname = "squad2"\npath = "{data_dir / "squad-v2-dev-small.json"}"\nmax_distractors = 2\n'
        '[compressor]\nname = "bm25"\n',
    )
    examples = list(load_config(path).data().load(limit=3))
    assert len(examples) == 3 and all(len(e.documents) == 3 for e in examples)
    # another file given on the command line: its format is detected, the table's params don't apply
    other = list(load_config(path).data(data_dir / "hotpotqa-train-sf100.json").load(limit=2))
    assert len(other) == 2 and len(other[0].documents) == 10


def test_dataset_defaults_to_bundled_sample(tmp_path):
    examples = list(load_config(write(tmp_path, '[compressor]\nname = "bm25"\n')).data().load(limit=2))
    assert len(examples) == 2 and examples[0].evidence


@pytest.mark.parametrize("label", ["bad\\u0000label", "two\\nlines", "evil\\u202etxt.exe", "  "])
def test_compressor_labels_with_control_characters_are_refused(tmp_path, label):
    """Issue 24, case 8: a label names files, table rows and log lines; NUL, a line break or a
    bidirectional override would corrupt or disguise them."""
    from ragsift.config import load_config
    from ragsift.errors import ConfigError

    path = tmp_path / "labels.toml"
    path.write_text(f'[compressors."{label}"]\nname = "none"\n')
    config = load_config(path)
    with pytest.raises(ConfigError, match=rf"^{path} \[compressors\]: the compressor label .* (contains the control character|is blank)"):
        config.build_compressors()


def test_an_unknown_compressor_names_the_file_and_the_label(tmp_path):
    """Issue 24, case 13."""
    from ragsift.config import load_config
    from ragsift.errors import UnknownPluginError

    path = tmp_path / "unknown.toml"
    path.write_text('[compressors.mine]\nname = "no-such-compressor"\n')
    with pytest.raises(UnknownPluginError, match=rf"^{path} \[compressors\.mine\]: Unknown compressor 'no-such-compressor'"):
        load_config(path).build_compressors()
