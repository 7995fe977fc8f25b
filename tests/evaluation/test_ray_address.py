"""Issue 53 row 17: a config's ``[evaluation.ray] address`` alone must not pick the Ray cluster a
run joins (Ray has no authentication and runs the driver's pickled code): the user's environment
(``RAGSIFT_RAY_ADDRESS``) must name it, and it is refused before a run folder is made."""

from __future__ import annotations

import pytest

from ragsift.errors import ConfigError
from ragsift.evaluation.run.engines.ray import ADDRESS_ENV, check_ray, cluster_address
from ragsift.evaluation.run.settings import EvaluationSettings

pytest.importorskip("ray.data")


def _settings(address: str | None) -> EvaluationSettings:
    return EvaluationSettings.from_table({"ray": {} if address is None else {"address": address}}, "run.toml")


def test_a_cluster_named_by_the_config_alone_is_refused(monkeypatch):
    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    with pytest.raises(ConfigError, match=rf"address = 'ray://10.0.0.9:10001'.*Set {ADDRESS_ENV}="):
        check_ray(_settings("ray://10.0.0.9:10001"))


def test_the_environment_must_name_the_same_cluster(monkeypatch):
    monkeypatch.setenv(ADDRESS_ENV, "auto")
    with pytest.raises(ConfigError, match="a config alone may not choose one"):
        cluster_address(_settings("ray://10.0.0.9:10001"))
    assert cluster_address(_settings("auto")) == "auto"


def test_the_users_environment_alone_picks_a_cluster_and_nothing_a_local_ray(monkeypatch):
    monkeypatch.setenv(ADDRESS_ENV, "auto")
    assert cluster_address(_settings(None)) == "auto"
    monkeypatch.delenv(ADDRESS_ENV)
    assert cluster_address(_settings(None)) is None
    check_ray(_settings(None))
