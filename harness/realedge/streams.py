"""``kubectl logs``, ``exec`` and ``port-forward`` on kwok's Pods.

A kubelet serves a Pod's streams from its container: the log file the runtime writes, a
process started in the container, a connection to a port in the Pod's network. kwok's
server (every node's kubelet endpoint on the edge, see ``controlplane``) serves them from
what its cluster-scoped objects say instead: a ClusterLogs names a log file (in the CRI log
format a runtime writes), a ClusterExec runs the command on this host, a
ClusterPortForward connects to a loopback port. The API server, kubectl and everything
between (authentication, RBAC on ``pods/log``, ``pods/exec``, ``pods/portforward``, the
upgrades to WebSocket or SPDY, the API server's connection to the kubelet) are the real
ones. :func:`pod_streams` writes those objects for one Pod (or all Pods of a namespace) and
returns once kwok serves them; :func:`start_pod` starts a Pod for them;
:func:`follow_logs`, :func:`port_forward` and :func:`echo_server` are what a test uses to
reach them with the pinned kubectl through any kubeconfig.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import requests
import websocket

from harness import edgetools
from harness.realedge.controlplane import STREAM_KINDS, ControlPlane

if TYPE_CHECKING:
    from harness.realedge import Edge

GROUP = "kwok.x-k8s.io/v1alpha1"
# Any image: no host process runs it (see ``kubelet.HOST_IMAGES``); kwok marks it Running.
POD_IMAGE = "registry.invalid/fplus/stream-test:1"
CONTAINER = "app"
POD_PORT = 8080  # the Pod's port a ClusterPortForward maps to the test's loopback port
# The Pod port whose forward answers READY (a command, not a connection): how
# :func:`pod_streams` knows kwok serves the ClusterPortForward. No test uses it.
PROBE_PORT = 1
READY = b"kwok-forward-ready\n"


TRANSPORTS = {
    "websocket": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "true",
                  "KUBECTL_PORT_FORWARD_WEBSOCKETS": "true"},
    "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false",
             "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}}
"""kubectl's environment for its two ways to upgrade exec and port-forward (the API server
turns WebSocket into SPDY to the kubelet; kubectl falls back to SPDY only when the upgrade
fails)."""

READ_TWO_LINES = ("sh", "-c", "head -n 2; sleep 1")
"""An exec command that reads two lines of its stdin and prints them. kwok v0.8.0 never
passes on the end of stdin (it copies the stream into the command's stdin and never closes
that), so ``cat`` would wait for ever: the command ends by itself. It lingers a second after
printing: kwok ends the exec session as the command exits, and on a loaded machine the
lines' last frames to the API server could still be queued then (an empty output was seen
over SPDY with a bare ``head``)."""

def _plane(edge: Edge | ControlPlane) -> ControlPlane:
    return edge if isinstance(edge, ControlPlane) else edge.plane


def cri_log_line(text: str, stream: str = "stdout", when: datetime | None = None) -> str:
    """One line as a container runtime writes it (``<RFC 3339 time> <stream> F <text>``)."""
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp} {stream} F {text}\n"


def append_log(path: Path, *lines: str, stream: str = "stdout") -> None:
    """Append ``lines`` to a container log file (what ``kubectl logs`` shows of them)."""
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(cri_log_line(line, stream) for line in lines)


@dataclass
class PodStreams:
    """The ClusterLogs, ClusterExec and ClusterPortForward named ``name`` for a Pod."""

    plane: ControlPlane
    name: str
    namespace: str
    pod: str | None  # None: every Pod of the namespace
    log_file: Path
    target_port: int | None
    pod_port: int

    def log(self, *lines: str, stream: str = "stdout") -> None:
        """Append ``lines`` to the Pod's log (``kubectl logs -f`` shows them as they come)."""
        append_log(self.log_file, *lines, stream=stream)

    def delete(self) -> None:
        """Delete the three objects (kwok stops serving the Pod's streams)."""
        self.plane.kubectl("delete", "--ignore-not-found", "--wait=false",
                           *(f"{plural}.kwok.x-k8s.io/{self.name}"
                             for plural in STREAM_KINDS.values()))

    def __enter__(self) -> PodStreams:
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()


def pod_streams(edge: Edge | ControlPlane, namespace: str, pod: str | None = None, *,
                log_file: Path, target_port: int | None = None, pod_port: int = POD_PORT,
                workdir: Path | None = None, env: Mapping[str, str] | None = None,
                timeout: float = 30.0) -> PodStreams:
    """Give ``pod`` of ``namespace`` (every Pod there when None) streams; wait until kwok
    serves them.

    - logs: the file ``log_file`` (created empty if missing; append with
      :meth:`PodStreams.log`), for every container;
    - exec: kwok runs the command *on this host*, standing in for the container: as kwok's
      user, with kwok's environment plus ``env``, in ``workdir`` (else kwok's), with the
      caller's stdin, stdout and stderr (or a terminal for ``-t``). Unlike a kubelet's,
      kwok v0.8.0's exec never passes on the end of stdin (a command reading to its end,
      like ``cat``, waits until kwok stops: give it one that ends, ``head -n 2``), and it
      reports a non-zero exit as an error naming the status (kubectl exits 1, not with it);
    - port-forward: the Pod's ``pod_port`` connects to ``127.0.0.1:target_port`` (a server
      the test runs; none: no forward but the probe's), and :data:`PROBE_PORT` answers
      :data:`READY`.

    Usable as a context manager that deletes the objects on exit.
    """
    plane = _plane(edge)
    name = f"streams.{namespace}.{pod or 'all'}"
    selector: dict[str, Any] = {"matchNamespaces": [namespace]}
    if pod:
        selector["matchNames"] = [pod]
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.touch()
    local: dict[str, Any] = {"envs": [{"name": k, "value": v} for k, v in (env or {}).items()]}
    if workdir:
        local["workDir"] = str(workdir)
    forwards: list[dict[str, Any]] = [
        {"ports": [PROBE_PORT], "command": ["echo", READY.decode().strip()]}]
    if target_port is not None:
        forwards.append({"ports": [pod_port],
                         "target": {"address": "127.0.0.1", "port": target_port}})
    plane.apply([
        _object("ClusterLogs", name, selector, logs=[{"logsFile": str(log_file)}]),
        _object("ClusterExec", name, selector, execs=[{"local": local}]),
        _object("ClusterPortForward", name, selector, forwards=forwards)])
    streams = PodStreams(plane, name, namespace, pod, log_file, target_port, pod_port)
    wait_served(plane, namespace, pod or "stream-probe", timeout=timeout)
    return streams


def _object(kind: str, name: str, selector: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": GROUP, "kind": kind, "metadata": {"name": name},
            "spec": {"selector": selector, **spec}}


def wait_served(edge: Edge | ControlPlane, namespace: str, pod: str,
                timeout: float = 30.0) -> None:
    """Wait until kwok serves ``pod``'s logs, exec and port-forward (it learns of its
    objects by watching them), asking its kubelet API directly as the API server would."""
    plane = _plane(edge)
    deadline = time.monotonic() + timeout
    probes = {"logs": _probe_logs, "exec": _probe_exec, "port-forward": _probe_forward}
    while True:
        failed = {}
        for what, probe in probes.items():
            try:
                probe(plane, namespace, pod)
            except (OSError, websocket.WebSocketException, AssertionError) as exc:
                failed[what] = f"{type(exc).__name__}: {exc}"
        if not failed:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"kwok does not serve {namespace}/{pod}'s streams: {failed}")
        probes = {what: probes[what] for what in failed}
        time.sleep(0.1)


def _probe_logs(plane: ControlPlane, namespace: str, pod: str) -> None:
    r = requests.get(f"{plane.kubelet_url}/containerLogs/{namespace}/{pod}/{CONTAINER}",
                     verify=str(plane.pki.ca_crt), timeout=5)
    assert r.status_code == 200, f"{r.status_code} {r.text[:200]}"


def _socket(plane: ControlPlane, path: str) -> websocket.WebSocket:
    url = plane.kubelet_url.replace("https://", "wss://", 1) + path
    return websocket.create_connection(url, timeout=5, subprotocols=["v4.channel.k8s.io"],
                                       sslopt={"ca_certs": str(plane.pki.ca_crt)})


def _frames(ws: websocket.WebSocket, until: Callable[[dict[int, bytes]], bool] | None = None
            ) -> dict[int, bytes]:
    """The bytes of each channel (a binary message's first byte) until the server closes
    or ``until`` them; the socket closed."""
    channels: dict[int, bytes] = {}
    try:
        while until is None or not until(channels):
            opcode, data = ws.recv_data()
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                break
            if opcode == websocket.ABNF.OPCODE_BINARY and data:
                channels[data[0]] = channels.get(data[0], b"") + data[1:]
    except websocket.WebSocketConnectionClosedException:
        pass
    finally:
        ws.close()
    return channels


def _probe_exec(plane: ControlPlane, namespace: str, pod: str) -> None:
    # v4: 1 stdout, 2 stderr, 3 the outcome (a Status)
    channels = _frames(_socket(plane, f"/exec/{namespace}/{pod}/{CONTAINER}"
                                      "?command=true&output=1&error=1"))
    status = json.loads(channels.get(3) or "{}")
    assert status.get("status") == "Success", status or channels


def _probe_forward(plane: ControlPlane, namespace: str, pod: str) -> None:
    # per port: channel 0 data, 1 errors, each opening with the port (2 bytes). The
    # command's end does not end the forward (kwok reads on for its stdin): read READY.
    channels = _frames(_socket(plane, f"/portForward/{namespace}/{pod}?port={PROBE_PORT}"),
                       until=lambda c: len(c.get(0, b"")) >= 2 + len(READY)
                       or len(c.get(1, b"")) > 2)
    data, errors = channels.get(0, b"")[2:], channels.get(1, b"")[2:]
    assert data == READY, errors.decode(errors="replace") or data


def start_pod(edge: Edge | ControlPlane, namespace: str, name: str, *,
              node: str | None = None, labels: Mapping[str, str] | None = None,
              ports: tuple[int, ...] = (POD_PORT,), timeout: float = 60.0) -> dict[str, Any]:
    """A bare Pod (one container, :data:`CONTAINER`) in ``namespace`` (created if missing),
    placed by the scheduler on a kwok node (or bound to ``node``); returned once Ready."""
    plane = _plane(edge)
    spec: dict[str, Any] = {
        "containers": [{"name": CONTAINER, "image": POD_IMAGE,
                        "ports": [{"containerPort": p} for p in ports]}],
        "terminationGracePeriodSeconds": 0}
    if node:
        spec["nodeName"] = node
    plane.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                 {"apiVersion": "v1", "kind": "Pod", "spec": spec,
                  "metadata": {"name": name, "namespace": namespace,
                               "labels": {"app": name, **(labels or {})}}}])
    plane.kubectl("wait", "-n", namespace, "--for=condition=Ready", f"--timeout={timeout:.0f}s",
                  f"pod/{name}", timeout=timeout + 30)
    pod: dict[str, Any] = plane.get("-n", namespace, f"pod/{name}")
    return pod


class KubectlStream:
    """A long-running pinned kubectl (``logs -f``, ``port-forward``) with its output lines
    collected as they come; stopped (SIGTERM, then SIGKILL) by :meth:`stop` or on exit."""

    def __init__(self, kubeconfig: Path, *args: str,
                 env: Mapping[str, str] | None = None) -> None:
        self.argv = [str(edgetools.binary("kubectl")), "--kubeconfig", str(kubeconfig), *args]
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **(env or {})})
        self._readers = [threading.Thread(target=self._read, args=(pipe, into), daemon=True)
                         for pipe, into in ((self.proc.stdout, self.lines),
                                            (self.proc.stderr, self.errors))]
        for reader in self._readers:
            reader.start()

    def _read(self, pipe: IO[str] | None, into: list[str]) -> None:
        assert pipe is not None
        for line in pipe:
            with self._changed:
                into.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_line(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """The first output line matching ``pattern`` (a regex), waiting for it to come."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if found := re.search(pattern, line):
                        return found
                left = deadline - time.monotonic()
                ended = not any(r.is_alive() for r in self._readers)
                if left <= 0 or ended:
                    raise AssertionError(
                        f"no line matching {pattern!r} from {' '.join(self.argv[3:])} "
                        f"({'exited' if ended else 'timed out'}): out {self.lines[-5:]}, "
                        f"err {self.errors[-5:]}")
                self._changed.wait(left)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(5)

    def __enter__(self) -> KubectlStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def follow_logs(kubeconfig: Path, namespace: str, pod: str, *args: str,
                env: Mapping[str, str] | None = None) -> KubectlStream:
    """``kubectl logs -f`` of ``pod`` through ``kubeconfig`` (``args``: more options)."""
    return KubectlStream(kubeconfig, "logs", "-f", "-n", namespace, pod, *args, env=env)


@contextmanager
def port_forward(kubeconfig: Path, namespace: str, pod: str, pod_port: int = POD_PORT, *,
                 env: Mapping[str, str] | None = None, timeout: float = 30.0
                 ) -> Iterator[int]:
    """``kubectl port-forward`` from a free loopback port to ``pod``'s ``pod_port`` through
    ``kubeconfig``: the local port, while it runs."""
    with KubectlStream(kubeconfig, "port-forward", "-n", namespace, "--address", "127.0.0.1",
                       f"pod/{pod}", f":{pod_port}", env=env) as forward:
        found = forward.wait_line(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {pod_port}\b",
                                  timeout)
        yield int(found.group(1))


@dataclass
class EchoServer:
    """A loopback TCP server that sends back what it receives; ``received``: every
    connection's bytes so far (in accept order)."""

    port: int
    received: list[bytearray]


@contextmanager
def echo_server() -> Iterator[EchoServer]:
    """An :class:`EchoServer` on a free loopback port, while the block runs."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = EchoServer(listener.getsockname()[1], [])

    def serve(conn: socket.socket, into: bytearray) -> None:
        with conn, contextlib.suppress(OSError):  # a reset ends it too
            while data := conn.recv(65536):
                into += data
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            server.received.append(bytearray())
            threading.Thread(target=serve, args=(conn, server.received[-1]),
                             daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server
    finally:
        listener.close()
