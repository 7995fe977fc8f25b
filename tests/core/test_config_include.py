"""``include``: a config reads other config files first and merges itself over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsift.config import load_config, merge_tables
from ragsift.errors import ConfigError

READER = '''
description = "reader config"

[compressors.none]
name = "none"

[reader]
name = "transformers"
max_new_tokens = 32
stop = ["\\n"]

[evaluation]
limit = 30
seed = 3
'''


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_included_tables_are_merged_under_the_including_file(tmp_path, monkeypatch):
    write(tmp_path / "configs", "reader.toml", READER)
    main = write(tmp_path / "configs", "main.toml", '''
description = "main"
include = ["reader.toml"]

[compressors.bm25]
name = "bm25"

[reader]
max_new_tokens = 8

[evaluation]
limit = 5
''')
    monkeypatch.chdir(tmp_path)  # include paths are relative to the including file, not to the cwd
    config = load_config(main)
    assert config.description == "main"
    assert list(config.compressor_specs()) == ["none", "bm25"]
    assert config.reader == {"name": "transformers", "max_new_tokens": 8, "stop": ["\n"]}
    assert config.evaluation == {"limit": 5, "seed": 3}
    assert config.included_files == [(tmp_path / "configs" / "reader.toml").resolve()]
    config.validate_all()
    assert config.build_reader().config()["max_new_tokens"] == 8


def test_a_table_naming_another_plugin_replaces_the_included_one(tmp_path):
    write(tmp_path, "reader.toml", READER)
    main = write(tmp_path, "main.toml", 'include = "reader.toml"\n[reader]\nname = "openai"\nmodel = "m"\n')
    assert load_config(main).reader == {"name": "openai", "model": "m"}  # no transformers params carried over
    assert merge_tables({"a": {"name": "x", "k": 1}}, {"a": {"k": 2}}) == {"a": {"name": "x", "k": 2}}


def test_a_stage_given_by_name_takes_the_params_laid_over_it(tmp_path):
    """The one override rule: a plugin given by name is {"name": ...} before a table is merged over it."""
    write(tmp_path, "base.toml", '[compressors.bm25]\nname = "bm25"\nselector = "top-k"\n')
    main = write(tmp_path, "main.toml", 'include = "base.toml"\n[compressors.bm25.selector]\nk = 2\n')
    config = load_config(main)
    assert config.compressors["bm25"]["selector"] == {"name": "top-k", "k": 2}
    assert config.build_compressors()["bm25"].config()["selector"]["k"] == 2
    assert merge_tables({"s": {"name": "top-k", "k": 2}}, {"s": "top-k"}) == {"s": {"name": "top-k", "k": 2}}
    assert merge_tables({"s": {"name": "top-k", "k": 2}}, {"s": "threshold"}) == {"s": {"name": "threshold"}}


def test_nested_and_repeated_includes(tmp_path):
    write(tmp_path, "base.toml", '[evaluation]\nseed = 1\nwarmup = 0\n')
    write(tmp_path / "sub", "reader.toml", 'include = ["../base.toml"]\n' + READER.replace("seed = 3\n", ""))
    write(tmp_path, "other.toml", 'include = ["base.toml"]\n[evaluation]\nwarmup = 2\n')
    main = write(tmp_path, "main.toml", 'include = ["sub/reader.toml", "other.toml"]\n')
    config = load_config(main)  # base.toml twice, along two paths: not a cycle
    assert config.evaluation == {"seed": 1, "warmup": 2, "limit": 30}  # later includes win over earlier ones
    assert [p.name for p in config.included_files] == ["reader.toml", "base.toml", "other.toml", "base.toml"]


def test_a_missing_included_file_is_a_clear_error(tmp_path):
    main = write(tmp_path, "main.toml", 'include = ["readr.toml"]\n[compressors.none]\nname = "none"\n')
    with pytest.raises(ConfigError) as info:
        load_config(main)
    message = str(info.value)
    assert message.startswith(f"{main}: include 'readr.toml': no such file")
    assert str(tmp_path / "readr.toml") in message and "relative to the including file" in message


def test_include_cycles_are_refused(tmp_path):
    write(tmp_path, "a.toml", 'include = ["b.toml"]\n')
    write(tmp_path, "b.toml", 'include = ["a.toml"]\n')
    with pytest.raises(ConfigError, match=r"include 'a\.toml' makes a cycle: .*a\.toml -> .*b\.toml -> .*a\.toml"):
        load_config(tmp_path / "a.toml")
    write(tmp_path, "self.toml", 'include = "self.toml"\n')
    with pytest.raises(ConfigError, match="makes a cycle"):
        load_config(tmp_path / "self.toml")


@pytest.mark.parametrize("value", ["3", "[1]", '[""]', "{a = 1}"])
def test_include_must_name_files(tmp_path, value):
    with pytest.raises(ConfigError, match="include must be a file name or a list of file names"):
        load_config(write(tmp_path, "main.toml", f"include = {value}\n"))


def test_bad_toml_in_an_included_file_names_that_file(tmp_path):
    bad = write(tmp_path, "bad.toml", "[reader\n")
    with pytest.raises(ConfigError, match=rf"^{bad.resolve()}: not valid TOML"):
        load_config(write(tmp_path, "main.toml", 'include = ["bad.toml"]\n'))


def test_a_compressor_table_includes_one_compressor_of_another_config(tmp_path):
    write(tmp_path, "single.toml", '[compressor]\nname = "bm25"\n[compressor.selector]\nname = "top-k"\nk = 3\n')
    write(tmp_path, "multi.toml", '[compressors.a]\nname = "random"\n[compressors.b]\nname = "bm25"\n'
                                  '[compressors.b.selector]\nk = 4\n')
    main = write(tmp_path, "main.toml", '''
[compressors.one]
include = "single.toml"

[compressors.one.selector]
k = 2

[compressors.b]
include = "multi.toml"
''')
    config = load_config(main)
    assert config.compressor_specs() == {
        "one": {"name": "bm25", "selector": {"name": "top-k", "k": 2}},  # its own keys win
        "b": {"name": "bm25", "selector": {"k": 4}},                       # the same label in a file of several
    }
    assert [p.name for p in config.included_files] == ["single.toml", "multi.toml"]
    assert [c.config()["selector"]["k"] for c in config.build_compressors().values()] == [2, 4]


def test_a_compressor_include_names_what_is_missing(tmp_path):
    write(tmp_path, "multi.toml", '[compressors.a]\nname = "random"\n[compressors.b]\nname = "bm25"\n')
    main = write(tmp_path, "main.toml", '[compressors.c]\ninclude = "multi.toml"\n')
    with pytest.raises(ConfigError, match=r"\[compressors\.c\]: include 'multi\.toml': .* has no \[compressors\.c\] "
                                          r"table and not exactly one compressor \(it has: a, b\)"):
        load_config(main)
    with pytest.raises(ConfigError, match=r"\[compressors\.c\]: include 'gone\.toml': no such file"):
        load_config(write(tmp_path, "main.toml", '[compressors.c]\ninclude = "gone.toml"\n'))
    write(tmp_path, "loop.toml", '[compressors.c]\ninclude = "main.toml"\n')
    with pytest.raises(ConfigError, match="makes a cycle"):
        load_config(write(tmp_path, "main.toml", '[compressors.c]\ninclude = "loop.toml"\n'))


def test_a_compressor_include_can_name_another_label_of_the_file(tmp_path):
    write(tmp_path, "multi.toml", '[compressors.a]\nname = "random"\n[compressors.b]\nname = "bm25"\n'
                                  '[compressors.b.selector]\nname = "top-k"\nk = 4\n')
    main = write(tmp_path, "main.toml", '''
[compressors.b]
include = "multi.toml"

[compressors.b-per-document]
include = "multi.toml#b"
selector = { k = 1, per_document = true }
''')
    specs = load_config(main).compressor_specs()
    assert specs["b"] == {"name": "bm25", "selector": {"name": "top-k", "k": 4}}
    assert specs["b-per-document"] == {"name": "bm25", "selector": {"name": "top-k", "k": 1, "per_document": True}}
    with pytest.raises(ConfigError, match=r"\[compressors\.c\]: include 'multi\.toml#z': .* has no \[compressors\.z\] "
                                          r"table \(it has: a, b\)"):
        load_config(write(tmp_path, "main.toml", '[compressors.c]\ninclude = "multi.toml#z"\n'))
    with pytest.raises(ConfigError, match=r"name the compressor after '#'"):
        load_config(write(tmp_path, "main.toml", '[compressors.c]\ninclude = "multi.toml#"\n'))
