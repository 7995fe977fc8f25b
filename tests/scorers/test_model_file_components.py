"""Issue 53 row 1: a model file of ragsift's own (``fusion.json``, ``bridge-documents.json``) names
its component features from a closed vocabulary; it never names plugin specs. A file naming a
remote scorer (which would post an environment variable as a Bearer token to a server of its
choosing) or itself is refused, naming the file, before anything is built or sent; the shipped
models give exactly the scores they gave before their files were migrated."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsift.cli import main
from ragsift.datasets import load_examples
from ragsift.errors import ConfigError
from ragsift.registry import build_plugin
from ragsift.scorers.bridge_documents import BridgeDocumentModel
from ragsift.scorers.learned_fusion import FusionModel
from ragsift.splitters.presplit import PresplitSplitter

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).with_name("shipped_model_scores.json")
SHIPPED = {  # scorer name -> (shipped folder, model file)
    "learned-fusion": ("fusion-trained", "fusion.json"),
    "bridge-documents": ("bridge-documents", "bridge-documents.json"),
}


class CountingServer:
    """A loopback HTTP server that records every request it gets (and answers none usefully)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _record(self) -> None:
                seen.append((self.command, self.path, dict(self.headers)))
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _record  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[CountingServer]:
    fake = CountingServer()
    thread = threading.Thread(target=fake.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.httpd.shutdown()
        fake.httpd.server_close()


def _examples(data_dir: Path, n: int = 3) -> list[Any]:
    return list(load_examples(data_dir / "hotpotqa-dev-ircot52-sf.json", limit=n))


def _tampered(tmp_path: Path, scorer: str, **changes: Any) -> Path:
    """A copy of the shipped model folder's file with ``changes`` to its top-level keys."""
    folder_name, file = SHIPPED[scorer]
    folder = tmp_path / folder_name
    folder.mkdir()
    data = json.loads((ROOT / "models" / folder_name / file).read_text())
    (folder / file).write_text(json.dumps({**data, **changes}))
    return folder


def _remote_spec(url: str) -> dict[str, Any]:
    return {"name": "remote-yes-no", "base_url": url, "api_key_env": "RAGSIFT_TEST_SECRET", "max_retries": 0}


@pytest.mark.parametrize("scorer", list(SHIPPED))
def test_the_shipped_models_give_the_scores_recorded_before_their_files_were_migrated(scorer, data_dir):
    """The recorded scores were computed by the version-1 files (plugin specs) before the
    migration; the version-2 files (feature names) must give them bit for bit."""
    recorded = json.loads(RECORDED.read_text())[scorer]
    built = build_plugin("scorer", {"name": scorer, "model": f"models/{SHIPPED[scorer][0]}"})
    splitter = PresplitSplitter(fallback="sentencizer")
    examples = _examples(data_dir)
    assert [e.id for e in examples] == list(recorded)
    for example in examples:
        got = built.score(example, splitter.split_all(example.documents))
        assert np.array_equal(got, np.asarray(recorded[example.id], dtype=np.float64)), example.id


@pytest.mark.parametrize("scorer", list(SHIPPED))
def test_the_shipped_model_files_name_features_not_plugin_specs(scorer):
    folder, file = SHIPPED[scorer]
    data = json.loads((ROOT / "models" / folder / file).read_text())
    assert data["version"] == 2 and data["scorers"] == ["bm25"]


@pytest.mark.parametrize("scorer", list(SHIPPED))
@pytest.mark.parametrize("form", ["table", "list-of-specs"])
def test_a_model_file_naming_a_remote_scorer_is_refused_and_nothing_is_sent(scorer, form, tmp_path, data_dir, server,
                                                                             monkeypatch):
    monkeypatch.setenv("RAGSIFT_TEST_SECRET", "s3cret-token")
    spec = _remote_spec(server.url)
    # "table": the shipped file with its one component swapped for the remote scorer under the same
    # label, so the feature names and the trees still match (what a version-1 file could do)
    scorers: Any = {"bm25": spec} if form == "table" else [spec]
    folder = _tampered(tmp_path, scorer, scorers=scorers)
    built = build_plugin("scorer", {"name": scorer, "model": str(folder)})
    example = _examples(data_dir, 1)[0]
    with pytest.raises(ConfigError, match=rf"{SHIPPED[scorer][1]}: 'scorers' must be a list of feature names"):
        built.score(example, PresplitSplitter(fallback="sentencizer").split_all(example.documents))
    assert server.requests == []


@pytest.mark.parametrize("scorer", list(SHIPPED))
def test_a_model_file_naming_an_unknown_feature_is_refused_naming_it(scorer, tmp_path):
    folder = _tampered(tmp_path, scorer, scorers=["remote-yes-no"])
    model_class = FusionModel if scorer == "learned-fusion" else BridgeDocumentModel
    with pytest.raises(ConfigError, match=r"names feature 'remote-yes-no', which is neither ragsift's"):
        model_class.load(folder)


@pytest.mark.parametrize("scorer", list(SHIPPED))
def test_a_model_file_naming_itself_is_refused_with_a_clear_error(scorer, tmp_path):
    folder_name, file = SHIPPED[scorer]
    own = str(tmp_path / folder_name)
    folder = _tampered(tmp_path, scorer, scorers={"bm25": {"name": scorer, "model": own}})
    built = build_plugin("scorer", {"name": scorer, "model": str(folder)})
    with pytest.raises(ConfigError, match=rf"{file}: 'scorers' must be a list of feature names"):
        built.warm_up()


def test_a_model_file_with_keys_its_format_lacks_is_refused(tmp_path):
    folder = _tampered(tmp_path, "learned-fusion", plugins={"x": {"name": "bm25"}})
    with pytest.raises(ConfigError, match=r"fusion.json: unexpected key\(s\) \['plugins'\]"):
        FusionModel.load(folder)


def test_a_version_1_file_is_refused_saying_how_to_migrate(tmp_path):
    folder = _tampered(tmp_path, "bridge-documents", version=1, scorers={"bm25": {"name": "bm25"}})
    with pytest.raises(ConfigError, match=r"version 1.*replace each spec by its feature name"):
        BridgeDocumentModel.load(folder)


def test_a_feature_of_the_users_own_comes_from_the_scorers_config_only(tmp_path, data_dir):
    """A model trained on a component of the user's own config names it; the scorer's config
    (``components``) says what it is. The file alone cannot."""
    data = json.loads((ROOT / "models/fusion-trained/fusion.json").read_text())
    data["feature_names"] = [n.replace("bm25", "mine", 1) if n.startswith("bm25") else n for n in data["feature_names"]]
    folder = _tampered(tmp_path, "learned-fusion", scorers=["mine"], document_scorers=["mine"],
                       feature_names=data["feature_names"])
    with pytest.raises(ConfigError, match="names feature 'mine'"):
        FusionModel.load(folder)
    mine = build_plugin("scorer", {"name": "learned-fusion", "model": str(folder), "components": {"mine": {"name": "bm25"}}})
    shipped = build_plugin("scorer", {"name": "learned-fusion", "model": "models/fusion-trained"})
    example = _examples(data_dir, 1)[0]
    sentences = PresplitSplitter(fallback="sentencizer").split_all(example.documents)
    assert np.array_equal(mine.score(example, sentences), shipped.score(example, sentences))


def test_a_users_components_may_not_redefine_a_builtin_name_or_read_a_model_file(tmp_path):
    with pytest.raises(ConfigError, match="'bm25' is ragsift's built-in feature"):
        FusionModel.load(ROOT / "models/fusion-trained", components={"bm25": {"name": "bm25", "k1": 2.0}})
    with pytest.raises(ConfigError, match="could read itself"):
        FusionModel.load(ROOT / "models/fusion-trained",
                         components={"me": {"name": "learned-fusion", "model": "models/fusion-trained"}})


def test_config_validate_reports_the_bad_model_file(tmp_path, capsys, server):
    folder = _tampered(tmp_path, "learned-fusion", scorers={"bm25": _remote_spec(server.url)})
    config = tmp_path / "shared.toml"
    config.write_text(f'[compressor]\nname = "bm25"\n[compressor.scorer]\nname = "learned-fusion"\nmodel = "{folder}"\n')
    code = main(["config", "validate", str(config)])
    err = capsys.readouterr().err
    assert code != 0
    assert "ragsift: error:" in err and str(folder / "fusion.json") in err and "feature names" in err
    assert server.requests == []


def test_the_trainers_save_feature_names_and_give_a_components_entry_for_their_own(tmp_path, data_dir):
    from ragsift.registry import get_registry
    from ragsift.trainers.base import TrainingJob

    trainer = get_registry().create("trainer", "bridge-documents", {"steps": 3, "min_samples_leaf": 5,
                                                                   "scorers": {"mine": {"name": "bm25", "k1": 1.2}}})
    train = list(load_examples(data_dir / "hotpotqa-train-sf100.json", limit=8))
    result = trainer.train(TrainingJob(train=train, dev=[], output=tmp_path / "m", progress=False))
    saved = json.loads((tmp_path / "m" / "bridge-documents.json").read_text())
    assert saved["scorers"] == ["mine"]
    assert result.scorer["components"] == {"mine": {"name": "bm25", "k1": 1.2}}
    BridgeDocumentModel.load(tmp_path / "m", components=result.scorer["components"])  # the card's scorer entry loads it
    with pytest.raises(ConfigError, match="'bm25' is ragsift's built-in feature"):
        get_registry().create("trainer", "fusion", {"scorers": {"bm25": {"name": "bm25", "k1": 2.0}}})


def test_the_recorded_scores_file_is_there():
    # the fixture was written from the version-1 files (see the first test); a missing file would
    # make the comparison vacuous
    assert set(json.loads(RECORDED.read_text())) == set(SHIPPED)
