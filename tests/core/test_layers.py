"""The package's own imports (read with ast, function-level imports included): no import circle,
and no module importing from a higher layer than its own."""

from __future__ import annotations

import ast
from pathlib import Path

import ragsift

ROOT = Path(ragsift.__file__).parent

#: lowest first; a module may import from its own layer and the layers below it. Within a layer,
#: modules must not form a circle (checked below).
LAYERS: list[set[str]] = [
    {"ragsift.errors", "ragsift.types", "ragsift.hookspecs", "ragsift.version", "ragsift.output_files",
     "ragsift.model_check", "ragsift.config_files", "ragsift.cli_types", "ragsift.suggestions", "ragsift.openmp",
     "ragsift.provenance", "ragsift.extras", "ragsift.tokenizer_file"},
    {"ragsift.plugin", "ragsift.model_plugins", "ragsift.models", "ragsift.split_models", "ragsift.disk_cache",
     "ragsift.evidence", "ragsift.lm", "ragsift.remote"},
    {"ragsift.registry"},
    # the stages, which talk to one another only through the registry
    {"ragsift.splitters", "ragsift.scorers", "ragsift.assemblers", "ragsift.judges", "ragsift.readers",
     "ragsift.metrics"},
    {"ragsift.selectors", "ragsift.labelers", "ragsift.datasets"},
    {"ragsift.compressors", "ragsift.trainers"},
    # the ``train`` command's parts (config, report, card) above the trainers it runs
    {"ragsift.training"},
    # what uses every stage: configs, the Python API, the conformance kit
    {"ragsift.config", "ragsift.api", "ragsift.testing"},
    {"ragsift.evaluation", "ragsift.service", "ragsift.calibration"},
    # the framework adapters (LangChain, LlamaIndex, Haystack), each an optional extra
    {"ragsift.integrations"},
    {"ragsift.cli", "ragsift.training.command", "ragsift.service.command", "ragsift"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ["ragsift", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str:
    while name not in modules:
        name = name.rpartition(".")[0]
    return name


def _targets(module: str, is_package: bool, source: str) -> set[str]:
    """The ragsift names ``source`` (the text of ``module``) imports, anywhere in it (function
    bodies and ``TYPE_CHECKING`` blocks included); relative imports are made absolute."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # ``from . import x`` in a package is relative to the package itself
                parts = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join([*parts, *([base] if base else [])])
            if base == "ragsift" or base.startswith("ragsift."):
                out |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name == "ragsift" or alias.name.startswith("ragsift.")}
    return out


def _imports() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        targets = _targets(module, path.name == "__init__.py", path.read_text(encoding="utf-8"))
        edges[module] |= {_resolve(t, modules) for t in targets} - {module}
    return edges


def _layer(module: str) -> int:
    parts = module.split(".")
    for name in (".".join(parts[:n]) for n in range(len(parts), 0, -1)):  # the most specific entry first
        for i, layer in enumerate(LAYERS):
            if name in layer:
                return i
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in {__file__}")


def test_every_module_belongs_to_a_layer_and_imports_only_downward():
    edges = _imports()
    assert len(edges) > 50  # the walk found the package
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in sorted(edges.items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_import_circle_between_modules():
    cycle = _find_cycle(_imports())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_checks_catch_a_circle_and_an_upward_import():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
    assert _layer("ragsift.scorers.bm25") < _layer("ragsift.config") < _layer("ragsift.cli")


def test_every_form_of_import_is_read():
    source = "from . import bm25\nfrom ..config import load_config\nimport ragsift.cli\n" \
             "def f():\n    from ragsift.registry import get_registry\n"
    assert _targets("ragsift.scorers.base", False, source) == {
        "ragsift.scorers.bm25", "ragsift.config.load_config", "ragsift.cli", "ragsift.registry.get_registry"}
    assert _targets("ragsift.scorers", True, "from .bm25 import BM25Scorer\n") == {"ragsift.scorers.bm25.BM25Scorer"}
    assert "os" not in _targets("ragsift.scorers.base", False, "import os\nfrom os import path\n")


#: the command line's ``evaluate``, ``ragsift tune`` (which runs a sweep as a run) and the package's
#: lazy front door run a run; nothing else imports the runner (the plan, engines, manifest and
#: summary are its parts)
RUNNER_USERS = {"ragsift.evaluation", "ragsift.evaluation.run.command", "ragsift.evaluation.run.tune"}
RUN, REPORT = "ragsift.evaluation.run", "ragsift.evaluation.report"


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_no_sibling_imports_the_runner():
    users = sorted(m for m, targets in _imports().items() if "ragsift.evaluation.run.runner" in targets)
    assert set(users) <= RUNNER_USERS, f"modules importing the runner: {users}"


def test_the_engines_are_reached_only_through_the_runner():
    """``--engine`` picks an engine behind one interface (``run.engines.Engine``): only the runner
    (and the engines' package, which names them) imports an engine."""
    engines = f"{RUN}.engines"
    users = sorted(m for m, targets in _imports().items() if not _in(m, engines)
                   for t in targets if _in(t, engines))
    assert set(users) <= {f"{RUN}.runner"}, f"modules importing an engine: {users}"


def test_the_report_wing_imports_nothing_of_the_run_wing():
    """The report reads a run directory's files (records, manifest.json, summary.json), never the
    runner, the engines or the plan; the record formats both wings share import neither wing."""
    edges = _imports()
    report = sorted(f"{m} imports {t}" for m, targets in edges.items() if _in(m, REPORT)
                    for t in targets if _in(t, RUN))
    assert not report, "the report importing the run:\n" + "\n".join(report)
    shared = [m for m in edges if _in(m, "ragsift.evaluation") and not (_in(m, RUN) or _in(m, REPORT))
              and m != "ragsift.evaluation"]
    assert set(shared) == {"ragsift.evaluation.predictions", "ragsift.evaluation.columnar"}
    crossing = sorted(f"{m} imports {t}" for m in shared for t in edges[m] if _in(t, RUN) or _in(t, REPORT))
    assert not crossing, crossing
    assert any(_in(m, REPORT) for m in edges) and any(_in(m, RUN) for m in edges)  # the wings were found


def test_the_three_recorders_use_the_provenance_module_and_training_imports_no_labeler():
    edges = _imports()
    for recorder in ("ragsift.evaluation.run.manifest", "ragsift.labelers.output", "ragsift.training.command"):
        assert "ragsift.provenance" in edges[recorder], recorder
    assert not [t for t in edges["ragsift.training.command"] if t.startswith("ragsift.labelers")]


def test_no_stage_imports_another_stage_family():
    """The stages talk to one another through the registry: a judge imports no scorer (the
    readout file format they share lives in ``ragsift.lm.readout``)."""
    stages = ("ragsift.splitters", "ragsift.scorers", "ragsift.assemblers", "ragsift.judges", "ragsift.readers")
    family = {m: next((s for s in stages if m == s or m.startswith(s + ".")), None) for m in _modules()}
    crossing = sorted(f"{m} imports {t}" for m, targets in _imports().items() if family[m]
                      for t in targets if family.get(t) not in (None, family[m]))
    assert not crossing, "stages importing another stage:\n" + "\n".join(crossing)


def test_the_plugin_contract_carries_no_model_mixins():
    import ragsift.model_plugins
    import ragsift.plugin

    mixins = {"ModelParams", "CausalLMParams", "ModelPlugin", "CausalLMPlugin"}
    assert mixins <= set(ragsift.model_plugins.__all__) and not mixins & set(dir(ragsift.plugin))


def test_the_composition_knows_no_cache():
    """The pipeline composes stages; the evaluation wraps its scorers with the score cache
    (``ragsift.evaluation.run.caches.cache_scores``)."""
    caches = {"ragsift.disk_cache", "ragsift.scorers.caching"}
    found = sorted(f"{m} imports {t}" for m, targets in _imports().items() if m.startswith("ragsift.compressors")
                   for t in targets & caches)
    assert not found, found
