"""The local kube-apiserver as the tunnel reaches it: Edge Sync's own address, TLS and
credentials, taken from the Kubernetes client Edge Sync already has.

In a Pod that client is configured in-cluster: ``KUBERNETES_SERVICE_HOST``/``PORT``, the
service account's CA, and its token file, which the client re-reads every minute (the
kubelet rotates it); :meth:`ApiServer.authorization` asks the client each time, so a rotated
token is used as soon as the client has it. From a kubeconfig, its client certificate,
token or exec plugin are used the same way.

Plain requests go over kept HTTP/1.1 connections (:class:`Kept`, spoken with h11: less than
half the CPU urllib3 and ``http.client`` spend on one request and its answer), at most
:data:`POOL_SIZE` of them idle.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import h11
from kubernetes import client
from urllib3.util.wait import wait_for_read

from fplus.tunnel.wire import KubeRequest

Headers = list[tuple[str, str]]

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_PRINCIPAL = "Impersonate-Extra-fplus-principal"
USER_PREFIX = "fplus:"
"""The fixed users Edge Sync may impersonate: ``fplus:view``, ``fplus:edit``, ``fplus:admin``."""
PCHAR_SAFE = "!$&'()*+,;=:@"
"""Besides RFC 3986's unreserved characters, what a principal keeps unescaped in its
impersonated extra: the rest of a path segment's ``pchar`` (so ``alice@example.com`` reads
as it is, and a space, ``%``, ``/`` or a non-ASCII letter is percent-encoded as UTF-8)."""
CONNECT_TIMEOUT = 10.0
POOL_SIZE = 16
"""The most idle connections kept (more are opened when more requests run at once)."""
MAX_HEAD = 64 * 1024
"""The largest response head accepted from the API server."""
READ = 64 * 1024
"""The most bytes read from the API server at once."""
LOOK_AFTER = 1.0
"""Seconds idle after which a kept connection is looked at (has the server closed it?)
before it is used again. One used more lately is taken as it is for a request that may be
sent twice (:mod:`.forward` sends it again on a new connection if the server had closed
the kept one): the look is a system call, a greenlet switch under gevent."""


def principal_value(principal: str) -> str:
    """The ``Impersonate-Extra-fplus-principal`` value: ``principal`` percent-encoded."""
    return quote(principal, safe=PCHAR_SAFE)


@dataclass
class ApiServer:
    """Where the kube-apiserver is and how Edge Sync authenticates to it."""

    scheme: str
    host: str
    port: int
    base_path: str
    """A path prefix the kubeconfig's server URL names (usually empty)."""
    ssl_context: ssl.SSLContext | None
    server_hostname: str | None
    """The name the certificate must carry, when not the host's."""
    authorization: Callable[[], str | None]
    """The ``Authorization`` value (``Bearer <token>``), None for a client certificate."""
    connect_timeout: float = CONNECT_TIMEOUT
    _idle: list[Kept] = field(default_factory=list, repr=False)
    _closed: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_configuration(cls, cfg: client.Configuration) -> ApiServer:
        """The API server of a Kubernetes client configuration (in-cluster or kubeconfig)."""
        parts = urlsplit(str(cfg.host))
        secure = parts.scheme != "http"
        context = None
        if secure:
            context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
            if not cfg.verify_ssl or cfg.assert_hostname is False:
                context.check_hostname = False
            if not cfg.verify_ssl:
                context.verify_mode = ssl.CERT_NONE
            if cfg.cert_file:
                context.load_cert_chain(cfg.cert_file, cfg.key_file or None)
            context.set_alpn_protocols(["http/1.1"])  # an upgrade needs HTTP/1.1
        name = getattr(cfg, "tls_server_name", None) or (
            cfg.assert_hostname if isinstance(cfg.assert_hostname, str) else None)

        def authorization() -> str | None:
            value = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
            if value and value[:7].lower() == "bearer ":
                return "Bearer " + value[7:].strip()
            return value or None

        return cls("https" if secure else "http", parts.hostname or "localhost",
                   parts.port or (443 if secure else 80), parts.path.rstrip("/"), context,
                   name or None, authorization)

    @property
    def authority(self) -> str:
        """The ``Host`` header's value."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def target(self, request: KubeRequest) -> str:
        """The request target on the API server (its path prefix, then the request's)."""
        return self.base_path + request.path

    def headers_for(self, request: KubeRequest) -> Headers:
        """What goes to the API server: the client's end-to-end headers (the wire already
        dropped its credentials, impersonation and hop-by-hop headers), Edge Sync's own
        ``Authorization`` and the impersonation of ``fplus:<level>`` with the principal."""
        out = list(request.headers)
        authorization = self.authorization()
        if authorization:
            out.append(("Authorization", authorization))
        out += [(IMPERSONATE_USER, USER_PREFIX + request.level),
                (IMPERSONATE_PRINCIPAL, principal_value(request.principal))]
        return out

    def connection(self, *, new: bool = False, look: bool = True) -> Kept:
        """A connection for a plain request: the idle one used last, unless the server
        closed it, or (none, or ``new``) a new one. ``look``: always look whether the
        server closed it (else only one idle for :data:`LOOK_AFTER` s). Raises
        ``OSError`` (``ssl.SSLError`` included)."""
        while not new:
            with self._lock:
                kept = self._idle.pop() if self._idle else None
            if kept is None:
                break
            fresh = not look and time.monotonic() - kept.idle_since < LOOK_AFTER
            if fresh or kept.usable():
                kept.reused = True
                return kept
            kept.close()
        sock = self.open_socket()
        sock.settimeout(None)  # a watch may be quiet for long
        return Kept(sock, h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD))

    def keep(self, kept: Kept) -> None:
        """Take back a connection whose answer was read whole (others are closed)."""
        if kept.conn.our_state is h11.DONE and kept.conn.their_state is h11.DONE:
            kept.conn.start_next_cycle()
            kept.idle_since = time.monotonic()
            with self._lock:
                if not self._closed and len(self._idle) < POOL_SIZE:
                    self._idle.append(kept)
                    return
        kept.close()

    def open_socket(self) -> socket.socket:
        """A new connection of its own (TLS when the server speaks it), for an upgrade.
        Raises ``OSError`` (``ssl.SSLError`` included)."""
        sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # keystrokes go at once
        if self.ssl_context is None:
            return sock
        try:
            return self.ssl_context.wrap_socket(
                sock, server_hostname=self.server_hostname or self.host)
        except BaseException:
            sock.close()
            raise

    def close(self) -> None:
        """Release the kept connections (and keep none after: the tunnel is closing)."""
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for kept in idle:
            kept.close()


@dataclass
class Kept:
    """One HTTP/1.1 connection to the API server and its h11 state."""

    sock: socket.socket
    conn: h11.Connection
    reused: bool = False
    """Whether it carried an answer before this request."""
    idle_since: float = 0.0

    def usable(self) -> bool:
        """Whether an idle connection can carry another request: nothing, not even its
        end, arrived since its last answer (a server closing it idle is seen before a
        request is lost on it)."""
        try:
            return not wait_for_read(self.sock, timeout=0.0)
        except OSError:
            return False

    def send(self, event: h11.Event) -> None:
        """Send one h11 event (``h11.LocalProtocolError`` for a request h11 refuses)."""
        data = self.conn.send(event)
        if data:
            self.sock.sendall(data)

    def next_event(self) -> object:
        """The next h11 event of the answer, reading as needed (``h11.RemoteProtocolError``
        when it breaks off or is not HTTP/1.1)."""
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.conn.receive_data(self.sock.recv(READ))

    def shutdown(self) -> None:
        """Shut the connection both ways, waking a thread reading it (the socket's own
        ``shutdown``: a TLS socket's would drop its TLS state under the reader)."""
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def close(self) -> None:
        self.shutdown()
        with contextlib.suppress(OSError):
            self.sock.close()
