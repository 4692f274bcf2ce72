"""How the edge answers a stream: the API server's answer as stream headers, or its own error
as a Kubernetes ``Status`` (what kubectl prints)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from fplus.tunnel import wire
from fplus.tunnel.mux import Stream


def decoded(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """An h11 event's headers as the wire takes them."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


def reply(stream: Stream, status: int, headers: Iterable[tuple[str, str]],
          body: bytes | None = None) -> None:
    """Send the API server's status and headers (a 101 as the wire carries it); with
    ``body``, the whole answer (ended)."""
    out = wire.response_headers(status, headers)
    if body is None:
        stream.respond(int(out[0][1]), out[1:])
    else:
        stream.answer(int(out[0][1]), out[1:], body)


def status_body(code: int, reason: str, message: str) -> bytes:
    """A Kubernetes ``Status`` failure as JSON."""
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()


def fail(stream: Stream, code: int, reason: str, message: str) -> None:
    """Answer with the edge's own error (nothing reached, or came from, the API server)."""
    body = status_body(code, reason, message)
    stream.answer(code, [("content-type", "application/json"),
                         ("content-length", str(len(body)))], body)
