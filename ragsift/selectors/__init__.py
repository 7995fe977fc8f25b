"""ragsift's built-in selectors, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.hookspecs import Register, hookimpl


@hookimpl
def register_selectors(register: Register) -> None:
    from ragsift.selectors.all import AllSelector
    from ragsift.selectors.conformal import ConformalSelector
    from ragsift.selectors.documents import TopDocumentsSelector
    from ragsift.selectors.percentile import PercentileSelector
    from ragsift.selectors.rate import RateSelector
    from ragsift.selectors.reflection import ReflectionSelector
    from ragsift.selectors.threshold import ThresholdSelector
    from ragsift.selectors.token_budget import TokenBudgetSelector
    from ragsift.selectors.top_k import TopKSelector

    register("threshold", ThresholdSelector)
    register("top-k", TopKSelector)
    register("token-budget", TokenBudgetSelector)
    register("all", AllSelector)
    register("reflection", ReflectionSelector)
    register("percentile", PercentileSelector)
    register("rate", RateSelector)
    register("top-documents", TopDocumentsSelector)
    register("conformal", ConformalSelector)
