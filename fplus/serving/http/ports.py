"""Listening ports checked before a service starts: a taken port is one line, not a retry loop.

A service binds its port itself, as gunicorn would (``SO_REUSEADDR``: a port left in
TIME_WAIT is no obstacle, a listening socket is), and hands the bound socket to gunicorn,
so nothing can take the port between the check and the serving.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence


def address(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def in_use_message(host: str, ports: Sequence[int], names: Sequence[str] = ()) -> str:
    """One line saying which ports are taken and how to find out by whom.

    ``names``, if given, says what each port was meant for (one per port).
    """
    labels = [address(host, p) for p in ports]
    if names:
        labels = [f"{label} ({name})" for label, name in zip(labels, names, strict=True)]
    verb = "is" if len(ports) == 1 else "are"
    query = " or ".join(f"sport = :{p}" for p in ports)
    return (f"{', '.join(labels)} {verb} already in use "
            f"(another `make run`? see `ss -ltnp '{query}'`)")


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with gunicorn's options; OSError if it cannot be."""
    family, kind, proto, _, sockaddr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
    except OSError:
        sock.close()
        raise
    return sock


def bind_port(host: str, port: int, prog: str = "") -> socket.socket:
    """A socket bound (not yet listening) to ``host:port``; SystemExit with one line if not.

    Until it listens, connections to the port are refused, as if nothing were there yet.
    ``prog`` prefixes the message (``"config-store: 127.0.0.1:8701 is already in use ..."``).
    """
    prefix = f"{prog}: " if prog else ""
    try:
        return _bind(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise SystemExit(prefix + in_use_message(host, [port])) from None
        if exc.errno == errno.EACCES:
            reason = "permission denied (ports below 1024 need privileges)"
        elif exc.errno == errno.EADDRNOTAVAIL:
            reason = "no such address on this machine"
        else:
            reason = exc.strerror or str(exc)
        raise SystemExit(f"{prefix}cannot listen on {address(host, port)}: {reason}") from None


def taken_ports(host: str, ports: Sequence[int]) -> list[int]:
    """Those of ``ports`` on ``host`` already in use (bound and closed again to find out)."""
    taken = []
    for port in ports:
        try:
            _bind(host, port).close()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            taken.append(port)
    return taken
