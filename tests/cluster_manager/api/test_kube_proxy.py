"""The Kubernetes API proxy over edge tunnels, on real processes
(:mod:`tests.cluster_manager.api.kube_proxy_stack`: two Cluster Manager replicas on one SQLite
database, and a stand-in edge answering as a kube-apiserver would): who may open a tunnel and
reach its API, what reaches the edge and comes back, the audit, upgrades, an edge away and
back, a request relayed through the other replica.

The replicas run with the default bounds but one: ``--tunnel-stream-bytes-per-second 20000``
paces the answers (the bounds module's 2 s idle and 4 s session bounds leave no room for an
answer long enough to measure, and a paced flood could never fill a stalled client's buffers).
The small answers of the other tests lose a few milliseconds to it. The last test kills replica
A (which holds the edges), so it stays last. The other bounds: ``test_kube_proxy_bounds.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import signal
import threading
import time
from collections.abc import Callable

import pytest
import requests
import websocket

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, ServiceProcess
from harness.stack import wait_for
from tests.cluster_manager.api.kube_proxy_stack import (  # noqa: F401  (fixtures among them)
    Site,
    User,
    audit_rows,
    commissioned,
    connected,
    kube,
    kube_a,
    kube_a_edge,
    kube_a_viewer,
    new_user,
    replica_a,
    replica_b,
    stack_replicas,
    tunnel_state,
)
from tests.cluster_manager.ha.replicas import Replicas
from tests.cluster_manager.tunnel_edge import (
    WS_GUID,
    StandInEdge,
    echoed,
    open_tunnel,
    raw_upgrade,
    sized_body,
    store_token,
)

pytestmark = pytest.mark.timeout(120)
RATE = 20000
SETTINGS = ("--tunnel-stream-bytes-per-second", str(RATE))


# -- 1. no tunnel -------------------------------------------------------------------------------
def test_a_cluster_whose_edge_never_connected_answers_503_naming_it(
        replicas: Replicas, a: ServiceProcess, sites: dict[str, Site],
        user: Callable[..., User]) -> None:
    away = sites["kube-b"]
    caller = user((uuids.EdgePerm.KubeAdmin, uuids.NULL))
    r = caller.a.get(kube(away.uuid, "api/v1/namespaces"))
    assert r.status_code == 503, r.text
    assert away.uuid in r.json()["error"] and "never connected" in r.json()["error"]
    assert r.headers["Retry-After"]
    assert tunnel_state(replicas.root(a), away.uuid) == {"state": "down", "since": None}


# -- 2. only the cluster's own Edge Sync --------------------------------------------------------
def test_only_the_clusters_own_edge_sync_may_open_its_tunnel(
        replicas: Replicas, a: ServiceProcess, sites: dict[str, Site]) -> None:
    target, other = sites["kube-a"], sites["kube-b"]
    admin = store_token(replicas.stack.store.url, "admin", ADMIN_PASSWORD)
    for token in (admin, other.token):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            open_tunnel(a.url, target.uuid, token)
        assert refused.value.status_code == 403
    assert tunnel_state(replicas.root(a), target.uuid) == {"state": "down", "since": None}


# -- 3. connected: what reaches the edge, what comes back ---------------------------------------
def test_a_request_reaches_the_edge_at_the_callers_level_without_its_credentials(
        replicas: Replicas, a: ServiceProcess, site: Site, edge: StandInEdge,
        viewer: User) -> None:
    assert connected(replicas.root(a), site.uuid)["since"]
    edge.drain()
    path = "api/v1/namespaces?labelSelector=app%3Dweb&limit=5"
    r = viewer.a.get(kube(site.uuid, path), headers={
        "Impersonate-Group": "system:masters", "Impersonate-User": "admin",
        "X-Fplus-Level": "admin", "X-Fplus-Principal": "admin", "Accept": "application/json",
        "X-Edge-Status": "203"})
    assert r.status_code == 203, r.text
    assert r.headers["X-Edge"] == "echo" and r.headers["Content-Type"] == "application/json"
    seen = edge.next()
    assert seen.request.method == "GET"
    assert seen.request.path == "/api/v1/namespaces?labelSelector=app%3Dweb&limit=5"
    assert (seen.request.level, seen.request.principal) == ("view", viewer.name)
    names = [k for k, _ in seen.raw]
    assert not [n for n in names if n in ("authorization", "cookie", "host")
                or n.startswith("impersonate-")], names
    assert [v for k, v in seen.raw if k.startswith("x-fplus-")] == ["view", viewer.name]
    assert dict(seen.request.headers)["accept"] == "application/json"
    assert r.json()["path"] == seen.request.path and r.json()["level"] == "view"


def test_the_path_reaches_the_edge_as_sent(site: Site, edge: StandInEdge, viewer: User) -> None:
    path = "api/v1/namespaces/default/configmaps/a%2Fb%20c?fieldSelector=a%3Db"
    r = viewer.a.get(kube(site.uuid, path))
    assert r.status_code == 200, r.text
    assert r.json()["path"] == f"/{path}"  # %2F is no separator (decoded, it would be one)


def test_a_streamed_answer_arrives_chunk_by_chunk(
        site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.gate.clear()
    with viewer.a.get(kube(site.uuid, "stream/api/v1/pods?watch=true"), stream=True) as r:
        assert r.status_code == 200
        chunks = r.iter_content(chunk_size=None)
        first = next(chunks)
        assert json.loads(first) == {"type": "ADDED", "n": 1}
        assert not edge.gate.is_set()  # the edge has not ended: it waits for the gate
        edge.gate.set()
        rest = b"".join(chunks)
    assert json.loads(rest) == {"type": "ADDED", "n": 2}


def test_a_post_body_arrives(site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    body = {"kind": "ConfigMap", "metadata": {"name": "x"}}
    r = viewer.a.post(kube(site.uuid, "api/v1/namespaces/default/configmaps"), json=body)
    assert r.status_code == 200, r.text
    seen = edge.next()
    assert seen.request.method == "POST" and json.loads(seen.body) == body
    assert json.loads(r.json()["body"]) == body


def test_the_highest_grant_sets_the_level(
        site: Site, edge: StandInEdge, user: Callable[..., User]) -> None:
    edit = user((uuids.EdgePerm.KubeView, site.uuid), (uuids.EdgePerm.KubeEdit, site.uuid))
    admin = user((uuids.EdgePerm.KubeView, site.uuid), (uuids.EdgePerm.KubeAdmin, uuids.NULL))
    for caller, level in ((edit, "edit"), (admin, "admin")):
        r = caller.a.delete(kube(site.uuid, "api/v1/namespaces/default/configmaps/x"))
        assert r.status_code == 200, r.text
        assert (r.json()["level"], r.json()["principal"]) == (level, caller.name)


# -- 4. no grant, and the audit -----------------------------------------------------------------
def test_no_grant_is_403_forwards_nothing_and_is_audited(
        replicas: Replicas, a: ServiceProcess, site: Site, edge: StandInEdge,
        user: Callable[..., User], viewer: User) -> None:
    nobody = user((uuids.EdgePerm.Clusters, site.uuid))  # may see the cluster, not its API
    edge.drain()
    r = nobody.a.get(kube(site.uuid, "api/v1/secrets?secret=query"))
    assert r.status_code == 403, r.text
    time.sleep(0.3)
    assert edge.drain() == []
    root = replicas.root(a)
    [row] = audit_rows(root, site.uuid, nobody.name)
    assert (row["action"], row["reason"], row["status"], row["outcome"]) == \
        ("kube.get", "none", 403, "refused")
    assert row["target"]["name"] == "/api/v1/secrets"
    assert (row["principal"]["name"], row["cluster"]) == (nobody.name, site.uuid)

    r = viewer.a.get(kube(site.uuid, "api/v1/pods?watch=true&fieldSelector=secret"))
    assert r.status_code == 200, r.text
    rows = audit_rows(root, site.uuid, viewer.name)
    assert (rows[0]["action"], rows[0]["reason"], rows[0]["status"]) == ("kube.watch", "view",
                                                                         200)
    assert all("?" not in row["target"]["name"] and "secret" not in json.dumps(row)
               for row in rows), rows


# -- 5. upgrades --------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["SPDY/3.1", "websocket"])
def test_an_upgrade_switches_and_carries_bytes_both_ways(
        replicas: Replicas, a: ServiceProcess, site: Site, edge: StandInEdge, viewer: User,
        protocol: str) -> None:
    edge.drain()
    path = kube(site.uuid, "api/v1/namespaces/default/pods/p/exec?command=sh&stdin=true")
    extra = {"Upgrade": protocol, "X-Stream-Protocol-Version": "v4.channel.k8s.io",
             "Impersonate-User": "system:admin"}
    key = base64.b64encode(b"0123456789abcdef").decode()
    if protocol == "websocket":
        extra |= {"Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
    sock, line, headers, rest = raw_upgrade(a.url, viewer.auth, path, extra)
    with sock:
        assert line.startswith("HTTP/1.1 101"), (line, headers)
        assert headers["upgrade"] == protocol and headers["connection"].lower() == "upgrade"
        assert headers["x-stream-protocol-version"] == "v4.channel.k8s.io"
        assert headers["x-edge"] == "101"
        if protocol == "websocket":
            accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
            assert headers["sec-websocket-accept"] == accept
        seen = edge.next()
        assert seen.request.upgrade == protocol and seen.request.level == "view"
        assert seen.request.path.endswith("/pods/p/exec?command=sh&stdin=true")
        assert not [k for k, _ in seen.raw if k.startswith("impersonate-")]
        assert echoed(sock, b"hello", rest) == b"echo:hello"
        assert echoed(sock, b"again") == b"echo:again"
    rows = audit_rows(replicas.root(a), site.uuid, viewer.name)
    assert rows[0]["action"] == "kube.exec" and rows[0]["status"] == 101


# -- 6. the edge going away and coming back -----------------------------------------------------
def test_an_edge_going_away_gives_503_within_10_s_and_coming_back_serves_again(
        replicas: Replicas, a: ServiceProcess, sites: dict[str, Site],
        user: Callable[..., User]) -> None:
    away = sites["kube-b"]
    caller = user((uuids.EdgePerm.KubeView, away.uuid))
    root = replicas.root(a)
    edge = StandInEdge(a.url, away.uuid, away.token)
    try:
        connected(root, away.uuid)
        assert caller.a.get(kube(away.uuid, "api/v1/nodes")).status_code == 200
        edge.drop()
        dropped = time.monotonic()
        [r] = wait_for(lambda: [x for x in [caller.a.get(kube(away.uuid, "api/v1/nodes"))]
                                if x.status_code == 503], 10, "503 after the edge went")
        assert time.monotonic() - dropped < 10
        assert away.uuid in r.json()["error"] and "away since" in r.json()["error"]
        state = tunnel_state(root, away.uuid)
        assert state["state"] == "down" and state["since"]
    finally:
        edge.drop()
    edge = StandInEdge(a.url, away.uuid, away.token)
    try:
        assert connected(root, away.uuid)["since"]
        r = caller.a.get(kube(away.uuid, "api/v1/nodes"))
        assert r.status_code == 200 and r.json()["principal"] == caller.name
        newer = StandInEdge(a.url, away.uuid, away.token)  # back before its old one is seen gone
        try:
            assert edge.mux.closed.wait(5)  # the newest connection wins
            assert caller.a.get(kube(away.uuid, "api/v1/nodes")).status_code == 200
            assert newer.next().request.path == "/api/v1/nodes"
            assert tunnel_state(root, away.uuid)["state"] == "connected"
        finally:
            newer.drop()
    finally:
        edge.drop()


# -- 7. the pace of an answer -------------------------------------------------------------------
@pytest.mark.parametrize(("replica", "pause", "size"), [
    pytest.param("a", 1, 100_000, id="streamed"),
    pytest.param("b", 1, 40_000, id="streamed-relayed"),
    pytest.param("a", 0, 40_000, id="sent-whole")])
def test_an_answer_moves_no_faster_than_the_bytes_per_second_setting(
        a: ServiceProcess, b: ServiceProcess, site: Site, edge: StandInEdge, viewer: User,
        replica: str, pause: float, size: int) -> None:
    """``--tunnel-stream-bytes-per-second``: an answer arrives whole and no faster than the
    setting allows (a lower bound with a margin, never an upper bound on the speed): one
    still coming when its head is read (a ``logs -f``), relayed too (the replica serving the
    client paces it; the edge's pause of 1 s keeps it from being whole when its head is
    read), and one the edge sent at once (a large ``get``)."""
    edge.drain()
    api = viewer.a if replica == "a" else viewer.b
    started = time.monotonic()
    r = api.get(kube(site.uuid, f"sized/api/v1/namespaces/d/pods/p/log?size={size}&pause={pause}"),
                timeout=30)
    elapsed = time.monotonic() - started
    assert r.status_code == 200, r.text
    assert r.content == sized_body(size)
    assert elapsed >= 0.8 * size / RATE, elapsed  # unpaced, it would take milliseconds
    edge.drain()


# -- 8. a request relayed (it kills replica A: last) --------------------------------------------
def test_a_request_to_another_replica_is_relayed_and_503_once_the_holder_dies(
        replicas: Replicas, a: ServiceProcess, b: ServiceProcess, site: Site,
        edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    assert tunnel_state(replicas.root(b), site.uuid)["state"] == "connected"
    r = viewer.b.get(kube(site.uuid, "api/v1/namespaces?limit=1"),
                     headers={"Impersonate-User": "admin"})
    assert r.status_code == 200, r.text
    seen = edge.next()
    assert (seen.request.path, seen.request.level, seen.request.principal) == \
        ("/api/v1/namespaces?limit=1", "view", viewer.name)
    assert not [k for k, _ in seen.raw if k.startswith(("impersonate-", "x-fplus-relay"))]
    post = viewer.b.post(kube(site.uuid, "api/v1/namespaces"), json={"relayed": True})
    assert post.status_code == 200 and json.loads(post.json()["body"]) == {"relayed": True}
    edge.gate.clear()
    with viewer.b.get(kube(site.uuid, "stream/api/v1/pods?watch=1"), stream=True) as r:
        chunks = r.iter_content(chunk_size=None)
        assert json.loads(next(chunks))["n"] == 1
        edge.gate.set()
        assert json.loads(b"".join(chunks))["n"] == 2

    sock, line, headers, rest = raw_upgrade(  # an exec's upgrade, relayed
        b.url, viewer.auth, kube(site.uuid, "api/v1/namespaces/d/pods/p/exec?command=ls"),
        {"Upgrade": "SPDY/3.1"})
    with sock:
        assert line.startswith("HTTP/1.1 101") and headers["upgrade"] == "SPDY/3.1", line
        assert echoed(sock, b"relayed", rest) == b"echo:relayed"

    edge.drain()
    held: list[requests.Response] = []
    holding = threading.Thread(target=lambda: held.append(
        viewer.b.get(kube(site.uuid, "hang/api/v1/pods"))))
    holding.start()
    edge.next()
    a.stop(signal.SIGKILL)  # the replica holding the tunnel dies under a relayed request
    killed = time.monotonic()
    holding.join(10)
    [r] = held
    assert r.status_code == 503, r.text
    assert site.uuid in r.json()["error"], r.text
    assert time.monotonic() - killed < 10
    assert tunnel_state(replicas.root(b), site.uuid)["state"] == "down"
    r = viewer.b.get(kube(site.uuid, "api/v1/namespaces"))
    assert r.status_code == 503 and "away since" in r.json()["error"], r.text
