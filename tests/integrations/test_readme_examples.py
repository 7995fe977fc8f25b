"""The README's framework examples (section "In RAG frameworks") run as written and print what
their ``# -> `` lines say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def framework_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## In RAG frameworks\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_section_has_one_example_per_framework():
    imports = [re.search(r"from ragsift\.integrations\.(\w+) import", code).group(1) for code in framework_examples()]
    assert imports == ["langchain", "llamaindex", "haystack"]


@pytest.mark.parametrize("index", range(3), ids=["langchain", "llamaindex", "haystack"])
def test_readme_example_runs_and_prints_what_it_says(index, capsys):
    code = framework_examples()[index]
    expected = [line.removeprefix("# -> ") for line in code.splitlines() if line.startswith("# -> ")]
    assert expected
    exec(compile(code, f"README.md example {index}", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.splitlines() == expected
