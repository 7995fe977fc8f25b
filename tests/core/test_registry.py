from __future__ import annotations

import sys
import textwrap
import types

import pytest

from ragsift.errors import ConfigError, DuplicatePluginError, UnknownPluginError
from ragsift.hookspecs import hookimpl
from ragsift.registry import STAGES, Registry, get_registry
from ragsift.scorers.base import Scorer


def _third_party_module(name: str, scorer_name: str) -> types.ModuleType:
    """A module that registers a scorer exactly as a third-party package would."""
    module = types.ModuleType(name)

    class ConstantScorer(Scorer):
        def score(self, example, sentences):  # type: ignore[no-untyped-def]
            import numpy as np

            return np.full(len(sentences), 0.25)

    @hookimpl
    def register_scorers(register):  # type: ignore[no-untyped-def]
        register(scorer_name, ConstantScorer)

    module.register_scorers = register_scorers  # type: ignore[attr-defined]
    module.ConstantScorer = ConstantScorer  # type: ignore[attr-defined]
    return module


def test_builtins_are_registered_for_every_core_stage():
    reg = Registry(entry_points=False)
    assert {"sentencizer", "spacy", "nltk-punkt", "regex", "presplit"} <= set(reg.names("splitter"))
    assert {"threshold", "top-k", "token-budget", "all"} <= set(reg.names("selector"))
    assert {"original-order", "rank-order"} <= set(reg.names("assembler"))
    assert {"none", "oracle", "random", "bm25", "embedding", "pipeline"} <= set(reg.names("compressor"))
    assert set(reg.all()) == set(STAGES)


def test_unknown_name_lists_available_names():
    with pytest.raises(UnknownPluginError) as info:
        get_registry().get("selector", "topk")
    message = str(info.value)
    assert "Unknown selector 'topk'" in message
    assert "top-k" in message and "threshold" in message
    assert message.endswith("Did you mean 'top-k'?") and "\n" not in message


def test_an_unknown_name_far_from_every_plugin_gets_no_suggestion():
    with pytest.raises(UnknownPluginError) as info:
        get_registry().get("selector", "zzzzzz")
    assert "Did you mean" not in str(info.value) and "top-k" in str(info.value)


def test_unknown_stage_is_an_error():
    with pytest.raises(UnknownPluginError, match=r"Unknown stage 'scorers'\..*Did you mean 'scorer'\?$"):
        get_registry().names("scorers")


def test_plugin_from_outside_module_is_found_by_name():
    reg = Registry(entry_points=False)
    reg.add_plugin(_third_party_module("acme_ragsift", "acme-constant"), source="acme_ragsift")
    info = reg.info("scorer", "acme-constant")
    assert info.source == "acme_ragsift"
    scorer = reg.create("scorer", "acme-constant")
    assert scorer.registered_name == "acme-constant"
    assert list(scorer.score(None, [1, 2])) == [0.25, 0.25]


def test_same_name_twice_names_both_sources():
    reg = Registry(entry_points=False)
    reg.add_plugin(_third_party_module("acme_ragsift", "bm25"), source="acme_ragsift")
    with pytest.raises(DuplicatePluginError) as info:
        reg.names("scorer")
    message = str(info.value)
    assert "scorer 'bm25' is registered twice" in message
    assert "ragsift.scorers" in message and "acme_ragsift" in message


def test_register_requires_a_class():
    module = types.ModuleType("bad_plugin")

    @hookimpl
    def register_scorers(register):  # type: ignore[no-untyped-def]
        register("instance", object())

    module.register_scorers = register_scorers  # type: ignore[attr-defined]
    reg = Registry(entry_points=False)
    reg.add_plugin(module)
    with pytest.raises(ConfigError, match="expects a class"):
        reg.names("scorer")


def test_a_hook_ragsift_does_not_have_is_refused_naming_the_hooks():
    module = types.ModuleType("old_judges")

    @hookimpl
    def register_evaluators(register):  # type: ignore[no-untyped-def]  # the judge hook's name before 0.1.0
        pass

    module.register_evaluators = register_evaluators  # type: ignore[attr-defined]
    reg = Registry(entry_points=False)
    reg.add_plugin(module)
    with pytest.raises(ConfigError, match=r"unknown hook 'register_evaluators' .*hooks are .*register_judges"):
        reg.names("judge")


@pytest.fixture
def installed_entry_point(tmp_path, monkeypatch):
    """A real installed distribution (dist-info on sys.path) announcing a ragsift entry point."""
    pkg = tmp_path / "acme_sift"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            from ragsift.hookspecs import hookimpl
            from ragsift.scorers.base import Scorer

            class LengthScorer(Scorer):
                def score(self, example, sentences):
                    return np.array([float(len(s.text)) for s in sentences])

            @hookimpl
            def register_scorers(register):
                register("acme-length", LengthScorer)
            """
        )
    )
    dist = tmp_path / "acme_sift-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-sift\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ragsift]\nacme = acme_sift\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("acme_sift", None)


def test_entry_point_plugins_load(installed_entry_point, monkeypatch):
    monkeypatch.delenv("RAGSIFT_PLUGINS", raising=False)
    reg = Registry()
    info = reg.info("scorer", "acme-length")
    assert "acme-sift" in info.source


def test_environment_variable_restricts_entry_points(installed_entry_point, monkeypatch):
    monkeypatch.setenv("RAGSIFT_PLUGINS", "")
    assert "acme-length" not in Registry().names("scorer")
    monkeypatch.setenv("RAGSIFT_PLUGINS", "other")
    assert "acme-length" not in Registry().names("scorer")
    monkeypatch.setenv("RAGSIFT_PLUGINS", "acme")
    assert "acme-length" in Registry().names("scorer")


def test_plugin_fields_are_reported():
    fields = get_registry().info("selector", "top-k").fields()
    assert fields["k"]["default"] == 5 and fields["per_document"]["default"] is False


def test_a_class_registered_under_the_wrong_stage_is_refused_at_registration():
    from ragsift.selectors.top_k import TopKSelector

    module = types.ModuleType("wrong_stage")

    @hookimpl
    def register_scorers(register):  # type: ignore[no-untyped-def]
        register("not-a-scorer", TopKSelector)

    module.register_scorers = register_scorers  # type: ignore[attr-defined]
    registry = Registry(("ragsift.scorers",), entry_points=False)
    registry.add_plugin(module, "wrong_stage")
    with pytest.raises(ConfigError, match=r"wrong_stage: TopKSelector was registered as scorer 'not-a-scorer' but is a "
                       r"selector; register it through register_selectors"):
        registry.names("scorer")


def test_in_process_registration_uses_the_declared_stage(monkeypatch):
    import ragsift

    class Plain(ragsift.Assembler):
        def assemble(self, documents, sentences, kept):  # type: ignore[no-untyped-def]
            return " ".join(sentences[i].text for i in kept)

    monkeypatch.setattr("ragsift.registry._default", Registry(entry_points=False))
    ragsift.register("plain", Plain)
    assert get_registry().info("assembler", "plain").source == "in-process (plain)"
    ragsift.check_plugin("plain")  # the stage comes from the class
    with pytest.raises(ConfigError, match="register\\('loud'.*not a subclass of a ragsift stage base class"):
        ragsift.register("loud", object)


def test_every_builtin_plugin_has_a_one_line_description():
    reg = Registry(entry_points=False)
    for stage, infos in reg.all().items():
        for info in infos:
            text = info.description()
            assert text.strip() and "\n" not in text and len(text) <= 160, (stage, info.name, text)
    assert reg.info("selector", "top-k").description() == "The k highest scores (ties broken by original order)."
    assert reg.describe(["selector"])["selector"][0]["description"]


def test_a_declared_description_wins_and_a_base_class_docstring_is_not_borrowed():
    class Documented(Scorer):
        """Scores by length. More prose.

        Details the listing leaves out."""

        def score(self, example, sentences):  # type: ignore[no-untyped-def]
            return [0.0] * len(sentences)

    class Declared(Documented):
        """A long docstring that the declared line replaces."""

        description = "One line, declared."

    class Bare(Documented):
        def score(self, example, sentences):  # type: ignore[no-untyped-def]
            return [1.0] * len(sentences)

    reg = Registry(modules=(), entry_points=False)
    for name, cls in (("documented", Documented), ("declared", Declared), ("bare", Bare)):
        reg.register(name, cls)
    assert reg.info("scorer", "documented").description() == "Scores by length."
    assert reg.info("scorer", "declared").description() == "One line, declared."
    assert reg.info("scorer", "bare").description() == ""
