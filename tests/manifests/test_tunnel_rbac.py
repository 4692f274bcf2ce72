"""The RBAC the default Flux template renders for Kubernetes API access through the tunnel:
three fixed users bound to Kubernetes' own ``view``/``edit``/``admin`` (and to reading Nodes),
and Edge Sync allowed to impersonate exactly those users, by name, with the one extra that
names the caller: never a group, a service account, a uid or any other user.

The real kube-apiserver's verdicts on these rules are in ``tests/edge/test_tunnel_rbac.py``.
"""

from __future__ import annotations

from typing import Any

from tests.manifests.samples import CONTEXTS, find, objects, render_flux

Rendered = dict[str, list[dict[str, Any]]]
RBAC_GROUP = "rbac.authorization.k8s.io"
LEVELS = ("view", "edit", "admin")
USERS = [f"fplus:{level}" for level in LEVELS]
LABELS = {"app.kubernetes.io/name": "edge-sync",
          "app.kubernetes.io/managed-by": "fplus-cluster-manager"}


def _user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": RBAC_GROUP, "name": name}


def _roles(rendered: Rendered) -> list[dict[str, Any]]:
    return [doc for _, doc in objects(rendered) if doc["kind"] in ("Role", "ClusterRole")]


def _bindings(rendered: Rendered) -> list[dict[str, Any]]:
    return [doc for _, doc in objects(rendered)
            if doc["kind"] in ("RoleBinding", "ClusterRoleBinding")]


def test_each_level_is_its_user_bound_to_the_kubernetes_role_of_that_name(
        rendered: Rendered) -> None:
    for level in LEVELS:
        binding = find(rendered, "ClusterRoleBinding", f"fplus-tunnel-{level}")
        assert binding["roleRef"] == {"apiGroup": RBAC_GROUP, "kind": "ClusterRole",
                                      "name": level}
        assert binding["subjects"] == [_user(f"fplus:{level}")]
        assert binding["metadata"]["labels"] == LABELS


def test_every_level_reads_nodes_and_nothing_more(rendered: Rendered) -> None:
    role = find(rendered, "ClusterRole", "fplus-tunnel-nodes")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"],
                              "verbs": ["get", "list", "watch"]}]
    binding = find(rendered, "ClusterRoleBinding", "fplus-tunnel-nodes")
    assert binding["roleRef"] == {"apiGroup": RBAC_GROUP, "kind": "ClusterRole",
                                  "name": "fplus-tunnel-nodes"}
    assert binding["subjects"] == [_user(u) for u in USERS]
    assert role["metadata"]["labels"] == binding["metadata"]["labels"] == LABELS


def test_the_users_are_bound_to_nothing_else(rendered: Rendered) -> None:
    """Only these four bindings name a User; none names a Group (``system:masters`` or any)."""
    bound = {b["metadata"]["name"]: [s for s in b["subjects"] if s["kind"] != "ServiceAccount"]
             for b in _bindings(rendered)}
    named = {name: subjects for name, subjects in bound.items() if subjects}
    assert sorted(named) == sorted(["fplus-tunnel-view", "fplus-tunnel-edit",
                                    "fplus-tunnel-admin", "fplus-tunnel-nodes"])
    assert {s["kind"] for subjects in named.values() for s in subjects} == {"User"}
    assert {s["name"] for subjects in named.values() for s in subjects} == set(USERS)


def test_edge_sync_impersonates_exactly_the_three_users_and_the_principal_extra() -> None:
    for context in CONTEXTS.values():
        rendered = render_flux(context)
        role = find(rendered, "ClusterRole", "fplus-edge-sync-impersonate")
        assert role["rules"] == [
            {"apiGroups": [""], "resources": ["users"],
             "resourceNames": ["fplus:view", "fplus:edit", "fplus:admin"],
             "verbs": ["impersonate"]},
            {"apiGroups": ["authentication.k8s.io"],
             "resources": ["userextras/fplus-principal"], "verbs": ["impersonate"]},
        ]
        binding = find(rendered, "ClusterRoleBinding", "fplus-edge-sync-impersonate")
        assert binding["roleRef"] == {"apiGroup": RBAC_GROUP, "kind": "ClusterRole",
                                      "name": "fplus-edge-sync-impersonate"}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "edge-sync",
                                        "namespace": context["namespace"]}]
        assert role["metadata"]["labels"] == binding["metadata"]["labels"] == LABELS


def test_nothing_else_may_impersonate_and_nothing_on_groups_accounts_or_uids(
        rendered: Rendered) -> None:
    """``impersonate`` appears in one role only, never on groups, serviceaccounts or uids
    (which would let Edge Sync become ``system:masters`` or any ServiceAccount), and never
    with a wildcard or without resourceNames on users."""
    rules = [(role["metadata"]["name"], rule) for role in _roles(rendered)
             for rule in role["rules"] if "impersonate" in rule["verbs"] or "*" in rule["verbs"]]
    assert {name for name, _ in rules} == {"fplus-edge-sync-impersonate"}
    resources = {resource for _, rule in rules for resource in rule["resources"]}
    assert resources == {"users", "userextras/fplus-principal"}
    assert not resources & {"groups", "serviceaccounts", "uids", "userextras/*", "*"}
    for _, rule in rules:
        assert rule["verbs"] == ["impersonate"]
        assert "*" not in rule["apiGroups"]
        if rule["resources"] == ["users"]:
            assert rule["resourceNames"] == USERS


def test_the_impersonated_users_are_the_bound_users(rendered: Rendered) -> None:
    """Whatever Edge Sync may become has a binding; nothing bound is out of its reach."""
    role = find(rendered, "ClusterRole", "fplus-edge-sync-impersonate")
    [users] = [rule["resourceNames"] for rule in role["rules"] if rule["resources"] == ["users"]]
    bound = {s["name"] for b in _bindings(rendered) for s in b["subjects"] if s["kind"] == "User"}
    assert set(users) == bound


def test_the_cluster_manager_url_reaches_edge_sync_only_when_known() -> None:
    for context in CONTEXTS.values():
        config = find(render_flux(context), "ConfigMap", "cluster-config", context["namespace"])
        assert config["data"].get("CLUSTER_MANAGER_URL") == context["url"].get("cluster_manager")
    assert any("cluster_manager" in c["url"] for c in CONTEXTS.values())
    assert any("cluster_manager" not in c["url"] for c in CONTEXTS.values())
