"""An edge's Kubernetes API from the centre, on a real edge: kubectl through the Cluster
Manager's proxy and the tunnel the edge's real Edge Sync keeps open.

The cluster is bootstrapped as any other; its repo's RBAC (``fplus:view|edit|admin`` and
Edge Sync's right to impersonate exactly those) is applied by the real kustomize-controller,
and the real kube-apiserver decides what each level may do. Each user's kubeconfig is the one
``fplus cluster kubeconfig`` prints, its token handed over by ``fplus kube-credential``.
kubectl sends no credentials to a plain-HTTP server, so the users reach the Cluster Manager
through an HTTPS front (``harness.tls_front``, standing in for its ingress). kwok stands in
for a kubelet's streams (``harness.realedge.streams``): ``logs`` read a file the test writes,
``exec`` runs its command on this host, ``port-forward`` reaches a loopback echo server.
Crafted impersonation with Edge Sync's own token is in ``test_tunnel_rbac.py``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from fplus.config_store import uuids
from harness import edgetools
from harness.realedge import Edge
from harness.realedge.streams import (
    READ_TWO_LINES,
    TRANSPORTS,
    EchoServer,
    KubectlStream,
    PodStreams,
    echo_server,
    follow_logs,
    pod_streams,
    port_forward,
    start_pod,
)
from harness.servers import ADMIN_PASSWORD, Api
from harness.stack import Stack, wait_for
from harness.tls_front import TlsFront, tls_front
from tests.conftest import grant, make_user
from tests.edge.conftest import FPLUS, Fplus, bootstrap

NAME = "tunnel-line"
WORK = "line-work"
POD = "press-0"
PASSWORD = "pw-tunnel-" + "x" * 8


@pytest.fixture(scope="module")
def cluster(edge: Edge, fplus: Fplus, edge_stack: Stack,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cluster, bootstrapped on the edge, once its tunnel is connected."""
    found = bootstrap(edge, fplus, NAME, tmp_path_factory.mktemp("tunnel"))
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))
    wait_for(lambda: manager.get(f"/v1/cluster/{found['uuid']}").json()
             .get("tunnel", {}).get("state") == "connected", timeout=60,
             what="the edge's tunnel to connect")
    edge.plane.kubectl("create", "namespace", WORK)
    return found


@pytest.fixture(scope="module")
def front(edge_stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsFront]:
    with tls_front(edge_stack.manager.url, tmp_path_factory.mktemp("front")) as running:
        yield running


def _kubeconfig(stack: Stack, front: TlsFront, user: str, password: str, home: Path,
                cluster: str) -> Path:
    """``fplus login`` as ``user`` through the front, then ``fplus cluster kubeconfig``
    (by UUID: a grant on the cluster's Kubernetes API alone does not show its name)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"), "NO_COLOR": "1"}
    for args, stdin in (
            (["login", front.url, "--config-store", stack.store.url, "-u", user,
              "--ca-file", str(front.ca), "--password-stdin"], password + "\n"),
            (["cluster", "kubeconfig", cluster, "-o", str(home / "kubeconfig")], None)):
        done = subprocess.run([FPLUS, *args], env=env, input=stdin, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return home / "kubeconfig"


@pytest.fixture(scope="module")
def kubeconfigs(cluster: dict[str, Any], edge_stack: Stack, front: TlsFront,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A kubeconfig per level (``view``, ``edit``, and ``none``: a user without a grant),
    each from ``fplus cluster kubeconfig`` as its own user."""
    store = Api(edge_stack.store.url, ("admin", ADMIN_PASSWORD))
    found = {}
    for level, permission in (("view", uuids.EdgePerm.KubeView),
                              ("edit", uuids.EdgePerm.KubeEdit), ("none", None)):
        user = f"{level}-operator"
        principal, _ = make_user(store, user, PASSWORD)
        if permission is not None:
            grant(store, principal, permission, cluster["uuid"])
        found[level] = _kubeconfig(edge_stack, front, user, PASSWORD,
                                   tmp_path_factory.mktemp(f"fplus-{level}"), cluster["uuid"])
    return found


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(edgetools.binary("kubectl")), "--kubeconfig", str(kubeconfig),
                           "--request-timeout=30s", *args], input=stdin, capture_output=True,
                          text=True, timeout=90, check=False, env={**os.environ, **(env or {})})


def _ok(kubeconfig: Path, *args: str, **kw: Any) -> str:
    done = _kubectl(kubeconfig, *args, **kw)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture(scope="module")
def served(edge: Edge, cluster: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[PodStreams, EchoServer]]:
    """A Running kwok Pod whose logs are a file, exec runs here and port 8080 echoes."""
    scratch = tmp_path_factory.mktemp("streams")
    start_pod(edge, WORK, POD)
    with echo_server() as echo, pod_streams(edge, WORK, POD, log_file=scratch / "press.log",
                                            target_port=echo.port) as streams:
        yield streams, echo


def test_a_viewer_gets_nodes_and_watches_pods(edge: Edge,
                                              kubeconfigs: dict[str, Path]) -> None:
    nodes = _ok(kubeconfigs["view"], "get", "nodes", "-o", "name").split()
    names = sorted(i["metadata"]["name"] for i in edge.plane.get("nodes")["items"])
    assert names and sorted(nodes) == [f"node/{n}" for n in names]
    with KubectlStream(kubeconfigs["view"], "get", "pods", "-A", "--watch",
                       "--output-watch-events", "-o", "name") as watching:
        time.sleep(1)  # the watch is established before the Pod is made
        start_pod(edge, WORK, "watched-0")
        watching.wait_line(r"pod/watched-0", timeout=30)
        assert watching.proc.poll() is None  # still watching


CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: line-settings
  namespace: line-work
data:
  speed: "12"
"""


def test_an_editor_applies_and_deletes_and_a_viewer_is_refused_by_the_edge(
        edge: Edge, kubeconfigs: dict[str, Path]) -> None:
    assert "created" in _ok(kubeconfigs["edit"], "apply", "-f", "-", stdin=CONFIGMAP)
    assert edge.plane.get("-n", WORK, "configmap/line-settings")["data"] == {"speed": "12"}
    refused = _kubectl(kubeconfigs["view"], "apply", "-f", "-",
                       stdin=CONFIGMAP.replace('"12"', '"99"'))
    # the edge's API server's own words, about the level's user: not a refusal of ours
    assert refused.returncode != 0
    assert 'User "fplus:view" cannot patch resource "configmaps"' in refused.stderr, (
        refused.stderr)
    assert edge.plane.get("-n", WORK, "configmap/line-settings")["data"] == {"speed": "12"}
    _ok(kubeconfigs["edit"], "-n", WORK, "delete", "configmap", "line-settings")
    assert edge.plane.kubectl("-n", WORK, "get", "configmap/line-settings",
                              check=False).returncode != 0


def test_whoami_on_the_edge_names_the_levels_user_and_the_caller(
        kubeconfigs: dict[str, Path]) -> None:
    review = json.loads(_ok(kubeconfigs["edit"], "auth", "whoami", "-o", "json"))
    user = review["status"]["userInfo"]
    assert user["username"] == "fplus:edit"
    assert user["extra"]["fplus-principal"] == ["edit-operator"]


def test_logs_and_logs_follow_through_the_tunnel(
        served: tuple[PodStreams, EchoServer], kubeconfigs: dict[str, Path]) -> None:
    streams, _ = served
    streams.log("started", "cycle 1")
    assert _ok(kubeconfigs["view"], "-n", WORK, "logs", POD).splitlines()[-2:] == [
        "started", "cycle 1"]
    with follow_logs(kubeconfigs["view"], WORK, POD) as following:
        following.wait_line("^cycle 1$")
        streams.log("written while following")
        following.wait_line("^written while following$", timeout=15)


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_exec_and_port_forward_through_the_tunnel(
        served: tuple[PodStreams, EchoServer], kubeconfigs: dict[str, Path],
        transport: str) -> None:
    _, echo = served
    env = TRANSPORTS[transport]
    assert _ok(kubeconfigs["edit"], "-n", WORK, "exec", POD, "--", "echo", "hi",
               env=env) == "hi\n"
    assert _ok(kubeconfigs["edit"], "-n", WORK, "exec", "-i", POD, "--", *READ_TWO_LINES,
               stdin="line one\nline two\n", env=env) == "line one\nline two\n"
    refused = _kubectl(kubeconfigs["view"], "-n", WORK, "exec", POD, "--", "true", env=env)
    assert refused.returncode != 0 and 'User "fplus:view"' in refused.stderr, refused.stderr
    message = f"ping over {transport}\n".encode() * 2000
    with (port_forward(kubeconfigs["edit"], WORK, POD, 8080, env=env) as local,
          socket.create_connection(("127.0.0.1", local), timeout=10) as conn):
        conn.sendall(message)
        back = b""
        while len(back) < len(message):
            back += conn.recv(65536)
        assert back == message
    assert bytes(echo.received[-1]) == message


def test_a_user_without_a_grant_is_refused_before_the_edge_and_audited(
        edge_stack: Stack, cluster: dict[str, Any], kubeconfigs: dict[str, Path]) -> None:
    refused = _kubectl(kubeconfigs["none"], "get", "namespaces")
    assert refused.returncode != 0 and "Forbidden" in refused.stderr, refused.stderr
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))
    rows = manager.get("/v1/audit", params={"cluster": cluster["uuid"], "limit": 200}).json()
    mine = [r for r in rows["entries"] if r["principal"]["name"] == "none-operator"]
    assert mine and {(r["action"], r["outcome"], r["reason"]) for r in mine} == {
        ("kube.get", "refused", "none")}
    granted = [r for r in rows["entries"] if r["principal"]["name"] == "edit-operator"]
    assert granted and all(r["reason"] == "edit" and "?" not in r["target"]["name"]
                           for r in granted)


def _proxied(manager: Api, cluster: str) -> requests.Response:
    return manager.get(f"/v1/cluster/{cluster}/kube/api/v1/namespaces", timeout=10)


def test_killing_edge_sync_answers_503_and_its_restart_brings_the_tunnel_back(
        edge: Edge, edge_stack: Stack, cluster: dict[str, Any]) -> None:
    manager = Api(edge_stack.manager.url, ("admin", ADMIN_PASSWORD))
    assert _proxied(manager, cluster["uuid"]).status_code == 200
    key = next(k for k, image in edge.kubelet.images.items() if image == "edge-sync")
    process = edge.kubelet.processes[key][1]
    assert process.proc is not None
    edge.kubelet.held.add("edge-sync")  # not restarted until released
    os.killpg(process.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    seen: list[int] = []

    def refused() -> list[requests.Response]:  # a Response is falsy when it is a 503
        answer = _proxied(manager, cluster["uuid"])
        seen.append(answer.status_code)
        return [answer] if answer.status_code == 503 else []

    try:
        gone = wait_for(refused, timeout=10, what="503 after Edge Sync was killed")[0]
    except AssertionError:
        tunnel = manager.get(f"/v1/cluster/{cluster['uuid']}").json().get("tunnel")
        raise AssertionError(f"answers {seen[:3]}…{seen[-3:]}, tunnel {tunnel}, Edge Sync "
                             f"{'alive' if process.running() else 'dead'}") from None
    assert time.monotonic() - killed <= 10
    assert cluster["uuid"] in gone.json()["error"] and "away since" in gone.json()["error"]
    assert manager.get(f"/v1/cluster/{cluster['uuid']}").json()["tunnel"]["state"] == "down"

    edge.kubelet.release("edge-sync")
    wait_for(lambda: key in edge.kubelet.processes and edge.kubelet.processes[key][1].running(),
             timeout=30, what="the kubelet to start Edge Sync again")
    restarted = time.monotonic()
    wait_for(lambda: _proxied(manager, cluster["uuid"]).status_code == 200, timeout=10,
             what="the tunnel back after Edge Sync's restart")
    assert time.monotonic() - restarted <= 10
