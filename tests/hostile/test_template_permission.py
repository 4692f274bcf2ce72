"""Flux templates reach a cluster's repo only with the template's own permission.

The probe found two ways around ConfigDB WriteApp on the Flux template app (the entries
every edge's Flux applies): an operator holding Edge.Perm.Clusters on the wildcard, refused
when it wrote the template app, created a template rollout whose candidate (the default plus
a ClusterRoleBinding to cluster-admin) was committed into the clusters' repos; and an
operator holding Clusters on one cluster pinned it to any template (or the nil UUID, or
``null`` in the middle of someone else's rollout) with ``PATCH /v1/cluster/<c>``. Now a
cluster rollout of a template, a create naming ``fluxTemplate`` and a PATCH changing it take
WriteApp on the Flux template app, refused 403 naming that grant with nothing written; a
PATCH takes only the uuid of an existing template, or ``null``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from requests import Response

from fplus.config_store import uuids
from harness.servers import Api
from harness.stack import CONFIG, Stack, create_cluster, wait_for
from tests.conftest import grant, make_user

TEMPLATE_APP, ROLLOUTS = uuids.App.FluxTemplate, uuids.App.ClusterRollout
MERGE = {"Content-Type": "application/merge-patch+json"}
PASSWORD = "pw-operator"
GRANT = f"WriteApp on the Flux template app ({TEMPLATE_APP})"
EVIL = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "zz-evil"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]}


def operator(stack: Stack, target: str) -> tuple[str, Api, Api]:
    """A new principal holding Edge.Perm.Clusters on ``target``: its uuid, and its sessions
    with the Config Store and the Cluster Manager."""
    name = f"op-{uuid.uuid4().hex[:10]}"
    principal, store = make_user(stack.admin, name, PASSWORD)
    grant(stack.admin, principal, uuids.EdgePerm.Clusters, target)
    return principal, store, Api(stack.manager.url, (name, PASSWORD))


def config(stack: Stack, cluster: str) -> dict[str, Any]:
    found: dict[str, Any] = stack.admin.get(f"/v2/app/{CONFIG}/object/{cluster}").json()
    return found


def answered(call: Callable[[], Response], status: int) -> Response:
    """``call()``'s first answer of ``status`` (a new grant reaches the Cluster Manager
    once its cache of the caller's ACL expires)."""
    found: list[Response] = wait_for(lambda: [r for r in [call()] if r.status_code == status],
                                     what=f"an answer {status}")
    return found[0]


def stored_template(stack: Stack) -> str:
    """A Flux template an administrator stored under a new object of its own."""
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.Individual})
    assert r.status_code == 201, r.text
    template = r.json()["uuid"]
    default = stack.admin.get(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}").json()
    r = stack.admin.put(f"/v2/app/{TEMPLATE_APP}/object/{template}",
                        json=default | {"zz-evil.yaml": [EVIL]})
    assert r.status_code in (201, 204), r.text
    return template


def test_a_template_rollout_needs_the_template_grant(module_stack: Stack) -> None:
    stack = module_stack
    cluster = create_cluster(stack.admin, f"tr-{uuid.uuid4().hex[:8]}")
    principal, store, manager = operator(stack, uuids.NULL)
    default = stack.admin.get(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}").json()
    candidate = default | {"zz-evil.yaml": [EVIL]}
    # the Config Store refuses the operator the template app itself
    r = store.put(f"/v2/app/{TEMPLATE_APP}/object/{TEMPLATE_APP}", json=candidate)
    assert r.status_code == 403, r.text
    before = stack.admin.get(f"/v2/app/{ROLLOUTS}/object").json()
    body = {"name": "evil", "change": {"fluxTemplate": candidate}, "clusters": [cluster]}
    r = manager.post("/v1/rollout", json=body)
    assert r.status_code == 403, r.text
    assert GRANT in r.json()["error"]
    assert stack.admin.get(f"/v2/app/{ROLLOUTS}/object").json() == before
    assert "fluxTemplate" not in config(stack, cluster)
    # with the grant, the same rollout is made (once the manager's ACL cache has it)
    grant(stack.admin, principal, uuids.ConfigDBPerm.WriteApp, TEMPLATE_APP)
    answered(lambda: manager.post("/v1/rollout", json=body), 201)


def test_pinning_a_cluster_needs_the_template_grant(module_stack: Stack) -> None:
    stack = module_stack
    template = stored_template(stack)
    cluster = create_cluster(stack.admin, f"pin-{uuid.uuid4().hex[:8]}")
    principal, _, manager = operator(stack, cluster)
    path = f"/v1/cluster/{cluster}"
    for value in (template, uuids.NULL):
        r = manager.patch(path, json={"fluxTemplate": value}, headers=MERGE)
        assert r.status_code in (403, 422), r.text
        assert "fluxTemplate" not in config(stack, cluster)
    assert GRANT in manager.patch(path, json={"fluxTemplate": template},
                                  headers=MERGE).json()["error"]
    # pinned by someone who may (a rollout's step): the operator may not unpin it
    r = stack.admin.patch(f"/v2/app/{CONFIG}/object/{cluster}",
                          json={"fluxTemplate": template}, headers=MERGE)
    assert r.status_code == 204, r.text
    r = manager.patch(path, json={"fluxTemplate": None}, headers=MERGE)
    assert r.status_code == 403 and GRANT in r.json()["error"], r.text
    assert config(stack, cluster)["fluxTemplate"] == template
    # a PATCH leaving the template as it is needs no more than before
    r = manager.patch(path, json={"values": {"x": 1}, "fluxTemplate": template},
                      headers=MERGE)
    assert r.status_code == 200, r.text
    # with the grant: only an existing template, or null
    grant(stack.admin, principal, uuids.ConfigDBPerm.WriteApp, TEMPLATE_APP)
    answered(lambda: manager.patch(path, json={"fluxTemplate": str(uuid.uuid4())},
                                   headers=MERGE), 422)
    for value in (uuids.NULL, str(uuid.uuid4()), "not-a-uuid"):
        r = manager.patch(path, json={"fluxTemplate": value}, headers=MERGE)
        assert r.status_code == 422 and "fluxTemplate" in r.json()["error"], r.text
        assert config(stack, cluster)["fluxTemplate"] == template
    r = manager.patch(path, json={"fluxTemplate": None}, headers=MERGE)
    assert r.status_code == 200, r.text
    assert "fluxTemplate" not in config(stack, cluster)


def test_creating_a_pinned_cluster_needs_the_template_grant(module_stack: Stack) -> None:
    stack = module_stack
    template = stored_template(stack)
    principal, _, manager = operator(stack, uuids.NULL)
    configured = stack.admin.get(f"/v2/app/{CONFIG}/object").json()
    body = {"name": f"new-{uuid.uuid4().hex[:8]}", "namespace": "fplus-edge",
            "fluxTemplate": template}
    r = manager.post("/v1/cluster", json=body)
    assert r.status_code == 403 and GRANT in r.json()["error"], r.text
    assert stack.admin.get(f"/v2/app/{CONFIG}/object").json() == configured
    grant(stack.admin, principal, uuids.ConfigDBPerm.WriteApp, TEMPLATE_APP)
    r = answered(lambda: manager.post(
        "/v1/cluster", json=body | {"fluxTemplate": str(uuid.uuid4())}), 422)
    assert "fluxTemplate" in r.json()["error"], r.text
    assert stack.admin.get(f"/v2/app/{CONFIG}/object").json() == configured
    r = manager.post("/v1/cluster", json=body)
    assert r.status_code == 201, r.text
    assert config(stack, r.json()["uuid"])["fluxTemplate"] == template
