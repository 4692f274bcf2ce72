"""The agent reports the readiness of what Flux applied (``flux``), against the emulator.

Nothing runs Flux's controllers in the emulator: the test writes the objects' ``status`` as
they would (conditions, applied revisions), and checks what reaches the Config Store.
"""

from __future__ import annotations

from typing import Any

import pytest

from fplus.config_store.client import ConfigStoreClient, Unprocessable
from tests.edge_sync.conftest import StartAgent
from tests.edge_sync.emulator import (
    GIT_REPOSITORIES,
    HELM_RELEASES,
    KUSTOMIZATIONS,
    SEALED_SECRETS,
    KubeHarness,
)
from tests.edge_sync.helpers import NAMESPACE, STATUS, Edge, status, wait_for

SHA = "89abcdef0123456789abcdef0123456789abcdef"
API = {KUSTOMIZATIONS: ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
       HELM_RELEASES: ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
       GIT_REPOSITORIES: ("source.toolkit.fluxcd.io/v1", "GitRepository"),
       SEALED_SECRETS: ("bitnami.com/v1alpha1", "SealedSecret")}


def put(kube: KubeHarness, resource: str, namespace: str, name: str, ready: str | None,
        reason: str = "", message: str = "", since: str = "2026-11-25T10:00:00Z",
        **status_fields: Any) -> None:
    """Store an object with the status Flux (or the Sealed Secrets controller) would write."""
    api_version, kind = API[resource]
    conditions = [] if ready is None else [{
        "type": "Synced" if kind == "SealedSecret" else "Ready", "status": ready,
        "reason": reason, "message": message, "lastTransitionTime": since}]
    kube.put(resource, namespace, name, {
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "status": {"conditions": conditions, **status_fields}})


def flux(cs: ConfigStoreClient, edge: Edge) -> dict[str, Any]:
    return status(cs, edge).get("flux") or {}


def names(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(o["kind"], o["name"], o["ready"]) for o in report.get("objects", [])]


def test_readiness_changes_reach_the_status_entry(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    start_agent(edge, FLUX_INTERVAL="0.2")
    empty = wait_for(lambda: flux(cs_admin, edge) or None, what="a first report")
    assert empty == {"objects": [], "total": 0, "ready": 0, "failed": 0, "progressing": 0}
    # (no "error": the report sends it as null, which the merge patch leaves out)

    # Flux fetched and applied the repo; Sealed Secrets is still installing
    put(kube, GIT_REPOSITORIES, NAMESPACE, "self-link", "True", "Succeeded",
        artifact={"revision": f"main@sha1:{SHA}"})
    put(kube, KUSTOMIZATIONS, NAMESPACE, "self-link", "True", "ReconciliationSucceeded",
        lastAppliedRevision=f"main@sha1:{SHA}")
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "Unknown", "Progressing",
        "Running 'install' action")
    report = wait_for(lambda: flux(cs_admin, edge) if flux(cs_admin, edge).get("total") == 3
                      else None, what="three objects")
    assert names(report) == [("HelmRelease", "sealed-secrets", "Unknown"),
                             ("GitRepository", "self-link", "True"),
                             ("Kustomization", "self-link", "True")]
    assert report["objects"][0]["message"] == "Running 'install' action"
    assert report["objects"][2]["revision"] == f"main@sha1:{SHA}"
    assert (report["ready"], report["failed"], report["progressing"]) == (2, 0, 1)

    # the install fails; a sealed secret elsewhere unseals
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "False", "InstallFailed",
        "install retries exhausted", since="2026-11-25T10:05:00Z")
    put(kube, SEALED_SECRETS, "factory", "db", "True", "", "")
    report = wait_for(lambda: flux(cs_admin, edge) if flux(cs_admin, edge).get("failed")
                      else None, what="the failure")
    wait_for(lambda: flux(cs_admin, edge).get("total") == 4, what="the sealed secret")
    report = flux(cs_admin, edge)
    first = report["objects"][0]
    assert (first["kind"], first["name"], first["ready"], first["reason"]) == (
        "HelmRelease", "sealed-secrets", "False", "InstallFailed")
    assert ("SealedSecret", "db", "True") in names(report)
    assert next(o for o in report["objects"] if o["name"] == "db")["namespace"] == "factory"

    # fixed again
    put(kube, HELM_RELEASES, NAMESPACE, "sealed-secrets", "True", "InstallSucceeded",
        history=[{"chartVersion": "2.17.1"}])
    wait_for(lambda: flux(cs_admin, edge).get("ready") == 4, what="all ready")
    assert flux(cs_admin, edge)["failed"] == 0

    # a Kustomization fails to build, and the secret can no longer be decrypted; then both mend
    put(kube, KUSTOMIZATIONS, "apps", "machines", "False", "BuildFailed",
        "kustomize build failed: missing resource", since="2026-11-25T10:09:00Z")
    put(kube, SEALED_SECRETS, "factory", "db", "False", "", "no key could decrypt secret",
        since="2026-11-25T10:10:00Z")
    report = wait_for(lambda: flux(cs_admin, edge) if flux(cs_admin, edge).get("failed") == 2
                      else None, what="two failures")
    assert names(report)[:2] == [("SealedSecret", "db", "False"),  # newest failure first
                                 ("Kustomization", "machines", "False")]
    assert report["objects"][1]["message"] == "kustomize build failed: missing resource"
    put(kube, KUSTOMIZATIONS, "apps", "machines", "True", "ReconciliationSucceeded")
    put(kube, SEALED_SECRETS, "factory", "db", "True", "", "")
    wait_for(lambda: flux(cs_admin, edge).get("ready") == 5, what="all five ready")
    assert flux(cs_admin, edge)["failed"] == 0


def test_a_kind_that_cannot_be_listed_is_named_and_the_rest_still_reported(
        cs_admin: ConfigStoreClient, edge: Edge, kube: KubeHarness,
        start_agent: StartAgent) -> None:
    kube.emulator.failing[("GET", HELM_RELEASES)] = 403
    put(kube, KUSTOMIZATIONS, NAMESPACE, "self-link", "True", "ReconciliationSucceeded")
    start_agent(edge, FLUX_INTERVAL="0.2")
    report = wait_for(lambda: flux(cs_admin, edge) or None, what="a report")
    assert report["error"] == "listing HelmReleases: Kubernetes API answered 403 Forbidden"
    assert names(report) == [("Kustomization", "self-link", "True")]

    del kube.emulator.failing[("GET", HELM_RELEASES)]
    wait_for(lambda: "error" not in flux(cs_admin, edge), what="the error cleared")


@pytest.mark.parametrize(("what", "report"), [
    ("more objects than allowed", {"objects": [
        {"kind": "Kustomization", "namespace": "ns", "name": f"k{i}", "ready": "True"}
        for i in range(101)], "total": 101, "ready": 101, "failed": 0, "progressing": 0}),
    ("a message longer than allowed", {"objects": [
        {"kind": "Kustomization", "namespace": "ns", "name": "k", "ready": "False",
         "message": "m" * 301}], "total": 1, "ready": 0, "failed": 1, "progressing": 0}),
    ("a kind that is not reported", {"objects": [
        {"kind": "Secret", "namespace": "ns", "name": "k", "ready": "True"}],
        "total": 1, "ready": 1, "failed": 0, "progressing": 0}),
])
def test_the_config_store_refuses_reports_beyond_the_schema(
        cs_admin: ConfigStoreClient, edge: Edge, what: str, report: dict[str, Any]) -> None:
    with pytest.raises(Unprocessable):
        cs_admin.patch_config(STATUS, edge.uuid, {"flux": report})
    assert "flux" not in status(cs_admin, edge), what
