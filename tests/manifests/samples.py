"""Sample render contexts for the Flux template, and helpers over rendered manifests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from fplus import manifests
from fplus.cluster_manager.changes.rendering import (
    FLUX_SYSTEM_REPO,
    HELM_CHARTS_REPO,
    UPSTREAM,
    bundle_files,
)
from fplus.cluster_manager.formats.manifest_yaml import render_documents
from fplus.templating import render

# The context keys the default Flux template consumes (dotted paths), exactly.
CONSUMED_KEYS = frozenset({
    "uuid", "name", "namespace", "url.self", "url.helm_charts", "url.flux_system",
    "url.config_store",
    "edge_sync.image", "edge_sync.credentials_secret", "flux.secret",
    "sealed_secrets.namespace", "sealed_secrets.controller",
    "sealed_secrets.chart_version", "sealed_secrets.repo_url", "sealed_secrets.source",
})
OPTIONAL_KEYS = frozenset({"edge_sync.ca_env", "helm", "flux_system.version",
                           "url.cluster_manager"})
"""Keys the Cluster Manager sets only sometimes (a private CA, a chart, a Flux version, its
own URL as edges reach it); absent, their item renders away or their file is not selected."""
CA_ENV = {"name": "FPLUS_CA_FILE", "value": "/etc/fplus/credentials/ca.crt"}

FLUX_GA = frozenset({"source.toolkit.fluxcd.io/v1", "kustomize.toolkit.fluxcd.io/v1",
                     "helm.toolkit.fluxcd.io/v2"})


def _context(uuid: str, name: str, namespace: str, git: str, config_store: str, image: str,
             credentials: str, flux_secret: str, ss_namespace: str, controller: str,
             chart_version: str, repo_url: str, values: dict[str, Any],
             ca_env: dict[str, str] | None = None,
             cluster_manager: str | None = None) -> dict[str, Any]:
    """A context of exactly the shape the Cluster Manager renders with."""
    edge_sync: dict[str, Any] = {"image": image, "credentials_secret": credentials}
    if ca_env is not None:
        edge_sync["ca_env"] = ca_env
    url = {"self": f"{git}/uuid/{uuid}", "config_store": config_store,
           "helm_charts": f"{git}/uuid/{HELM_CHARTS_REPO}",
           "flux_system": f"{git}/uuid/{FLUX_SYSTEM_REPO}"}
    if cluster_manager is not None:
        url["cluster_manager"] = cluster_manager
    return {
        "uuid": uuid, "name": name, "namespace": namespace,
        "url": url,
        "edge_sync": edge_sync,
        "flux": {"secret": flux_secret},
        "sealed_secrets": {"namespace": ss_namespace, "controller": controller,
                           "chart_version": chart_version, "repo_url": repo_url,
                           "source": UPSTREAM},
        "values": values,
    }


CONTEXTS = {
    # the defaults of `cluster-manager up`
    "defaults": _context(
        "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "shop-floor", "fplus-edge",
        "http://127.0.0.1:8702", "http://127.0.0.1:8701",
        "ghcr.io/example/fplus-edge-sync:0.1.0", "edge-sync-credentials", "flux-secrets",
        "sealed-secrets", "sealed-secrets-controller", "2.17.3",
        "https://bitnami-labs.github.io/sealed-secrets", {},
        cluster_manager="http://127.0.0.1:8700"),
    # everything different; Sealed Secrets shares our namespace (names must not collide)
    "shared-namespace": _context(
        "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b", "line-2", "edge-ops",
        "https://git.factory.example:8443/git", "https://configdb.factory.example/",
        "registry.local:5000/fplus/edge-sync@sha256:" + "ab" * 32, "sync-creds", "git-pull",
        "edge-ops", "sealer", "2.18.5", "https://charts.mirror.example/sealed-secrets",
        {"sealedSecrets": {"enabled": False}, "x": [1, 2]},
        cluster_manager="https://edge-manager.factory.example:8443/fplus"),
    # HTTPS from a private CA: Edge Sync is told where the bootstrap script put it
    "private-ca": _context(
        "22222222-3333-4444-8555-666666666666", "line-3", "fplus-edge",
        "https://192.168.1.20:8702", "https://192.168.1.20:8701",
        "ghcr.io/example/fplus-edge-sync:0.1.0", "edge-sync-credentials", "flux-secrets",
        "sealed-secrets", "sealed-secrets-controller", "2.17.3",
        "https://bitnami-labs.github.io/sealed-secrets", {}, ca_env=CA_ENV,
        cluster_manager="https://192.168.1.20:8700"),
    # longest legal name; controller where kubeseal looks by default; a Cluster Manager
    # that names no URL of its own (no tunnel)
    "kube-system": _context(
        "11111111-2222-4333-8444-555555555555", "a" * 62 + "z", "f" * 63,
        "http://git.svc.cluster.local", "http://config-store.fplus.svc.cluster.local:8080",
        "edge-sync:latest", "edge-sync-credentials", "flux-secrets",
        "kube-system", "sealed-secrets-controller", "2.17.3",
        "https://bitnami-labs.github.io/sealed-secrets", {}),
}


def render_flux(context: dict[str, Any], config: dict[str, Any] | None = None,
                air_gapped: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The default Flux template's files for a cluster ``config`` (default: a plain one),
    rendered for ``context``; files that render empty are left out."""
    template = manifests.load("flux-template")
    selected = bundle_files(template, config or {}, air_gapped)
    rendered = render({name: template[name] for name in selected}, context)
    return {name: docs for name, docs in rendered.items() if docs}  # as the repo writer does


def objects(rendered: dict[str, list[dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, manifest) for every manifest, in order."""
    for file, docs in rendered.items():
        for doc in docs:
            yield file, doc


def find(rendered: dict[str, list[dict[str, Any]]], kind: str, name: str,
         namespace: str | None = None) -> dict[str, Any]:
    """The one manifest of ``kind`` named ``name`` (in ``namespace`` if given)."""
    hits = [doc for _, doc in objects(rendered)
            if doc["kind"] == kind and doc["metadata"]["name"] == name
            and (namespace is None or doc["metadata"].get("namespace") == namespace)]
    assert len(hits) == 1, f"{kind}/{name} in {namespace}: {len(hits)} found"
    return hits[0]


def strings(node: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


_PLACEHOLDER = re.compile(r"{{([^{}]*)}}")


def placeholders(node: Any) -> set[str]:
    """The dotted context paths a template refers to (defaults stripped)."""
    return {m[1].partition(":")[0].strip() for s in strings(node) for m in _PLACEHOLDER.finditer(s)}


def write_repo(root: Path, rendered: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The rendered files laid out as in a cluster repo under ``root``, plus a
    ``kustomization.yaml`` listing them (the real repo has none: Flux generates one for
    ``path: ./``); returns the listed paths."""
    cluster = root / "edo" / "cluster"
    cluster.mkdir(parents=True)
    (root / "edo" / "secrets").mkdir()
    (root / "by-hand").mkdir()
    resources = []
    for file, docs in rendered.items():
        (cluster / file).write_text(render_documents(docs), encoding="utf-8")
        resources.append(f"edo/cluster/{file}")
    (root / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": sorted(resources)}), encoding="utf-8")
    return resources
