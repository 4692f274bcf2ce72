"""The context the Cluster Manager renders the Flux template with (pure): every key the default
template consumes, and ``url.cluster_manager`` (where Edge Sync opens its tunnel) exactly when
the Cluster Manager knows its URL as edges reach it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fplus import manifests
from fplus.cluster_manager.changes.rendering import context
from fplus.cluster_manager.model.cluster_config import ClusterConfig
from fplus.cluster_manager.model.settings import Settings
from tests.manifests.samples import CONSUMED_KEYS, find, placeholders, render_flux

UUID = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f"
CONFIG: ClusterConfig = {"name": "shop-floor", "namespace": "fplus-edge"}


def _settings(**options: Any) -> Settings:
    return Settings(config_store_url="http://cs.example:8701", git_url="http://git.example:8702",
                    data_dir=Path("/nonexistent"), **options)


def _paths(node: Any, prefix: str = "") -> set[str]:
    """The dotted paths of ``node``'s members, at every depth."""
    if not isinstance(node, dict):
        return set()
    found = set()
    for key, value in node.items():
        found.add(prefix + key)
        found |= _paths(value, f"{prefix}{key}.")
    return found


def test_the_cluster_manager_url_is_its_external_url() -> None:
    ctx = context(_settings(external_url="https://cm.factory.example:8443/"), UUID, CONFIG)
    assert ctx["url"]["cluster_manager"] == "https://cm.factory.example:8443"  # type: ignore[index]
    config = find(render_flux(ctx), "ConfigMap", "cluster-config", "fplus-edge")
    assert config["data"]["CLUSTER_MANAGER_URL"] == "https://cm.factory.example:8443"


def test_the_edge_facing_url_wins_so_every_replica_renders_the_same() -> None:
    for own in ("http://10.0.0.1:8700", "http://10.0.0.2:8700"):
        ctx = context(_settings(external_url=own,
                                edge_cluster_manager_url="https://cm.factory.example/"),
                      UUID, CONFIG)
        assert ctx["url"]["cluster_manager"] == "https://cm.factory.example"  # type: ignore[index]


def test_without_an_external_url_there_is_no_key_and_no_tunnel() -> None:
    ctx = context(_settings(), UUID, CONFIG)
    assert "cluster_manager" not in ctx["url"]  # type: ignore[operator]
    config = find(render_flux(ctx), "ConfigMap", "cluster-config", "fplus-edge")
    assert "CLUSTER_MANAGER_URL" not in config["data"]


def test_the_context_holds_every_key_the_default_template_consumes() -> None:
    ctx = context(_settings(external_url="http://127.0.0.1:8700"), UUID, CONFIG, flux="v2.9.2")
    wanted = placeholders(manifests.load("flux-template"))
    optional = {"edge_sync.ca_env", "helm"}  # a private CA; a chart
    assert wanted - _paths(ctx) == optional
    assert CONSUMED_KEYS | {"url.cluster_manager"} <= _paths(ctx)
