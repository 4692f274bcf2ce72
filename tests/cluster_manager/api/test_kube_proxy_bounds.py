"""Each bound on what crosses an edge tunnel, on real processes
(:mod:`tests.cluster_manager.api.kube_proxy_stack`: two Cluster Manager replicas on one SQLite
database, and a stand-in edge answering as a kube-apiserver would), each refusal naming its
setting: requests open at once per principal and per cluster (429), a request body's size
(413), idle and total time (408, or the answer cut), and a client that stops reading.

The replicas run with small bounds so each is reached quickly: three requests per cluster, two
per principal, 1000-byte bodies, 2 s idle, 4 s per request. The bytes per second of an answer:
``test_kube_proxy.py`` (an answer paced long enough to measure would outlive these).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import pytest
import requests

from fplus.config_store import uuids
from harness.servers import ServiceProcess
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
    refused,
    replica_a,
    replica_b,
    stack_replicas,
)
from tests.cluster_manager.ha.replicas import Replicas
from tests.cluster_manager.tunnel_edge import FLOOD_CHUNK, StandInEdge, raw_upgrade

pytestmark = pytest.mark.timeout(120)
SETTINGS = ("--tunnel-max-streams-per-cluster", "3", "--tunnel-max-streams-per-principal", "2",
            "--tunnel-max-body-bytes", "1000", "--tunnel-idle-timeout", "2",
            "--tunnel-max-session-seconds", "4")
PER_CLUSTER = "tunnel-max-streams-per-cluster"


# -- 0. an answer sent whole -------------------------------------------------------------------
def test_an_answer_sent_whole_is_audited_once_it_went(
        replicas: Replicas, a: ServiceProcess, site: Site, edge: StandInEdge,
        user: Callable[..., User]) -> None:
    reader = user((uuids.EdgePerm.KubeView, site.uuid))
    r = reader.a.get(kube(site.uuid, "api/v1/namespaces?limit=1"))
    assert r.status_code == 200 and r.json()["path"] == "/api/v1/namespaces?limit=1", r.text
    assert "chunked" not in r.headers.get("Transfer-Encoding", "")  # sent whole, not streamed
    rows = wait_for(lambda: audit_rows(replicas.root(a), site.uuid, reader.name), 10)
    assert [(x["action"], x["reason"], x["status"], x["target"]["name"]) for x in rows] == [
        ("kube.get", "view", 200, "/api/v1/namespaces")]


# -- 1. requests open at once -------------------------------------------------------------------
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
    refused(r, 429, "tunnel-max-streams-per-principal")
    assert r.headers["Retry-After"]
    refused(busy.b.get(kube(site.uuid, "api/v1/pods")), 429,  # relayed: counted as well
            "tunnel-max-streams-per-principal")
    assert viewer.a.get(kube(site.uuid, "api/v1/pods")).status_code == 200  # another: served
    for thread in threads:
        thread.join(15)
    assert [x.status_code for x in held] == [408, 408], [x.text for x in held]
    for x in held:
        refused(x, 408, "tunnel-idle-timeout")
    assert 1.9 <= time.monotonic() - started < 6
    assert all(s.reset.wait(5) for s in hung)  # the edge's streams were cancelled
    assert busy.a.get(kube(site.uuid, "api/v1/pods")).status_code == 200  # counts released


def test_a_clusters_fourth_request_is_429_until_one_of_its_three_ends(
        replicas: Replicas, a: ServiceProcess, b: ServiceProcess, sites: dict[str, Site],
        user: Callable[..., User]) -> None:
    """Three principals' watches fill kube-b's tunnel (three per cluster; each principal
    holds one of the two it may): a fourth principal is refused, here and relayed through
    replica B (the holder counts relayed requests too), and nothing reaches the edge; once
    one watch's client goes, the fourth is served and the tunnel is full again. kube-b's
    tunnel is this test's own: no count left by kube-a's tests matters."""
    far = sites["kube-b"]
    callers = [user((uuids.EdgePerm.KubeView, far.uuid)) for _ in range(5)]
    watch = kube(far.uuid, "tick/api/v1/pods?watch=true&gap=0.1")
    edge = StandInEdge(a.url, far.uuid, far.token)
    try:
        connected(replicas.root(a), far.uuid)
        connected(replicas.root(b), far.uuid)
        with contextlib.ExitStack() as open_watches:
            held = [open_watches.enter_context(c.a.get(watch, stream=True, timeout=15))
                    for c in callers[:3]]
            assert [r.status_code for r in held] == [200] * 3, [r.text for r in held]
            assert len([edge.next(), edge.next(), edge.next()]) == 3
            fourth = callers[3]
            for api in (fourth.a, fourth.b):
                r = api.get(kube(far.uuid, "api/v1/pods"))
                refused(r, 429, PER_CLUSTER)
                assert r.headers["Retry-After"], r.headers
            assert edge.drain() == []  # refused before anything was sent

            held[0].close()  # its client goes: the count ends at the answer's next write

            def served() -> requests.Response | None:
                r = fourth.a.get(watch, stream=True, timeout=15)
                if r.status_code == 200:
                    return r
                refused(r, 429, PER_CLUSTER)
                r.close()
                return None
            open_watches.enter_context(wait_for(served, 3, "the fourth served"))
            assert edge.next().request.principal == fourth.name
            for api in (callers[4].a, callers[4].b):  # full again
                refused(api.get(kube(far.uuid, "api/v1/pods")), 429, PER_CLUSTER)
    finally:
        edge.drop()


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


# -- 2. a request body's size -------------------------------------------------------------------
def test_a_body_over_the_limit_is_413(site: Site, edge: StandInEdge, viewer: User) -> None:
    edge.drain()
    path = kube(site.uuid, "api/v1/namespaces/default/configmaps")
    r = viewer.a.post(path, data=b"x" * 1001, headers={"Content-Type": "application/json"})
    refused(r, 413, "tunnel-max-body-bytes")
    assert edge.drain() == []  # told by its Content-Length: never sent

    r = viewer.a.post(path, data=iter([b"y" * 600, b"y" * 600]),
                      headers={"Content-Type": "application/json"})
    refused(r, 413, "tunnel-max-body-bytes")
    assert edge.drain() == []  # the chunked body was counted before anything was sent

    r = viewer.a.post(path, data=iter([b"z" * 500, b"z" * 500]))  # chunked, at the limit
    assert r.status_code == 200, r.text
    assert r.json()["body"] == "z" * 1000


# -- 3. time: idle and in all -------------------------------------------------------------------
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


# -- 4. a client that stops reading -------------------------------------------------------------
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
