"""The local kube-apiserver as the tunnel reaches it: Edge Sync's own address, TLS and
credentials, taken from the Kubernetes client Edge Sync already has.

In a Pod that client is configured in-cluster: ``KUBERNETES_SERVICE_HOST``/``PORT``, the
service account's CA, and its token file, which the client re-reads every minute (the
kubelet rotates it); :meth:`ApiServer.authorization` asks the client each time, so a rotated
token is used as soon as the client has it. From a kubeconfig, its client certificate,
token or exec plugin are used the same way.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import urllib3
from kubernetes import client

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
    _pool: urllib3.HTTPConnectionPool | None = field(default=None, repr=False)
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

    def pool(self) -> urllib3.HTTPConnectionPool:
        """Kept connections to the API server for plain requests (made at first use)."""
        with self._lock:
            if self._pool is None:
                timeout = urllib3.Timeout(connect=self.connect_timeout, read=None)
                if self.scheme == "https":
                    self._pool = urllib3.HTTPSConnectionPool(
                        self.host, self.port, maxsize=POOL_SIZE, block=False, retries=False,
                        timeout=timeout, ssl_context=self.ssl_context,
                        server_hostname=self.server_hostname)
                else:
                    self._pool = urllib3.HTTPConnectionPool(
                        self.host, self.port, maxsize=POOL_SIZE, block=False, retries=False,
                        timeout=timeout)
            return self._pool

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
        """Release the kept connections."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
