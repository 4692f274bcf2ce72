"""The tunnel's RBAC on a real kube-apiserver: what the default Flux template renders, applied by
the real kustomize-controller from a bootstrapped cluster's repo, then used with a token of Edge
Sync's own ServiceAccount exactly as Edge Sync forwards a tunnel request (its token,
``Impersonate-User: fplus:<level>``, ``Impersonate-Extra-fplus-principal``), by the pinned
kubectl with ``--as`` and a kubeconfig's ``as-user-extra``.

Each level gets Kubernetes' own role, and the edge's API server, not the Cluster Manager,
refuses what a level may not do. A token of Edge Sync (stolen, or Edge Sync asked by a forged
tunnel request) may not become anyone else: ``system:masters``, another user, a
ServiceAccount, a uid or another extra are all refused by the API server's impersonation
check. The requests through the tunnel itself are in the other ``test_tunnel*`` modules."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.realedge import Edge
from harness.realedge.controlplane import kubeconfig
from harness.stack import Stack
from tests.edge.conftest import Fplus, bootstrap

IMPERSONATOR = "fplus-edge-sync-impersonate"


class AsEdgeSync:
    """kubectl with a token of the cluster's ``edge-sync`` ServiceAccount, impersonating."""

    def __init__(self, edge: Edge, namespace: str, work: Path) -> None:
        self.edge, self.namespace, self.work = edge, namespace, work
        token = edge.plane.kubectl("-n", namespace, "create", "token", "edge-sync",
                                   "--duration=1h").stdout.strip()
        self.config = yaml.safe_load(kubeconfig(edge.plane.url, edge.plane.pki.ca_crt,
                                                token=token))
        self.plain = self._write("edge-sync", {})

    def _write(self, name: str, impersonation: dict[str, Any]) -> Path:
        config = json.loads(json.dumps(self.config))
        config["users"][0]["user"].update(impersonation)
        path = self.work / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def run(self, *args: str, extra: dict[str, list[str]] | None = None
            ) -> subprocess.CompletedProcess[str]:
        """kubectl ``args`` as Edge Sync (``extra``: the user extras it asks for)."""
        path = self._write("extra", {"as-user-extra": extra}) if extra else self.plain
        return self.edge.plane.kubectl(*args, kubeconfig_path=path, check=False)

    def ok(self, *args: str, extra: dict[str, list[str]] | None = None) -> str:
        done = self.run(*args, extra=extra)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def refused(self, *args: str, extra: dict[str, list[str]] | None = None) -> str:
        done = self.run(*args, extra=extra)
        assert done.returncode != 0, (args, done.stdout)
        assert "Forbidden" in done.stderr or "forbidden" in done.stderr, (args, done.stderr)
        return done.stderr


@pytest.fixture(scope="module")
def as_sync(edge: Edge, edge_stack: Stack, fplus: Fplus,
            tmp_path_factory: pytest.TempPathFactory) -> AsEdgeSync:
    """A bootstrapped cluster whose repo Flux applied; kubectl as its Edge Sync."""
    work = tmp_path_factory.mktemp("tunnel-rbac")
    cluster = bootstrap(edge, fplus, "line-1", work)
    namespace = cluster["spec"]["namespace"]
    for kind in ("clusterrole", "clusterrolebinding"):
        assert edge.plane.get(f"{kind}/{IMPERSONATOR}") is not None  # applied by Flux
    return AsEdgeSync(edge, namespace, work)


def test_flux_applied_the_tunnel_rbac_from_the_repo(edge: Edge, as_sync: AsEdgeSync) -> None:
    role = edge.plane.get(f"clusterrole/{IMPERSONATOR}")
    assert role["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == "self-link"
    for level in ("view", "edit", "admin"):
        binding = edge.plane.get(f"clusterrolebinding/fplus-tunnel-{level}")
        assert binding["roleRef"]["name"] == level
        assert [s["name"] for s in binding["subjects"]] == [f"fplus:{level}"]


def test_each_level_is_kubernetes_own_role_decided_by_the_edge(as_sync: AsEdgeSync) -> None:
    name = "tunnel-rbac-probe"
    for level in ("view", "edit", "admin"):  # everyone reads pods (view) and nodes (ours)
        as_sync.ok(f"--as=fplus:{level}", "get", "pods", "-A")
        as_sync.ok(f"--as=fplus:{level}", "get", "nodes")
    # view writes nothing: the edge's API server says so
    err = as_sync.refused("--as=fplus:view", "-n", "default", "create", "configmap", name)
    assert 'User "fplus:view" cannot create resource "configmaps"' in err
    assert "yes" not in as_sync.run("--as=fplus:view", "auth", "can-i", "get",
                                    "secrets", "-n", "default").stdout
    # edit writes, but grants nothing
    as_sync.ok("--as=fplus:edit", "-n", "default", "create", "configmap", name)
    as_sync.ok("--as=fplus:edit", "-n", "default", "delete", "configmap", name)
    err = as_sync.refused("--as=fplus:edit", "-n", "default", "create", "rolebinding", name,
                          "--clusterrole=view", "--user=fplus:edit")
    assert 'User "fplus:edit" cannot create resource "rolebindings"' in err
    # admin grants within a namespace, never cluster-wide
    as_sync.ok("--as=fplus:admin", "-n", "default", "create", "rolebinding", name,
               "--clusterrole=view", "--user=someone")
    as_sync.ok("--as=fplus:admin", "-n", "default", "delete", "rolebinding", name)
    err = as_sync.refused("--as=fplus:admin", "create", "clusterrolebinding", name,
                          "--clusterrole=view", "--user=someone")
    assert 'User "fplus:admin" cannot create resource "clusterrolebindings"' in err
    as_sync.refused("--as=fplus:admin", "delete", "node", "edge-worker-1", "--dry-run=server")


def test_the_edge_names_the_level_and_the_caller(as_sync: AsEdgeSync) -> None:
    review = json.loads(as_sync.ok("--as=fplus:edit", "auth", "whoami", "-o", "json",
                                   extra={"fplus-principal": ["alice@EXAMPLE.COM"]}))
    user = review["status"]["userInfo"]
    assert user["username"] == "fplus:edit"
    assert user["extra"] == {"fplus-principal": ["alice@EXAMPLE.COM"]}
    assert "system:masters" not in user.get("groups", [])


@pytest.mark.parametrize("ask, extra, resource", [
    (("--as=someone",), None, '"users"'),
    (("--as=fplus:root",), None, '"users"'),
    (("--as=system:admin",), None, '"users"'),
    (("--as=fplus:admin", "--as-group=system:masters"), None, '"groups"'),
    (("--as=fplus:view", "--as-group=fplus:admin"), None, '"groups"'),
    (("--as=system:serviceaccount:kube-system:default",), None, '"serviceaccounts"'),
    (("--as=fplus:admin", "--as-uid=0"), None, '"uids"'),
    (("--as=fplus:admin",), {"scopes": ["all"]}, '"userextras/scopes"'),
], ids=["another-user", "a-lookalike", "system-admin", "system-masters", "another-group",
        "a-service-account", "a-uid", "another-extra"])
def test_edge_sync_may_become_no_one_else(as_sync: AsEdgeSync, ask: tuple[str, ...],
                                         extra: dict[str, list[str]] | None,
                                         resource: str) -> None:
    """Refused by the edge's API server whatever asked Edge Sync to send it."""
    err = as_sync.refused(*ask, "get", "pods", "-A", extra=extra)
    assert "cannot impersonate resource " + resource in err, err


def test_without_impersonation_edge_sync_is_only_itself(as_sync: AsEdgeSync) -> None:
    whoami = json.loads(as_sync.ok("auth", "whoami", "-o", "json"))
    assert whoami["status"]["userInfo"]["username"] == \
        f"system:serviceaccount:{as_sync.namespace}:edge-sync"
    as_sync.refused("-n", "default", "get", "secrets")
    as_sync.refused("-n", "default", "create", "configmap", "from-edge-sync")
