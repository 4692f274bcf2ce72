"""gunicorn embedded in our own commands: one process, gevent worker."""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication

from .httplimits import http_limits
from .ports import bind_port
from .tls import ServerTls


class EmbeddedServer(BaseApplication):
    """gunicorn running an already-built WSGI app.

    One worker process with threads: the Config Store keeps its object graph, sessions and
    notify subscriptions in memory, so it must be a single process.
    """

    def __init__(self, app: Callable, options: dict[str, Any]) -> None:
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Callable:
        return self.application


ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(L)ss'
"""One line per request: client, time, method, path **without the query** (bootstrap URLs
carry their token there), protocol, status, bytes, seconds. No headers (credentials)."""


def access_log() -> str | None:
    """``-`` (stderr) when ``ACCESS_LOG`` is on (``1``, ``true``, ``yes``), else None."""
    return "-" if os.environ.get("ACCESS_LOG", "").lower() in ("1", "true", "yes") else None


def serve(app: Callable, host: str, port: int, connections: int = 2000,
          on_start: Callable[[], None] | None = None,
          listener: socket.socket | None = None, tls: ServerTls | None = None) -> None:
    """Run ``app`` until SIGTERM/SIGINT.

    The gevent worker serves many keep-alive and WebSocket connections in one process
    with far less overhead per request than a thread pool. ``on_start`` runs inside the
    worker once it is ready: start background threads there, not before (they would
    stay behind in the master process when gunicorn forks).

    ``listener`` is ``host:port`` already bound (:func:`serving.bind_port`, early in a command,
    so a taken port is one line before anything starts); gunicorn takes it over and listens.
    Without it the port is bound here, with the same one-line failure.

    ``tls`` serves HTTPS with its certificate and key, reloaded when they change.

    Slow and crowding clients are limited by the ``FPLUS_HTTP_*`` settings of
    :mod:`serving.httplimits` (header, keep-alive and body timeouts, connections per address).
    """
    limits = http_limits(connections)  # a bad FPLUS_HTTP_* value: one line, nothing served
    if listener is None:
        listener = bind_port(host, port)
    from .bodyread import timed_bodies  # these import gevent: only where a service is served
    from .worker import worker_class

    options: dict[str, Any] = {
        "bind": f"fd://{listener.detach()}", "workers": 1,
        "worker_class": worker_class(limits), "worker_connections": connections,
        "timeout": 0, "graceful_timeout": 2, "keepalive": max(1, math.ceil(limits.idle_timeout)),
        "accesslog": access_log(), "access_log_format": ACCESS_LOG_FORMAT,
        "loglevel": "warning",
    }
    if tls is not None:
        options |= {"certfile": str(tls.cert), "keyfile": str(tls.key),
                    "ssl_context": lambda config, default: tls.context()}
    if on_start is not None:
        options["post_worker_init"] = lambda worker: on_start()
    EmbeddedServer(timed_bodies(app, limits), options).run()
