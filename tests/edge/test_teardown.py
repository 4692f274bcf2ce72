"""Deleting a cluster prunes what Flux applied on the edge before its accounts are revoked.

The Cluster Manager commits the teardown (everything but the self-link and Edge Sync, which
must report it), waits until the edge reports that commit applied (the real
kustomize-controller prunes, Edge Sync reports with its still-valid account), then revokes
the accounts and removes the repo. It would wait 600 s (``--teardown-timeout``) for an edge
that does not report; the teardown ending within 300 s shows the edge reported.
"""

from __future__ import annotations

from pathlib import Path

from fplus.config_store import uuids
from harness.realedge import Edge
from harness.stack import Stack, wait_for
from tests.edge.conftest import Fplus, bootstrap, reconcile_now


def test_deleting_a_cluster_prunes_the_edge_first(edge: Edge, edge_stack: Stack, fplus: Fplus,
                                                  tmp_path: Path) -> None:
    cluster = bootstrap(edge, fplus, "doomed", tmp_path)
    namespace = cluster["spec"]["namespace"]
    pruned = ("gitrepository/helm-charts", "helmrelease/sealed-secrets")
    kept = ("deployment/edge-sync", "gitrepository/self-link", "kustomization/self-link")
    assert all(edge.plane.get("-n", namespace, what) for what in pruned + kept)

    # the edge has reported (an edge that never reported has nothing to wait for)
    wait_for(lambda: (fplus.json("cluster", "get", "doomed").get("edge") or {})
             .get("appliedCommit") == cluster["repoCommit"], timeout=120,
             what="Edge Sync to report the applied commit")
    setup = edge_stack.admin.get(
        f"/v2/app/{uuids.App.EdgeClusterSetupStatus}/object/{cluster['uuid']}").json()
    accounts = [setup[role]["uuid"] for role in ("flux", "sync")]
    fplus("cluster", "delete", "doomed")
    wait_for(lambda: (fplus.json("cluster", "get", "doomed").get("teardown") or {})
             .get("commit"), timeout=60, what="the teardown commit")
    # the edge has not fetched it yet: its accounts are still there
    assert all(edge_stack.admin.get(f"/v2/object/{a}").status_code == 200 for a in accounts)
    reconcile_now(edge, namespace, "gitrepository/self-link")  # not its 3-minute interval
    wait_for(lambda: "doomed" not in [c["name"] for c in fplus.json("cluster", "list")],
             timeout=300, what="the teardown to finish")
    assert all(edge_stack.admin.get(f"/v2/object/{a}").status_code == 404 for a in accounts)

    assert [what for what in pruned if edge.plane.get("-n", namespace, what)] == []
    assert all(edge.plane.get("-n", namespace, what) for what in kept)
