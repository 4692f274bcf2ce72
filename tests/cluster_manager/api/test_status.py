"""``GET /v1/cluster/<c>/status``: the setup status plus the derived phase; 404 if unknown."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from fplus.cluster_manager.model.setup_status import SetupStatus
from fplus.cluster_manager.services.clusters.status_view import Liveness, derive_phase, edge_state
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.conftest import commission, report_edge

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(("setup", "edge", "phase"), [
    (None, None, "Pending"),
    ({"phase": "Failed", "ready": False}, None, "Failed"),
    ({"phase": "Provisioning", "ready": False}, None, "Provisioning"),
    ({"phase": "Ready", "ready": True}, None, "Ready"),
    ({"phase": "Ready", "ready": True}, {"lastSeen": ago(5)}, "Online"),
    ({"phase": "Ready", "ready": True}, {"lastSeen": ago(89)}, "Online"),
    ({"phase": "Ready", "ready": True}, {"lastSeen": ago(91)}, "Stale"),
    ({"phase": "Ready", "ready": True}, {"lastSeen": ago(601)}, "Offline"),
    ({"phase": "Ready", "ready": True}, {"hosts": []}, "Ready"),  # no heartbeat yet: not late
    ({"phase": "Ready", "ready": True}, {"lastSeen": "yesterday"}, "Ready"),
    ({"phase": "Deleting", "ready": False}, {"lastSeen": ago(1)}, "Deleting"),
    ({"phase": "Ready", "ready": True},
     {"lastSeen": (NOW - timedelta(seconds=30)).astimezone(
         timezone(timedelta(hours=2))).isoformat()}, "Online"),
    ({"phase": "Provisioning", "ready": False}, {"lastSeen": ago(1)}, "Provisioning"),
])
def test_derive_phase_table(setup: dict | None, edge: dict | None, phase: str) -> None:
    assert derive_phase(SetupStatus.parse(setup), edge, NOW) == phase


def test_liveness_thresholds_are_configurable() -> None:
    assert edge_state({"lastSeen": ago(20)}, NOW, Liveness(stale_after=10,
                                                           offline_after=30)) == "Stale"
    assert edge_state({"lastSeen": ago(31)}, NOW, Liveness(stale_after=10,
                                                           offline_after=30)) == "Offline"


def test_unknown_cluster_is_404(root: Api) -> None:
    r = root.get(f"/v1/cluster/{uuid.uuid4()}/status")
    assert r.status_code == 404
    assert "unknown cluster" in r.json()["error"]


def test_status_follows_the_edge(stack: Stack, root: Api) -> None:
    cluster = commission(stack, "status-edge")
    body = root.get(f"/v1/cluster/{cluster}/status").json()
    assert body["phase"] == "Ready" and body["ready"] is True
    assert body["setupPhase"] == "Ready" and "edge" not in body
    assert body["syncState"] == "Unknown"
    assert body["syncReason"] == "Edge Sync has not reported yet"
    assert body["sync"]["uuid"]  # the Edge Sync account, as the setup status records it
    assert body["spec"]["name"] == "status-edge"
    report_edge(stack, cluster, lastSeen=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                version="0.1.0", hosts=[{"hostname": "n1", "arch": "amd64",
                                         "k8s_version": "v1.30.4", "control_plane": True,
                                         "os_version": "x", "ready": True}],
                kubeseal_cert="-----BEGIN CERTIFICATE-----\nnot really\n")
    body = root.get(f"/v1/cluster/{cluster}/status").json()
    assert body["phase"] == "Online"
    assert body["edge"] == {"state": "Online", "lastSeen": body["edge"]["lastSeen"],
                            "version": "0.1.0", "hosts": 1, "sealingCertificate": True,
                            "appliedCommit": None, "flux": None, "failing": []}
    assert body["syncState"] == "Unknown"  # this edge reports no Flux status
    assert "not really" not in str(body)  # the certificate itself is not repeated
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    report_edge(stack, cluster, lastSeen=an_hour_ago.isoformat().replace("+00:00", "Z"))
    assert root.get(f"/v1/cluster/{cluster}/status").json()["phase"] == "Offline"


def test_invalid_config_shows_failed_with_error(stack: Stack, root: Api) -> None:
    cluster = create_cluster(stack.admin, "bad-chart-1", chart=str(uuid.uuid4()))
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("phase") == "Failed",
             what="Failed")
    body = root.get(f"/v1/cluster/{cluster}/status").json()
    assert body["phase"] == "Failed" and body["ready"] is False
    assert "chart" in body["error"]


def test_bootstrap_url_of_a_failed_cluster_is_409_with_its_error(stack: Stack,
                                                                 root: Api) -> None:
    cluster = create_cluster(stack.admin, "bad-chart-2", chart=str(uuid.uuid4()))
    wait_for(lambda: (status(stack.admin, cluster) or {}).get("phase") == "Failed",
             what="Failed")
    r = root.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert r.status_code == 409
    assert "failed: unknown chart" in r.json()["error"]
    assert root.post(f"/v1/cluster/{uuid.uuid4()}/bootstrap-url").status_code == 404
