"""HTTPS for the services, and the CA bundle their clients trust.

A service serves HTTPS when given ``--tls-cert`` and ``--tls-key`` (:func:`add_tls_options`).
The pair is checked once at start (one line naming the file if it is missing, unreadable or
not a matching pair), then re-read whenever either file changes, so a renewed certificate
(cert-manager, a cron job) is used for new connections with no restart. A renewal that
cannot be loaded leaves the previous pair in use and is logged once.

Clients trust the CA bundle named by ``FPLUS_CA_FILE`` (PEM) instead of the system's
(:func:`client_ca_file`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CA_FILE_ENV = "FPLUS_CA_FILE"
RECHECK_SECONDS = 1.0
"""At most this often (per process) a handshake looks at the files' modification times."""


class TlsFileError(ValueError):
    """A certificate, key or CA file that cannot be used (the message names it)."""


def _readable(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TlsFileError(f"{what} {path}: {exc.strerror or exc}") from None


def _server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context for the pair; TlsFileError naming the file at fault."""
    if b"-----BEGIN CERTIFICATE-----" not in _readable(cert, "--tls-cert"):
        raise TlsFileError(f"--tls-cert {cert}: not a PEM certificate")
    if b"PRIVATE KEY-----" not in _readable(key, "--tls-key"):
        raise TlsFileError(f"--tls-key {key}: not a PEM private key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise TlsFileError(f"--tls-key {key} does not match --tls-cert {cert} or cannot be "
                           f"loaded ({exc.reason or exc})") from None
    return context


def _stamp(*paths: Path) -> tuple[tuple[int, int], ...]:
    out = []
    for path in paths:
        try:
            info = path.stat()
            out.append((info.st_mtime_ns, info.st_size))
        except OSError:
            out.append((0, 0))
    return tuple(out)


class ServerTls:
    """A certificate/key pair served over TLS, reloaded when either file changes."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.cert, self.key = cert, key
        self._lock = threading.Lock()
        self._stamp = _stamp(cert, key)
        self._current = _server_context(cert, key)
        self._checked = time.monotonic()
        self._failed_stamp: tuple[tuple[int, int], ...] | None = None

    def context(self) -> ssl.SSLContext:
        """The context to listen with: every handshake gets the newest loaded pair (its SNI
        callback switches the connection to it). The handshake is left to the connection's
        handler, which drops a failed one quietly (a client that distrusts the certificate,
        a port scan) instead of the server printing a traceback."""
        base = _server_context(self.cert, self.key)  # built where the server runs (gevent)
        base.sni_callback = self._switch
        base.wrap_socket = functools.partial(base.wrap_socket,  # type: ignore[method-assign]
                                             do_handshake_on_connect=False)
        with self._lock:
            self._current = base
        return base

    def current(self) -> ssl.SSLContext:
        """The newest pair that loaded, re-read first if the files changed (rate-limited)."""
        now = time.monotonic()
        with self._lock:
            if now - self._checked < RECHECK_SECONDS:
                return self._current
            self._checked = now
            stamp = _stamp(self.cert, self.key)
            if stamp == self._stamp or stamp == self._failed_stamp:
                return self._current
            try:
                fresh = _server_context(self.cert, self.key)
            except TlsFileError as exc:
                self._failed_stamp = stamp
                log.warning("keeping the previous TLS certificate: %s", exc)
                return self._current
            fresh.sni_callback = self._switch
            self._current, self._stamp, self._failed_stamp = fresh, stamp, None
            log.info("TLS certificate %s reloaded", self.cert)
            return fresh

    def _switch(self, connection: Any, server_name: str | None, context: Any) -> None:
        fresh = self.current()
        if fresh is not context:
            connection.context = fresh


def add_tls_options(parser: argparse.ArgumentParser) -> None:
    """``--tls-cert`` and ``--tls-key``: serve HTTPS with this pair."""
    parser.add_argument("--tls-cert", type=Path, metavar="FILE",
                        help="serve HTTPS with this PEM certificate (chain), re-read when it "
                             "changes; needs --tls-key")
    parser.add_argument("--tls-key", type=Path, metavar="FILE",
                        help="the PEM private key of --tls-cert")


def server_tls(args: argparse.Namespace, prog: str) -> ServerTls | None:
    """The pair the command was given, checked; None for plain HTTP. SystemExit with one line
    naming the file if it cannot be used, or if only one of the two was given."""
    cert, key = args.tls_cert, args.tls_key
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise SystemExit(f"{prog}: --tls-cert and --tls-key go together: give both or neither")
    try:
        return ServerTls(cert, key)
    except TlsFileError as exc:
        raise SystemExit(f"{prog}: {exc}") from None


def scheme(tls: ServerTls | None) -> str:
    """``https`` with TLS, else ``http``."""
    return "http" if tls is None else "https"


def client_ca_file(env: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """The CA bundle clients trust (``FPLUS_CA_FILE``), None for the system's. TlsFileError if
    it is set but unreadable or holds no PEM certificate."""
    value = (os.environ if env is None else env).get(CA_FILE_ENV)
    if not value:
        return None
    if b"-----BEGIN CERTIFICATE-----" not in _readable(Path(value), CA_FILE_ENV):
        raise TlsFileError(f"{CA_FILE_ENV} {value}: holds no PEM certificate")
    return value


def require_client_ca(prog: str) -> str | None:
    """:func:`client_ca_file`, or SystemExit with its one line."""
    try:
        return client_ca_file()
    except TlsFileError as exc:
        raise SystemExit(f"{prog}: {exc}") from None
