"""``GET /metrics``: Prometheus text that moves with what the service does."""

from __future__ import annotations

import re

from harness.servers import Api
from harness.stack import Stack
from tests.cluster_manager.api.conftest import Cluster, commission


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
