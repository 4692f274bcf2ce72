"""A cluster's labels decide which fleet deployments and cluster rollouts reach it, so a
label change that moves it into or out of one takes what those take.

The probe found an operator holding Edge.Perm.Clusters on one cluster only relabelled it
(``PATCH /v1/cluster/<c> {"labels": {"site": "b"}}``) into fleet deployment ``siteb`` and
then read that fleet deployment's values (its ``apiKey``) in the cluster's deployment list.
Now a label change that adds the cluster to, or removes it from, a fleet deployment's
targets or an unfinished cluster rollout's needs Clusters on the wildcard, refused 403
naming the fleet deployment or rollout with nothing written; one that moves it in or out of
none is allowed as before.
"""

from __future__ import annotations

import uuid
from typing import Any

from fplus.config_store import uuids
from harness.central import import_chart, import_flux
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import CONFIG, Stack, create_cluster, wait_for
from tests.cluster_manager.api.test_deployments import make_chart
from tests.conftest import grant, make_user

MERGE = {"Content-Type": "application/merge-patch+json"}
PASSWORD = "pw-operator"


def operator(stack: Stack, target: str) -> tuple[str, Api]:
    """A new principal holding Edge.Perm.Clusters on ``target``, and its Cluster Manager
    session."""
    name = f"op-{uuid.uuid4().hex[:10]}"
    principal, _ = make_user(stack.admin, name, PASSWORD)
    grant(stack.admin, principal, uuids.EdgePerm.Clusters, target)
    return principal, Api(stack.manager.url, (name, PASSWORD))


def labels(stack: Stack, cluster: str) -> dict[str, Any]:
    found: dict[str, Any] = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()
    return found.get("labels") or {}


def relabel(manager: Api, cluster: str, new: dict[str, str]) -> Any:
    return manager.patch(f"/v1/cluster/{cluster}", json={"labels": new}, headers=MERGE)


def test_relabelling_into_or_out_of_a_fleet_deployment_needs_the_wildcard(
        module_stack: Stack) -> None:
    stack = module_stack
    root = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    tag = uuid.uuid4().hex[:8]
    a = create_cluster(stack.admin, f"la-{tag}", labels={"site": f"a{tag}"})
    b = create_cluster(stack.admin, f"lb-{tag}", labels={"site": f"b{tag}"})
    import_chart(root, "mqtt-broker")  # the chart make_chart's template names
    r = root.post("/v1/fleet-deployment", json={
        "name": "siteb", "chart": make_chart(stack, f"chart-{tag}"),
        "values": {"apiKey": f"k-{tag}"}, "selector": {"matchLabels": {"site": f"b{tag}"}}})
    assert r.status_code == 201, r.text
    fleet = r.json()["uuid"]
    principal, on_a = operator(stack, a)
    _, on_b = operator(stack, b)
    for manager, cluster, new in ((on_a, a, {"site": f"b{tag}"}),  # joins the fleet
                                  (on_b, b, {"site": "elsewhere"})):  # leaves it
        before = labels(stack, cluster)
        r = relabel(manager, cluster, new)
        assert r.status_code == 403, r.text
        assert fleet in r.json()["error"] and "siteb" in r.json()["error"], r.text
        assert "wildcard" in r.json()["error"], r.text
        assert labels(stack, cluster) == before
    assert all(d.get("fleetDeployment") != fleet for d in
               root.get(f"/v1/cluster/{a}").json()["deployments"])
    # a label no fleet selector reads changes nothing the fleet reaches
    r = relabel(on_a, a, {"site": f"a{tag}", "tier": "line"})
    assert r.status_code == 200, r.text
    assert labels(stack, a) == {"site": f"a{tag}", "tier": "line"}
    # with Clusters on every cluster (what fleet deployments take) the move is allowed
    grant(stack.admin, principal, uuids.EdgePerm.Clusters, uuids.NULL)
    wait_for(lambda: relabel(on_a, a, {"site": f"b{tag}"}).status_code == 200,
             what="the relabel allowed once the wildcard grant is seen")
    assert labels(stack, a)["site"] == f"b{tag}"


def test_relabelling_into_or_out_of_a_cluster_rollout_needs_the_wildcard(
        module_stack: Stack) -> None:
    stack = module_stack
    root = Api(stack.manager.url, ("admin", ADMIN_PASSWORD))
    ring = f"r{uuid.uuid4().hex[:8]}"
    inside = [create_cluster(stack.admin, f"{ring}-{i}", labels={"ring": ring})
              for i in range(2)]
    outside = create_cluster(stack.admin, f"{ring}-out", labels={"ring": "none"})
    import_flux(root, "v2.7.5")
    r = root.post("/v1/rollout", json={
        "name": "ring", "change": {"fluxVersion": "v2.7.5"},
        "selector": {"matchLabels": {"ring": ring}},
        "rollout": {"steps": [{"clusters": 1, "pause": "manual"}]}})
    assert r.status_code == 201, r.text
    rollout = r.json()["uuid"]
    for cluster, new in ((outside, {"ring": ring}), (inside[1], {"ring": "none"})):
        _, manager = operator(stack, cluster)
        before = labels(stack, cluster)
        r = relabel(manager, cluster, new)
        assert r.status_code == 403, r.text
        assert rollout in r.json()["error"] and "wildcard" in r.json()["error"], r.text
        assert labels(stack, cluster) == before
