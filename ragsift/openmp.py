"""OpenMP's wait policy for the native libraries ragsift runs on the CPU (torch, llama.cpp).

Both libraries run each operator on a team of OpenMP threads (GNU libgomp here). By default a
thread that finishes its share of an operator spins for ``GOMP_SPINCOUNT`` = 300,000 iterations
before it sleeps. On a CPU shared with other processes, the sibling it waits for is often not
running, so the spin burns a core's time slice for nothing, once per operator. A forward pass
over few tokens (EXIT's prefix-shared packed passes, llama.cpp's token-by-token decoding) runs
many short operators per token, so it pays that cost many times per token: on the project's
2-core machine beside one busy process, prefix-shared EXIT scoring cost about 3x the CPU per
token of the authors' large padded batches, and about the same with the policy below
(docs/exit.md, "What made prefix-shared slow").

``OMP_WAIT_POLICY=PASSIVE`` (threads sleep at once) is read once, when a library loads its
OpenMP runtime, so :func:`prefer_passive_wait` runs before either library is, where ragsift owns
the process: the ``ragsift`` command (:func:`ragsift.cli.main`) and the benchmarks. Importing
ragsift changes no environment variable (a library does not change its host process); a program
that uses ragsift as a library sets the policy itself (``OMP_WAIT_POLICY=PASSIVE`` in its
environment, or this function before torch loads). A policy the environment already sets is kept: an empty ``OMP_WAIT_POLICY=`` keeps
libgomp's default spinning, faster on idle dedicated cores (docs/exit.md gives both figures).
"""

from __future__ import annotations

import os
import sys

__all__ = ["prefer_passive_wait", "RUNTIMES", "LOADED_BEFORE"]

#: the modules whose import starts an OpenMP runtime that reads the policy
RUNTIMES = ("torch", "llama_cpp")
#: the runtimes that were loaded before ragsift could set the policy (it came too late for them)
LOADED_BEFORE: list[str] = []


def prefer_passive_wait() -> list[str]:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets a policy; returns the
    runtimes already loaded without one (the setting comes too late for them)."""
    if "OMP_WAIT_POLICY" in os.environ:
        return []
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    late = [name for name in RUNTIMES if name in sys.modules]
    LOADED_BEFORE.extend(name for name in late if name not in LOADED_BEFORE)
    return late
