"""``GET /metrics``: Prometheus text that moves with what the service does."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.api.conftest import Cluster, commission, report_edge


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}(?:{{(.*)}})? (\S+)", line)
        if match and ",".join(sorted((match.group(1) or "").split(","))) == want:
            return float(match.group(2))
    return 0.0


def test_metrics_count_reconciles_seals_and_bootstraps(stack: Stack, manager: Api, root: Api,
                                                        bootstrapped: Cluster) -> None:
    before = manager.get("/metrics").text
    commission(stack, "metrics-one")
    url = f"/v1/cluster/{bootstrapped.uuid}/secret/app/m/k"
    assert root.put(url, data=b"v").status_code == 204
    assert root.put(url + "?dryrun", data=b"v").status_code == 204
    assert root.put(url + "?scope=bogus", data=b"v").status_code == 400
    assert root.post(f"/v1/cluster/{bootstrapped.uuid}/bootstrap-url").status_code == 200
    after = manager.get("/metrics")
    assert after.headers["Content-Type"].startswith("text/plain")
    text = after.text
    assert "# TYPE cluster_manager_reconcile_seconds histogram" in text
    assert sample(text, "cluster_manager_reconcile_seconds_count", outcome="ok") > \
        sample(before, "cluster_manager_reconcile_seconds_count", outcome="ok")
    for outcome, delta in (("sealed", 1), ("dryrun", 1), ("refused", 1)):
        name = "cluster_manager_secret_operations_total"
        assert sample(text, name, operation="seal", outcome=outcome) - \
            sample(before, name, operation="seal", outcome=outcome) == delta, outcome
    assert sample(text, "cluster_manager_bootstrap_total", kind="url", outcome="issued") >= 1
    assert sample(text, "cluster_manager_queue_depth") >= 0


def _phases(manager: Api) -> dict[str, float]:
    text = manager.get("/metrics").text
    return {phase: sample(text, "cluster_manager_clusters", phase=phase)
            for phase in ("Failed", "Stale", "Offline", "Online")} | {
        "late": sample(text, "cluster_manager_edges_stale")}


def _truth(stack: Stack, root: Api) -> dict[str, float]:
    """The same counts from every cluster's status view, as the API shows it."""
    found = dict.fromkeys(("Failed", "Stale", "Offline", "Online"), 0.0)
    for cluster in stack.admin.get(f"/v2/app/{uuids.App.EdgeClusterConfiguration}/object").json():
        phase = root.get(f"/v1/cluster/{cluster}/status").json()["phase"]
        if phase in found:
            found[phase] += 1
    return found | {"late": found["Stale"] + found["Offline"]}


def test_clusters_by_phase_and_late_edges_follow_the_fleet(stack: Stack, manager: Api,
                                                          root: Api) -> None:
    refused = create_cluster(stack.admin, "metrics-refused", fluxVersion="v9.9.9")
    wait_for(lambda: (status(stack.admin, refused) or {}).get("phase") == "Failed",
             what="refused at creation")
    late, offline = commission(stack, "metrics-late"), commission(stack, "metrics-gone")
    ago = datetime.now(UTC) - timedelta(minutes=5)  # past the 90 s stale threshold
    report_edge(stack, late, lastSeen=ago.strftime("%Y-%m-%dT%H:%M:%SZ"))
    report_edge(stack, offline, lastSeen=(ago - timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"))

    def agree() -> dict[str, float] | None:  # the counts are recomputed every 15 s at most
        shown, truth = _phases(manager), _truth(stack, root)
        return shown if shown == truth else None
    shown = wait_for(agree, timeout=40, what="/metrics agreeing with the status views")
    assert shown["Failed"] >= 1 and shown["Stale"] >= 1 and shown["Offline"] >= 1
    assert shown["late"] >= 2
