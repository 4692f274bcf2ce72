"""gunicorn's gevent worker with limits on slow and crowding clients.

gunicorn's own ``keepalive`` bounds every wait for a request's headers alike (with
``timeout_ctx``). This worker bounds a new connection's first request by the header timeout,
each later one by the shorter keep-alive idle timeout, and caps the connections open from one
client address: one more is answered 503 with ``Retry-After`` and closed at once. A request
being served (a body being read, an answer being sent, an upgraded WebSocket) is outside
these timeouts; bodies have their own (:mod:`fplus.serving.http.bodyread`).
"""

from __future__ import annotations

import json
import logging
import socket
from collections import Counter
from typing import Any

import gevent
from gevent.local import local
from gunicorn.workers.ggevent import GeventWorker

from .httplimits import CONNECTIONS_PER_IP, HttpLimits

log = logging.getLogger(__name__)

_REFUSAL_DRAIN_SECONDS = 1.0
_REFUSAL_DRAIN_BYTES = 64 * 1024


class LimitedGeventWorker(GeventWorker):
    """The gevent worker with :class:`HttpLimits` (set on a subclass: :func:`worker_class`)."""

    limits: HttpLimits = HttpLimits()

    def init_process(self) -> None:
        self._open: Counter[str] = Counter()
        self._capped: set[str] = set()
        self._connection = local()  # per connection greenlet: has it served a request?
        super().init_process()

    # gunicorn's stubs say None, gunicorn's own returns a gevent.Timeout as this does
    def timeout_ctx(self) -> gevent.Timeout:  # type: ignore[override]
        """The wait for the next request's headers: silently ends the connection when over."""
        served = getattr(self._connection, "served", False)
        seconds = self.limits.idle_timeout if served else self.limits.header_timeout
        return gevent.Timeout(seconds, False)  # type: ignore[arg-type]  # False: silent, as documented

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        address = addr[0] if isinstance(addr, tuple) and addr else str(addr)
        cap = self.limits.connections_per_ip
        if cap and self._open[address] >= cap:
            self._refuse(client, address, cap)
            return
        self._open[address] += 1
        self._connection.served = False
        try:
            super().handle(listener, client, addr)
        finally:
            self._open[address] -= 1
            if self._open[address] <= 0:
                del self._open[address]
            if self._open[address] < cap:
                self._capped.discard(address)

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> bool:
        self._connection.served = True
        return super().handle_request(listener_name, req, sock, addr)

    def _refuse(self, client: socket.socket, address: str, cap: int) -> None:
        """Answer 503 without reading the request, then close (after a short drain, so the
        client reads the answer rather than a connection reset)."""
        if address not in self._capped:
            self._capped.add(address)
            log.warning("%s has %d connections open: refusing more (%s)", address, cap,
                        CONNECTIONS_PER_IP)
        body = json.dumps({"error": f"too many connections from {address} "
                                    f"(at most {cap} at a time); try again later"}).encode()
        head = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n")
        try:
            client.settimeout(_REFUSAL_DRAIN_SECONDS)
            client.sendall(head.encode() + body)
            client.shutdown(socket.SHUT_WR)
            drained = 0
            with gevent.Timeout(_REFUSAL_DRAIN_SECONDS, False):  # type: ignore[arg-type]  # as above
                while drained < _REFUSAL_DRAIN_BYTES and (data := client.recv(16384)):
                    drained += len(data)
        except OSError:
            pass
        finally:
            client.close()


def worker_class(limits: HttpLimits) -> type[LimitedGeventWorker]:
    """A :class:`LimitedGeventWorker` bound to ``limits`` (gunicorn takes a class)."""
    return type("LimitedGeventWorker", (LimitedGeventWorker,), {"limits": limits})
