"""An HTTPS front for a plain-HTTP service on loopback, standing in for the TLS ingress a
Cluster Manager runs behind: it ends TLS and passes the bytes on unchanged, both ways, so
upgraded connections (``exec``, ``port-forward``) cross it as they would an ingress.

kubectl sends no credentials to a plain-HTTP server, so the tunnel tests reach the Cluster
Manager's proxy through this.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fplus.serving.http.local_ca import ensure_certificates


@dataclass(frozen=True)
class TlsFront:
    """The front's URL and the CA file its certificate is issued by."""

    url: str
    ca: Path


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _serve(client: socket.socket, context: ssl.SSLContext, target: tuple[str, int]) -> None:
    try:
        secure = context.wrap_socket(client, server_side=True)
        upstream = socket.create_connection(target, timeout=10)
        upstream.settimeout(None)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, secure), daemon=True)
    back.start()
    _pipe(secure, upstream)
    back.join()
    for sock in (secure, upstream):
        sock.close()


@contextlib.contextmanager
def tls_front(target_url: str, directory: Path) -> Iterator[TlsFront]:
    """HTTPS on a free loopback port in front of ``target_url`` (``http://host:port``)."""
    made = ensure_certificates(directory, ["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(made.cert), str(made.key))
    host, _, port = target_url.removeprefix("http://").rstrip("/").rpartition(":")
    listener = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def accept() -> None:
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(client, context, (host, int(port))),
                             daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield TlsFront(f"https://127.0.0.1:{listener.getsockname()[1]}", made.ca)
    finally:
        stopping.set()
        listener.close()
