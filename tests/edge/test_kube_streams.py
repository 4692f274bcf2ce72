"""``kubectl logs``, ``logs -f``, ``exec`` and ``port-forward`` on a Pod of the real edge.

The Pod is kwok's: kwok stands in for a kubelet's streams (``harness.realedge.streams``):
its logs are a file the test writes, exec runs the command on this host, port-forward
reaches a loopback server the test runs. Everything from kubectl to the kubelet API is
real: the pinned kubectl, the API server's authentication and RBAC on ``pods/log``,
``pods/exec`` and ``pods/portforward``, its upgrade of the request (WebSocket from kubectl,
SPDY to the kubelet) and its TLS connection to the node's kubelet endpoint. The tunnel
tests use the same helpers through the Cluster Manager's kubeconfig.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.realedge import Edge
from harness.realedge.controlplane import kubeconfig
from harness.realedge.streams import (
    READ_TWO_LINES,
    TRANSPORTS,
    EchoServer,
    PodStreams,
    echo_server,
    follow_logs,
    pod_streams,
    port_forward,
    start_pod,
)
from harness.stack import wait_for

NAMESPACE = "line-streams"
POD = "press-0"


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> dict[str, str]:
    """kubectl's environment choosing WebSocket or SPDY."""
    env: dict[str, str] = TRANSPORTS[request.param]
    return env


@pytest.fixture(scope="module")
def served(edge: Edge, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[PodStreams, EchoServer]]:
    """A Running kwok Pod whose logs are a file, exec runs here and port 8080 echoes."""
    scratch = tmp_path_factory.mktemp("streams")
    pod = start_pod(edge, NAMESPACE, POD)
    assert pod["status"]["phase"] == "Running"
    with echo_server() as echo, pod_streams(
            edge, NAMESPACE, POD, log_file=scratch / "press-0.log", target_port=echo.port,
            workdir=scratch, env={"LINE": "line-7"}) as streams:
        yield streams, echo


def test_logs_show_the_container_log(edge: Edge,
                                     served: tuple[PodStreams, EchoServer]) -> None:
    streams, _ = served
    streams.log("started", "cycle 1")
    streams.log("a warning", stream="stderr")
    shown = edge.plane.kubectl("logs", "-n", NAMESPACE, POD).stdout
    assert shown.splitlines()[-3:] == ["started", "cycle 1", "a warning"]
    tail = edge.plane.kubectl("logs", "-n", NAMESPACE, f"pod/{POD}", "--tail=1").stdout
    assert tail == "a warning\n"


def test_logs_follow_shows_a_line_written_later(
        edge: Edge, served: tuple[PodStreams, EchoServer]) -> None:
    streams, _ = served
    streams.log("before following")
    with follow_logs(edge.kubeconfig, NAMESPACE, POD) as following:
        following.wait_line("^before following$")
        streams.log("written while following")
        following.wait_line("^written while following$", timeout=15)
        assert following.proc.poll() is None  # still following


def test_exec_runs_a_command_with_its_output_and_input(
        edge: Edge, served: tuple[PodStreams, EchoServer], transport: dict[str, str]) -> None:
    streams, _ = served
    said = edge.plane.kubectl("exec", "-n", NAMESPACE, POD, "--", "echo", "hi", env=transport)
    assert said.stdout == "hi\n"
    piped = edge.plane.kubectl("exec", "-i", "-n", NAMESPACE, POD, "--", *READ_TWO_LINES,
                               stdin="line one\nline two\n", timeout=30, env=transport)
    assert piped.stdout == "line one\nline two\n"
    where = edge.plane.kubectl("exec", "-n", NAMESPACE, POD, "-c", "app", "--",
                               "sh", "-c", 'pwd; echo "$LINE" >&2; exit 3', check=False,
                               env=transport)
    assert where.stdout == f"{streams.log_file.parent}\n"
    assert where.stderr.startswith("line-7\n"), where.stderr
    # a failing command fails kubectl; kwok reports its exit status as an error message
    # (not as a kubelet's NonZeroExitCode, from which kubectl would exit 3)
    assert where.returncode != 0 and "exit status 3" in where.stderr, where.stderr


def test_port_forward_reaches_the_pods_port_and_back(
        edge: Edge, served: tuple[PodStreams, EchoServer], transport: dict[str, str]) -> None:
    _, echo = served
    with port_forward(edge.kubeconfig, NAMESPACE, POD, 8080, env=transport) as local:
        for n in range(2):  # two connections over the one forward
            with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
                message = f"ping {n}\n".encode() * 1000
                conn.sendall(message)
                back = b""
                while len(back) < len(message):
                    back += conn.recv(65536)
                assert back == message
    assert [bytes(r) for r in echo.received[-2:]] == [f"ping {n}\n".encode() * 1000
                                                      for n in range(2)]


def test_a_view_kubeconfig_reads_logs_but_may_not_exec(
        edge: Edge, served: tuple[PodStreams, EchoServer], tmp_path: Path) -> None:
    streams, _ = served
    plane = edge.plane
    plane.kubectl("-n", NAMESPACE, "create", "serviceaccount", "viewer")
    plane.kubectl("-n", NAMESPACE, "create", "rolebinding", "viewer", "--clusterrole=view",
                  f"--serviceaccount={NAMESPACE}:viewer")
    token = plane.kubectl("-n", NAMESPACE, "create", "token", "viewer").stdout.strip()
    viewer = tmp_path / "viewer.kubeconfig"
    viewer.write_text(kubeconfig(plane.url, plane.pki.ca_crt, token=token,
                                 namespace=NAMESPACE))
    streams.log("seen by a viewer")
    with follow_logs(viewer, NAMESPACE, POD) as following:
        following.wait_line("^seen by a viewer$")
    denied = plane.kubectl("exec", POD, "--", "echo", "hi", kubeconfig_path=viewer,
                           check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr, denied.stderr


def test_streams_for_every_pod_of_a_namespace_and_none_once_deleted(
        edge: Edge, served: tuple[PodStreams, EchoServer], tmp_path: Path) -> None:
    start_pod(edge, NAMESPACE, "press-1", node="edge-worker-1")
    with pod_streams(edge, NAMESPACE, log_file=tmp_path / "all.log") as every:
        every.log("from the namespace's log")
        assert edge.plane.kubectl("logs", "-n", NAMESPACE, "press-1").stdout == (
            "from the namespace's log\n")
        assert edge.plane.kubectl("exec", "-n", NAMESPACE, "press-1", "--",
                                  "echo", "ok").stdout == "ok\n"
    # press-0 keeps its own; press-1 has none once the namespace's objects are gone
    gone = wait_for(lambda: (done := edge.plane.kubectl("logs", "-n", NAMESPACE, "press-1",
                                                         check=False)).returncode and done,
                    timeout=15, what="kwok to drop the namespace's ClusterLogs")
    assert "no logs found" in gone.stderr, gone.stderr
    assert edge.plane.kubectl("exec", "-n", NAMESPACE, POD, "--", "true").returncode == 0
