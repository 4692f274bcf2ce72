"""The Kubernetes API proxy over edge tunnels, on real processes: two Cluster Manager replicas
sharing one SQLite database (with the Config Store and the Git server), and a stand-in edge in
this process (:mod:`tests.cluster_manager.tunnel_edge`: the WebSocket Edge Sync would open,
carrying the HTTP/2 streams it would serve, answered by the test instead of a kube-apiserver).

The replicas run with small bounds (two requests per principal, 1000-byte bodies, 2 s idle,
4 s per request) so each refusal is reached quickly. Replica A (the first) holds the edges;
the last test kills it, so it stays last.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import websocket

from fplus.config_store import uuids
from harness.servers import ADMIN_PASSWORD, Api, ServiceProcess, stop_all
from harness.stack import Stack, create_cluster, status, wait_for
from tests.cluster_manager.ha.replicas import Replicas, start_replicas
from tests.cluster_manager.tunnel_edge import (
    FLOOD_CHUNK,
    WS_GUID,
    StandInEdge,
    echoed,
    edge_password,
    open_tunnel,
    raw_upgrade,
    store_token,
)
from tests.conftest import grant, make_user

pytestmark = pytest.mark.timeout(120)
LIMITS = ("--tunnel-max-streams-per-principal", "2", "--tunnel-max-body-bytes", "1000",
          "--tunnel-idle-timeout", "2", "--tunnel-max-session-seconds", "4")
NAMES = ("kube-a", "kube-b")


@dataclass
class Site:
    """A commissioned cluster and its Edge Sync principal's token."""

    uuid: str
    name: str
    token: str


@dataclass
class User:
    """A principal: its name, its credentials and a session on each replica."""

    name: str
    auth: tuple[str, str]
    a: Api
    b: Api


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    root = tmp_path_factory.mktemp("kube-proxy")
    running = start_replicas(root, f"sqlite:///{root / 'cm.sqlite'}", 2, *LIMITS)
    yield running
    stop_all([*running.replicas, running.stack.git, running.stack.store])  # all at once


@pytest.fixture(scope="module")
def a(replicas: Replicas) -> ServiceProcess:
    return replicas.replicas[0]


@pytest.fixture(scope="module")
def b(replicas: Replicas) -> ServiceProcess:
    return replicas.replicas[1]


@pytest.fixture(scope="module")
def sites(replicas: Replicas) -> dict[str, Site]:
    """Two clusters, commissioned together."""
    stack = replicas.stack
    made = {name: create_cluster(stack.admin, name) for name in NAMES}
    found = {}
    for name, cluster in made.items():
        wait_for(functools.partial(_ready, stack, cluster), 60, f"{name} ready")
        principal, password = edge_password(stack, cluster, name)
        found[name] = Site(cluster, name, store_token(stack.store.url, principal, password))
    return found


def _ready(stack: Stack, cluster: str) -> bool:
    return bool((status(stack.admin, cluster) or {}).get("ready"))


@pytest.fixture(scope="module")
def site(sites: dict[str, Site]) -> Site:
    return sites["kube-a"]


@pytest.fixture(scope="module")
def edge(sites: dict[str, Site], site: Site, a: ServiceProcess) -> Iterator[StandInEdge]:
    """kube-a's edge, connected to replica A."""
    connected = StandInEdge(a.url, site.uuid, site.token)
    yield connected
    connected.drop()


@pytest.fixture(scope="module")
def user(replicas: Replicas, a: ServiceProcess,
         b: ServiceProcess) -> Callable[..., User]:
    """``user((permission, target), ...)``: a new principal holding those grants."""
    def make(*grants: tuple[str, str]) -> User:
        auth = (f"kube-{uuid.uuid4().hex[:10]}", "pw-kube-proxy")
        uid, _ = make_user(replicas.stack.admin, *auth)
        for permission, target in grants:
            grant(replicas.stack.admin, uid, permission, target)
        return User(auth[0], auth, Api(a.url, auth), Api(b.url, auth))
    return make


@pytest.fixture(scope="module")
def viewer(user: Callable[..., User], site: Site) -> User:
    return user((uuids.EdgePerm.KubeView, site.uuid))


def kube(cluster: str, path: str) -> str:
    return f"/v1/cluster/{cluster}/kube/{path.lstrip('/')}"


def tunnel_state(api: Api, cluster: str) -> dict[str, Any]:
    """The tunnel in both status views (which must agree)."""
    r = api.get(f"/v1/cluster/{cluster}")
    assert r.status_code == 200, r.text
    s = api.get(f"/v1/cluster/{cluster}/status")
    assert s.status_code == 200, s.text
    assert r.json()["tunnel"] == s.json()["tunnel"]
    return dict(r.json()["tunnel"])


def audit_rows(root: Api, cluster: str, principal: str) -> list[dict[str, Any]]:
    r = root.get("/v1/audit", params={"cluster": cluster, "principal": principal})
    assert r.status_code == 200, r.text
    return list(r.json()["entries"])


# -- 1. no tunnel ----------------------------------------------------------------------------
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


# -- 2. only the cluster's own Edge Sync -----------------------------------------------------
def test_only_the_clusters_own_edge_sync_may_open_its_tunnel(
        replicas: Replicas, a: ServiceProcess, sites: dict[str, Site]) -> None:
    target, other = sites["kube-a"], sites["kube-b"]
    admin = store_token(replicas.stack.store.url, "admin", ADMIN_PASSWORD)
    for token in (admin, other.token):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            open_tunnel(a.url, target.uuid, token)
        assert refused.value.status_code == 403
    assert tunnel_state(replicas.root(a), target.uuid) == {"state": "down", "since": None}


# -- 3. connected: what reaches the edge, what comes back ------------------------------------
def test_a_request_reaches_the_edge_at_the_callers_level_without_its_credentials(
        replicas: Replicas, a: ServiceProcess, site: Site, edge: StandInEdge,
        viewer: User) -> None:
    state = wait_for(lambda: (s := tunnel_state(replicas.root(a), site.uuid))["state"]
                     == "connected" and s, 10, "the tunnel connected")
    assert state["since"]
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


# -- 4. no grant, and the audit --------------------------------------------------------------
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


# -- 5. bounds -------------------------------------------------------------------------------
def test_a_principals_third_request_is_429_and_unanswered_ones_408(
        site: Site, edge: StandInEdge, user: Callable[..., User], viewer: User) -> None:
    busy = user((uuids.EdgePerm.KubeView, site.uuid))
    edge.drain()
    held: list[requests.Response] = []
    threads = [threading.Thread(target=lambda: held.append(
        busy.a.get(kube(site.uuid, "hang/api/v1/pods")))) for _ in range(2)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    hung = [edge.next(), edge.next()]
    r = busy.a.get(kube(site.uuid, "api/v1/pods"))
    assert r.status_code == 429, r.text
    assert r.json()["setting"] == "tunnel-max-streams-per-principal"
    assert "--tunnel-max-streams-per-principal" in r.json()["error"]
    assert r.headers["Retry-After"]
    assert viewer.a.get(kube(site.uuid, "api/v1/pods")).status_code == 200  # another: served
    for thread in threads:
        thread.join(15)
    assert [x.status_code for x in held] == [408, 408], [x.text for x in held]
    assert all(x.json()["setting"] == "tunnel-idle-timeout"
               and "--tunnel-idle-timeout" in x.json()["error"] for x in held)
    assert 1.9 <= time.monotonic() - started < 6
    assert all(s.reset.wait(5) for s in hung)  # the edge's streams were cancelled
    assert busy.a.get(kube(site.uuid, "api/v1/pods")).status_code == 200  # counts released


def test_answers_never_read_release_their_count(
        site: Site, edge: StandInEdge, user: Callable[..., User]) -> None:
    heads = user((uuids.EdgePerm.KubeView, site.uuid))  # two requests at a time at most
    for _ in range(4):  # a HEAD's answer has no body to iterate
        r = heads.a.head(kube(site.uuid, "api/v1/namespaces"))
        assert r.status_code == 200, r.headers
    for _ in range(2):  # streamed answers the client leaves after their heads
        with heads.a.get(kube(site.uuid, "tick/api/v1/pods?gap=0.05"), stream=True) as r:
            assert r.status_code == 200
    assert wait_for(  # (each released once a write finds its client gone)
        lambda: heads.a.get(kube(site.uuid, "api/v1/pods")).status_code == 200, 5,
        "the counts released")
    edge.drain()


def test_a_body_over_the_limit_is_413(site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    path = kube(site.uuid, "api/v1/namespaces/default/configmaps")
    r = viewer.a.post(path, data=b"x" * 1001, headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert r.json()["setting"] == "tunnel-max-body-bytes"
    assert "--tunnel-max-body-bytes" in r.json()["error"]
    assert edge.drain() == []  # told by its Content-Length: never sent

    r = viewer.a.post(path, data=iter([b"y" * 600, b"y" * 600]),
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert r.json()["setting"] == "tunnel-max-body-bytes"
    assert edge.drain() == []  # the chunked body was counted before anything was sent

    r = viewer.a.post(path, data=iter([b"z" * 500, b"z" * 500]))  # chunked, at the limit
    assert r.status_code == 200, r.text
    assert r.json()["body"] == "z" * 1000


def test_a_streamed_answer_is_cut_after_the_session_limit(
        site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    lines = 0
    started = time.monotonic()
    with viewer.a.get(kube(site.uuid, "tick/api/v1/pods?watch=true&gap=0.2"),
                      stream=True, timeout=15) as r:
        assert r.status_code == 200
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for _ in r.iter_lines():
                lines += 1
    cut = time.monotonic() - started
    assert 3.9 <= cut < 7, cut
    assert lines >= 12  # it flowed until cut (one a 0.2 s)
    assert edge.next().reset.wait(5)


def test_a_client_that_stops_reading_stalls_only_its_own_request(
        site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    with viewer.a.get(kube(site.uuid, "flood/api/v1/pods?follow=true"), stream=True,
                      timeout=15) as r:
        assert r.status_code == 200
        assert len(r.raw.read(FLOOD_CHUNK)) == FLOOD_CHUNK
        flood = edge.next()
        time.sleep(0.5)  # the socket buffers and the stream's window fill: stalled
        started = time.monotonic()
        answered = viewer.a.get(kube(site.uuid, "api/v1/pods"))
        assert answered.status_code == 200 and answered.json()["path"] == "/api/v1/pods"
        assert time.monotonic() - started < 1.5
        assert flood.reset.wait(8)  # idle past its bound: dropped
    edge.drain()


# -- 6. upgrades -----------------------------------------------------------------------------
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


# -- 7. the edge going away and coming back --------------------------------------------------
def test_an_edge_going_away_gives_503_within_10_s_and_coming_back_serves_again(
        replicas: Replicas, a: ServiceProcess, sites: dict[str, Site],
        user: Callable[..., User]) -> None:
    away = sites["kube-b"]
    caller = user((uuids.EdgePerm.KubeView, away.uuid))
    root = replicas.root(a)
    edge = StandInEdge(a.url, away.uuid, away.token)
    try:
        wait_for(lambda: tunnel_state(root, away.uuid)["state"] == "connected", 10,
                 "the tunnel connected")
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
        state = wait_for(lambda: (s := tunnel_state(root, away.uuid))["state"] == "connected"
                         and s, 10, "the tunnel back")
        assert state["since"]
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


# -- 8. two replicas (the last test kills replica A) -----------------------------------------
@pytest.mark.parametrize("replica", ["a", "b"])
def test_an_upgrade_moving_one_way_outlives_the_idle_timeout(
        a: ServiceProcess, b: ServiceProcess, site: Site, edge: StandInEdge, viewer: User,
        replica: str) -> None:
    """Idle means nothing moved either way: a ``logs -f`` or a download through ``port-
    forward`` sends nothing upstream for longer than the idle timeout (2 s), here and
    relayed."""
    edge.drain()
    started = time.monotonic()
    sock, line, _, got = raw_upgrade((a if replica == "a" else b).url, viewer.auth,
                                  kube(site.uuid, "api/v1/namespaces/d/pods/p/attach?ticks=12"),
                                  {"Upgrade": "SPDY/3.1"})
    with sock:
        assert line.startswith("HTTP/1.1 101"), line
        while chunk := sock.recv(4096):
            got += chunk
    assert got.decode().splitlines() == [f"tick {n}" for n in range(12)]
    assert time.monotonic() - started >= 2.3
    edge.drain()


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
