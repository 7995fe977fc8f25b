"""ragsift's built-in datasets, registered through the same hook as third-party plugins."""

from __future__ import annotations

from ragsift.datasets.catalogue import NamedDataset, dataset_names, named_dataset
from ragsift.datasets.loading import (
    DataSource,
    bundled_sample_path,
    detect_format,
    load_examples,
    named_source,
    resolve_data,
)
from ragsift.hookspecs import Register, hookimpl

__all__ = ["DataSource", "NamedDataset", "bundled_sample_path", "dataset_names", "detect_format", "load_examples",
           "named_dataset", "named_source", "register_datasets", "resolve_data"]


@hookimpl
def register_datasets(register: Register) -> None:
    from ragsift.datasets.dpr import DPRLoader
    from ragsift.datasets.flashrag import FlashRAGLoader
    from ragsift.datasets.hotpotqa import HotpotQALoader
    from ragsift.datasets.ircot import IRCoTLoader
    from ragsift.datasets.musique import MuSiQueLoader
    from ragsift.datasets.retrieval import RetrievalLoader
    from ragsift.datasets.squad2 import SQuAD2Loader
    from ragsift.datasets.twowiki import TwoWikiLoader

    register("hotpotqa", HotpotQALoader)
    register("ircot", IRCoTLoader)
    register("squad2", SQuAD2Loader)
    register("dpr", DPRLoader)
    register("retrieval", RetrievalLoader)
    register("flashrag", FlashRAGLoader)
    register("2wiki", TwoWikiLoader)
    register("musique", MuSiQueLoader)
