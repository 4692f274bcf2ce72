"""Each stream the Cluster Manager opens, forwarded to the local kube-apiserver as Edge Sync.

The stream's headers say what the caller asked and what the Cluster Manager decided
(:mod:`fplus.tunnel.wire`): the edge sends the request with its own service account's token,
impersonating ``fplus:<level>`` with the caller's principal as the extra
``fplus-principal``, so the edge's own RBAC decides and its audit log names the person.
The caller's own credentials and impersonation headers never cross (the wire drops them
before anything here sees them).

Plain requests go through a pool of kept connections; the request body is streamed to the
API server as it arrives, the answer streamed back chunk by chunk as the API server sends it
(a watch or ``logs -f`` is never buffered; gzip is passed as it is). An upgrade gets a
connection of its own (:mod:`.upgrade`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import urllib3

from fplus.tunnel import wire
from fplus.tunnel.mux import Stream, StreamClosed

from .apiserver import ApiServer
from .replies import fail, reply
from .upgrade import forward_upgrade

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
"""The most bytes read from the API server's answer at once."""
POLL = 0.5
"""How often a streamed answer looks whether the Cluster Manager gave up on its stream."""


class Forwarder:
    """``on_stream`` for the edge's :class:`~fplus.tunnel.mux.Mux`: one stream, one request
    to the API server."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api

    def __call__(self, stream: Stream) -> None:
        try:
            self._serve(stream)
        except StreamClosed:
            raise  # the peer or the tunnel went: the Mux lets it be
        except Exception:  # a bug: logged; the Mux resets the stream left unanswered
            log.exception("tunnel: forwarding a request failed")

    def _serve(self, stream: Stream) -> None:
        try:
            request = wire.parse_request(stream.headers)
        except wire.WireError as exc:
            fail(stream, 400, "BadRequest", f"not a request the edge forwards: {exc}")
            return
        log.debug("tunnel: %s %s as fplus:%s for %s", request.method, request.path,
                  request.level, request.principal)
        if request.upgrade:
            forward_upgrade(self.api, stream, request)
        else:
            self._plain(stream, request)

    def close(self) -> None:
        """Release the API server connections kept."""
        self.api.close()

    def _plain(self, stream: Stream, request: wire.KubeRequest) -> None:
        headers = urllib3.HTTPHeaderDict()
        for name, value in self.api.headers_for(request):
            headers.add(name, value)
        body = _body(stream)
        try:
            resp = self.api.pool().urlopen(
                request.method, self.api.target(request), body=body, headers=headers,
                chunked=body is not None and "content-length" not in headers,
                preload_content=False, decode_content=False, redirect=False, retries=False,
                release_conn=False)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            fail(stream, 502, "BadGateway", "the edge's Kubernetes API server is unreachable: "
                                            f"{type(exc).__name__}")
            return
        complete = False
        streamed = "content-length" not in resp.headers
        done = threading.Event()
        if streamed:  # a watch, logs -f: ended early if the stream is given up
            threading.Thread(target=_cancel_when_gone, args=(stream, resp, done),
                             name="tunnel-watch", daemon=True).start()
        try:
            reply(stream, resp.status, resp.headers.items())
            for chunk in resp.stream(CHUNK, decode_content=False):
                stream.write(chunk)
            complete = True
            stream.end()
        except (urllib3.exceptions.HTTPError, OSError):
            stream.reset()  # the API server broke off: the client must not take it as whole
        finally:
            done.set()
            if not complete:
                resp.close()  # unread data: the connection is not kept
            resp.release_conn()


def _body(stream: Stream) -> Iterator[bytes] | None:
    """The request body as it arrives; None when there is none."""
    first = stream.read()
    if not first:
        return None

    def chunks() -> Iterator[bytes]:
        data = first
        while data:
            yield data
            data = stream.read()

    return chunks()


def _cancel_when_gone(stream: Stream, resp: urllib3.BaseHTTPResponse,
                      done: threading.Event) -> None:
    """Wake the reader of ``resp`` once the Cluster Manager reset the stream or the tunnel
    closed (a quiet watch would otherwise hold its API server connection)."""
    while not done.wait(POLL):
        if stream.reset_by_peer or stream.mux.closed.is_set():
            with contextlib.suppress(ValueError, OSError):  # already released or closed
                resp.shutdown()
            return

