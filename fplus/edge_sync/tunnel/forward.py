"""Each stream the Cluster Manager opens, forwarded to the local kube-apiserver as Edge Sync.

The stream's headers say what the caller asked and what the Cluster Manager decided
(:mod:`fplus.tunnel.wire`): the edge sends the request with its own service account's token,
impersonating ``fplus:<level>`` with the caller's principal as the extra
``fplus-principal``, so the edge's own RBAC decides and its audit log names the person.
The caller's own credentials and impersonation headers never cross (the wire drops them
before anything here sees them).

Plain requests go over kept connections (:meth:`.ApiServer.connection`); the request body
is streamed to the API server as it arrives (chunked), the answer streamed back chunk by
chunk as the API server sends it (a watch or ``logs -f`` is never buffered; gzip is passed
as it is). An upgrade gets a connection of its own (:mod:`.upgrade`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import h11

from fplus.tunnel import wire
from fplus.tunnel.mux import STREAM_WINDOW, Stream, StreamClosed

from .apiserver import ApiServer, Kept
from .replies import decoded, fail, reply
from .upgrade import forward_upgrade

log = logging.getLogger(__name__)

REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods sent again on a new connection when a kept one fails before their answer (and
they carry no body), as Go's client does: sending them twice changes nothing. Any other
request is sent on a kept connection only once it was seen open."""
POLL = 0.5
"""How often a streamed answer looks whether the Cluster Manager gave up on its stream."""
WHOLE = STREAM_WINDOW
"""Answers of a known length up to this are read whole and sent with their head at once."""


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
        headers = self.api.headers_for(request)
        headers.append(("Host", self.api.authority))
        body = _body(stream)
        if body is not None:  # its length never crosses: chunked, as it arrives
            headers.append(("Transfer-Encoding", "chunked"))
        try:
            head = h11.Request(method=request.method, target=self.api.target(request),
                               headers=headers)
        except h11.LocalProtocolError as exc:
            fail(stream, 400, "BadRequest", f"a request the edge cannot forward: {exc}")
            return
        again = body is None and request.method in REPLAYABLE
        new = False
        while True:
            try:
                kept = self.api.connection(new=new, look=not again)
            except OSError as exc:
                _unreachable(stream, exc)
                return
            try:
                answer = _exchange(kept, head, body)
                break
            except (h11.ProtocolError, OSError) as exc:
                kept.close()
                if kept.reused and again and not new:
                    new = True  # the server closed the kept connection: again on a new one
                    continue
                _unreachable(stream, exc)
                return
            except BaseException:  # the stream went while its body was sent
                kept.close()
                raise
        self._relay(stream, kept, answer)

    def _relay(self, stream: Stream, kept: Kept, answer: h11.Response) -> None:
        """The answer's head, then its body as it arrives; the connection kept if it was
        read whole."""
        complete = False
        length = next((v for k, v in answer.headers if k == b"content-length"), None)
        done = threading.Event()
        if length is None:  # a watch, logs -f: ended early if the stream is given up
            threading.Thread(target=_cancel_when_gone, args=(stream, kept, done),
                             name="tunnel-watch", daemon=True).start()
        try:
            if length is not None and int(length) <= WHOLE:  # head, body and end in one go
                reply(stream, answer.status_code, decoded(answer.headers), _whole(kept))
                complete = True
                return
            reply(stream, answer.status_code, decoded(answer.headers))
            while True:
                event = kept.next_event()
                if isinstance(event, h11.Data):
                    stream.write(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    raise h11.RemoteProtocolError(f"the answer broke off: {event!r}")
            complete = True
            stream.end()
        except (h11.ProtocolError, OSError):
            stream.reset()  # the API server broke off: the client must not take it as whole
        finally:
            done.set()
            if complete:
                self.api.keep(kept)
            else:
                kept.close()  # unread data: the connection is not kept


def _exchange(kept: Kept, head: h11.Request, body: Iterator[bytes] | None) -> h11.Response:
    """Send the request and read its answer's head (a 100 Continue passed over)."""
    if body is None:
        data = kept.conn.send(head) or b""
        kept.sock.sendall(data + (kept.conn.send(h11.EndOfMessage()) or b""))
    else:
        kept.send(head)
        for chunk in body:
            kept.send(h11.Data(data=chunk))
        kept.send(h11.EndOfMessage())
    while True:
        event = kept.next_event()
        if isinstance(event, h11.Response):
            return event
        if not isinstance(event, h11.InformationalResponse) or event.status_code == 101:
            raise h11.RemoteProtocolError(f"not an answer: {event!r}")


def _whole(kept: Kept) -> bytes:
    """The rest of an answer's body, read to its end (one the API server sent at once)."""
    parts = []
    while not isinstance(event := kept.next_event(), h11.EndOfMessage):
        if not isinstance(event, h11.Data):
            raise h11.RemoteProtocolError(f"the answer broke off: {event!r}")
        parts.append(bytes(event.data))
    return b"".join(parts)


def _unreachable(stream: Stream, exc: BaseException) -> None:
    fail(stream, 502, "BadGateway", "the edge's Kubernetes API server is unreachable: "
                                    f"{type(exc).__name__}")


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


def _cancel_when_gone(stream: Stream, kept: Kept, done: threading.Event) -> None:
    """Wake the reader of ``kept``'s answer once the Cluster Manager reset the stream or
    the tunnel closed (a quiet watch would otherwise hold its API server connection)."""
    while not done.wait(POLL):
        if stream.reset_by_peer or stream.mux.closed.is_set():
            kept.shutdown()
            return
