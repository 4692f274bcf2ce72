"""Fixtures for the reconcile wing's unit tests: in-memory Config Store and repos, no process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fplus import manifests
from fplus.cluster_manager.name_claims import NameClaims
from fplus.cluster_manager.reconcile.desired import TEMPLATE_APP, DesiredState
from fplus.cluster_manager.reconcile.job import Env, Groups
from fplus.cluster_manager.settings import Settings
from fplus.config_store import uuids
from fplus.config_store.client import SearchDelta
from tests.cluster_manager.reconcile.fakes import FakeConfigDB, FakeRepos

CONFIG = uuids.App.EdgeClusterConfiguration
GROUPS = Groups(flux="00000000-0000-4000-8000-00000000f100",
                sync="00000000-0000-4000-8000-00000000f200",
                cluster="00000000-0000-4000-8000-00000000f300")
CHART = "00000000-0000-4000-8000-0000000c4a27"


@pytest.fixture
def cs() -> FakeConfigDB:
    """A Config Store holding the default Flux template, HelmRelease template and one chart."""
    store = FakeConfigDB()
    store.entries[(TEMPLATE_APP, TEMPLATE_APP)] = manifests.load("flux-template")
    store.entries[(uuids.App.K8sResourceTemplate, uuids.K8sResource.HelmRelease)] = \
        manifests.load("k8s-resource-templates")["HelmRelease"]
    store.entries[(uuids.App.HelmChartTemplate, CHART)] = {
        "chart": "edge-cluster", "values": {"cluster": {"name": "{{name}}", "uuid": "{{uuid}}"}}}
    return store


@pytest.fixture
def repos() -> FakeRepos:
    return FakeRepos()


@pytest.fixture
def forgotten() -> list[str]:
    """Clusters whose bootstrap tokens the steps asked to forget."""
    return []


@pytest.fixture
def env(cs: FakeConfigDB, repos: FakeRepos, forgotten: list[str], tmp_path: Path) -> Env:
    settings = Settings(config_store_url="http://cs.test", git_url="http://git.test/",
                        data_dir=tmp_path, teardown_timeout=60)
    return Env(cs, settings, GROUPS, repos, DesiredState(cs), NameClaims(cs),
               forget_tokens=forgotten.append)


def configure(env: Env, configs: dict[str, Any | None]) -> set[str]:
    """Write (or, for None, delete) ``cluster → config`` entries, then deliver every entry as
    the notify SEARCH would; return the clusters the desired state saw change."""
    cs = env.cs
    for cluster, config in configs.items():
        if config is None:
            cs.delete_config(CONFIG, cluster)
        else:
            cs.put_config(CONFIG, cluster, config)
    present = {obj: value for (app, obj), value in cs.entries.items() if app == CONFIG}
    return env.desired.apply_configs(SearchDelta(
        True, present, {obj: cs.etags[(CONFIG, obj)] for obj in present}))
