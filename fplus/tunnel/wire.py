"""How a Kubernetes API request and its answer travel as one stream's headers.

The request keeps the client's end-to-end headers and loses the hop-by-hop ones (they mean
nothing past our hop, and HTTP/2 forbids them) and every credential: the edge adds its own.
What the Cluster Manager decided travels as ``x-fplus-level`` and ``x-fplus-principal``. An
upgrade (``exec``, ``attach``, ``port-forward``, ``logs -f`` over WebSocket or SPDY) is asked
with ``x-fplus-upgrade`` and, granted, answered ``:status 200`` plus ``x-fplus-status: 101``
(HTTP/2 has no 101); after it the stream carries the raw bytes both ways.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Headers = list[tuple[str, str]]

LEVELS = ("view", "edit", "admin")
"""The access levels, lowest first."""
LEVEL = "x-fplus-level"
PRINCIPAL = "x-fplus-principal"
UPGRADE = "x-fplus-upgrade"
STATUS = "x-fplus-status"
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "host", "proxy-authorization", "proxy-authenticate", "authorization",
    "cookie", "content-length"})
"""Headers that never cross: hop-by-hop, the caller's credentials (the edge uses its own),
and a body's length (each hop frames it again: HTTP/2 would end the whole connection over
a length the bytes do not match, and an upgrade's bytes follow a length of 0)."""

REPEATED = frozenset({"x-stream-protocol-version"})
"""Headers Kubernetes reads as repeated fields, never as a list in one: an HTTP/1.1 server
joins repeated fields with commas (SPDY's protocol offers would then match none)."""


class WireError(ValueError):
    """Stream headers that are not a request we forward."""


@dataclass(frozen=True)
class KubeRequest:
    """A request as the edge forwards it."""

    method: str
    path: str
    headers: Headers
    level: str
    principal: str
    upgrade: str | None = None


def _crosses(name: str) -> bool:
    name = name.lower()
    return not (name in HOP_BY_HOP or name.startswith(("impersonate-", "x-fplus-"))
                or name.startswith(":"))


def request_headers(method: str, path: str, headers: Iterable[tuple[str, str]], *,
                    level: str, principal: str, upgrade: str | None = None) -> Headers:
    """The stream headers for a client's request (``path`` under the Kubernetes API)."""
    out: Headers = [(":method", method), (":path", path), (":scheme", "https"),
                    (":authority", "kube")]
    for name, value in headers:
        name = name.lower()
        if not _crosses(name):
            continue
        out += [(name, v.strip()) for v in value.split(",")] if name in REPEATED else [
            (name, value)]
    out += [(LEVEL, level), (PRINCIPAL, principal)]
    if upgrade:
        out.append((UPGRADE, upgrade))
    return out


def parse_request(headers: Iterable[tuple[str, str]]) -> KubeRequest:
    """The request a stream carries; :class:`WireError` if it lacks what the edge needs."""
    found = list(headers)
    fields = dict(found)
    method, path = fields.get(":method", ""), fields.get(":path", "")
    level, principal = fields.get(LEVEL, ""), fields.get(PRINCIPAL, "")
    if not method.isalpha() or not path.startswith("/"):
        raise WireError("a request needs a method and a path")
    if level not in LEVELS:
        raise WireError(f"{LEVEL} must be one of {', '.join(LEVELS)}")
    if not principal:
        raise WireError(f"{PRINCIPAL} is required")
    return KubeRequest(method, path, [(k, v) for k, v in found if _crosses(k)], level,
                       principal, fields.get(UPGRADE) or None)


def response_headers(status: int, headers: Iterable[tuple[str, str]]) -> Headers:
    """The stream headers for the edge's answer (a 101 as ``200`` + ``x-fplus-status`` and
    ``x-fplus-upgrade``, the protocol switched to)."""
    found = list(headers)
    out = [(k.lower(), v) for k, v in found if _crosses(k)]
    if status == 101:
        upgrade = next((v for k, v in found if k.lower() == "upgrade"), "")
        return [(":status", "200"), (STATUS, "101"), (UPGRADE, upgrade), *out]
    return [(":status", str(status)), *out]


def parse_response(status: int, headers: Iterable[tuple[str, str]]) -> tuple[int, Headers]:
    """``(status, headers)`` of the edge's answer as the client should see it (a 101 with
    its ``Connection`` and ``Upgrade`` back)."""
    found = list(headers)
    fields = dict(found)
    out = [(k, v) for k, v in found if _crosses(k)]
    if fields.get(STATUS) == "101":
        return 101, [("connection", "Upgrade"), ("upgrade", fields.get(UPGRADE, "")), *out]
    return status, out
