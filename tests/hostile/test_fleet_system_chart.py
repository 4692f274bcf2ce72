"""A fleet deployment of a system chart (the edge-cluster chart every cluster already runs).

The probe's fleet deployment of the edge-cluster chart template was accepted where a
per-cluster deployment of it is refused with 422, and a second edge-cluster release was
created on the target. The fleet API (create and merge-patch) and the console's fleet form
now refuse it as the per-cluster API does, with the same words, and nothing is written.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from fplus.config_store import uuids
from harness.central import import_chart
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, create_cluster
from tests.cluster_manager.api.test_deployments import make_chart
from tests.console.conftest import console_session

SYSTEM = uuids.Shared.EdgeClusterChart
REFUSAL = f"chart: {SYSTEM} is a system chart (the Cluster Manager deploys it to every cluster)"


@pytest.fixture(scope="module")
def stack(shared_stack: Stack) -> Stack:
    """The session's stack: these tests only add and look at objects of their own."""
    return shared_stack


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


def _fleet_names(root: Api) -> set[Any]:
    r = root.get("/v1/fleet-deployment")
    assert r.status_code == 200, r.text
    return {f["name"] for f in r.json()["fleetDeployments"]}


def test_the_api_refuses_a_fleet_deployment_of_a_system_chart(stack: Stack, root: Api) -> None:
    cluster = create_cluster(stack.admin, f"sys-{uuid.uuid4().hex[:8]}")
    name = f"second-edge-cluster-{uuid.uuid4().hex[:8]}"
    r = root.post("/v1/fleet-deployment", json={"name": name, "chart": SYSTEM,
                                                "clusters": [cluster]})
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(REFUSAL), r.json()
    assert name not in _fleet_names(root)

    ordinary = make_chart(stack, f"Ordinary {name}", "ordinary")
    import_chart(root, "ordinary")
    r = root.post("/v1/fleet-deployment", json={"name": name, "chart": ordinary,
                                                "clusters": [cluster]})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    r = root.patch(f"/v1/fleet-deployment/{fleet}", json={"chart": SYSTEM},
                   headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(REFUSAL), r.json()
    assert root.get(f"/v1/fleet-deployment/{fleet}").json()["chart"] == ordinary


def test_the_console_form_refuses_a_fleet_deployment_of_a_system_chart(
        stack: Stack, root: Api) -> None:
    session, _ = console_session(stack)
    base = f"{stack.manager.url}/ui/fleet"
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', session.get(base).text)
    assert csrf
    name = f"ui-second-edge-cluster-{uuid.uuid4().hex[:8]}"
    r = session.post(base, allow_redirects=False, data={
        "csrf": csrf.group(1), "name": name, "chart": SYSTEM, "selector": "env=prod"})
    assert r.status_code == 422, r.status_code
    found = re.search(r'id="fleet-chart-error">([^<]*)<', r.text)
    assert found and "is a system chart" in found.group(1), found and found.group(1)
    assert name not in _fleet_names(root)
