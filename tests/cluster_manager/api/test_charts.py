"""Helm chart templates over HTTP: listed with system charts marked; deleting one is refused
while deployments use it (they are named) and for a system chart, and done with the caller's
own Config Store permission."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import Stack, create_cluster
from tests.cluster_manager.api.test_deployments import make_chart

TEMPLATE = uuids.App.HelmChartTemplate


def test_charts_are_listed_with_system_charts_marked(stack: Stack, root: Api,
                                                     user_with: Callable[..., Api]) -> None:
    mine = make_chart(stack, "Historian", chart="historian")
    r = root.get("/v1/chart")
    assert r.status_code == 200, r.text
    charts = {c["uuid"]: c for c in r.json()["charts"]}
    assert charts[mine] == {"uuid": mine, "name": "Historian", "chart": "historian",
                            "system": False}
    system = charts[uuids.Shared.EdgeClusterChart]
    assert system["system"] is True and system["chart"] == "edge-cluster"
    assert user_with().get("/v1/chart").status_code == 200
    assert Api(stack.manager.url).get("/v1/chart").status_code == 401


def test_a_chart_in_use_is_not_deleted_and_its_users_are_named(stack: Stack, root: Api) -> None:
    chart = make_chart(stack, "Bridge", chart="uns-bridge")
    cluster = create_cluster(stack.admin, f"chart-{uuid.uuid4().hex[:8]}")
    d = root.post(f"/v1/cluster/{cluster}/deployment",
                  json={"name": "bridge-1", "chart": chart}).json()["uuid"]
    r = root.delete(f"/v1/chart/{chart}")
    assert r.status_code == 409, r.text
    assert all(word in r.json()["error"] for word in ("bridge-1", d, cluster))
    assert stack.admin.get(f"/v2/app/{TEMPLATE}/object/{chart}").status_code == 200

    assert root.delete(f"/v1/cluster/{cluster}/deployment/{d}").status_code == 204
    assert root.delete(f"/v1/chart/{chart}").status_code == 204
    assert stack.admin.get(f"/v2/app/{TEMPLATE}/object/{chart}").status_code == 404
    assert root.delete(f"/v1/chart/{chart}").status_code == 404


def test_system_charts_and_callers_without_write_access_are_refused(
        stack: Stack, root: Api, user_with: Callable[..., Api]) -> None:
    r = root.delete(f"/v1/chart/{uuids.Shared.EdgeClusterChart}")
    assert r.status_code == 409 and "system chart" in r.json()["error"]
    chart = make_chart(stack, "Unused")
    # managing every cluster is not writing chart templates: the Config Store decides
    r = user_with((uuids.EdgePerm.Clusters, uuids.NULL)).delete(f"/v1/chart/{chart}")
    assert r.status_code == 403, r.text
    writer = user_with((uuids.ConfigDBPerm.WriteApp, TEMPLATE))
    assert writer.delete(f"/v1/chart/{chart}").status_code == 204
    assert stack.admin.get(f"/v2/app/{TEMPLATE}/object/{chart}").status_code == 404
    assert root.delete("/v1/chart/nope").status_code == 400
