"""The console's deployments tab shows what the edge reports of order and drift: a
deployment helm-controller holds back names what it waits on, a drifted one is marked
(real processes, a signed-in session)."""

from __future__ import annotations

import uuid

from harness.servers import Api
from harness.stack import Stack, create_cluster
from tests.cluster_manager.api.conftest import report_edge
from tests.cluster_manager.api.test_deployments import HOSTS, make_chart
from tests.console.conftest import console_session


def test_waiting_and_drifted_deployments_are_shown(stack: Stack) -> None:
    chart = make_chart(stack, "Console drift chart")
    cluster = create_cluster(stack.admin, f"ui-drift-{uuid.uuid4().hex[:8]}")
    report_edge(stack, cluster, hosts=HOSTS)
    manager = Api(stack.manager.url, stack.admin.auth)
    path = f"/v1/cluster/{cluster}/deployment"
    made = {}
    for body in ({"name": "broker", "chart": chart},
                 {"name": "historian", "chart": chart, "dependsOn": ["broker"]},
                 {"name": "panel", "chart": chart, "driftDetection": "warn"}):
        r = manager.post(path, json=body)
        assert r.status_code == 201, r.text
        made[body["name"]] = r.json()["uuid"]
    objects = [
        {"kind": "HelmRelease", "namespace": "e", "name": f"app-{made['broker']}",
         "ready": "Unknown", "reason": "Progressing"},
        {"kind": "HelmRelease", "namespace": "e", "name": f"app-{made['historian']}",
         "ready": "Unknown", "reason": "DependencyNotReady", "message": "dependency not ready"},
        {"kind": "HelmRelease", "namespace": "e", "name": f"app-{made['panel']}",
         "ready": "True", "drifted": True}]
    report_edge(stack, cluster, deployments={
        "releases": [o["name"] for o in objects], "failed": [], "error": None},
        flux={"objects": objects, "total": 3, "ready": 1, "failed": 0, "progressing": 2})
    session, _ = console_session(stack)
    page = session.get(f"{stack.manager.url}/ui/cluster/{cluster}").text
    rows = {name: page[page.index(f'data-uuid="{uuid_}"'):][:1500]
            for name, uuid_ in made.items()}
    rows = {name: row[:row.index("</tr>")] for name, row in rows.items()}
    assert "waiting on broker: dependency not ready" in rows["historian"], rows["historian"]
    assert "state-drifted" in rows["panel"] and "state-drifted" not in rows["broker"]
    assert "waiting on" not in rows["broker"]
