"""gunicorn embedded in our own commands: gevent worker processes (one unless a service
asks for more), each building the app itself."""

from __future__ import annotations

import functools
import math
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.errors import AppImportError

from ..background.heap import HeapPacer, HeapSettings
from .httplimits import heap_settings, http_limits
from .ports import bind_port
from .tls import ServerTls

WSGIApp = Callable[..., Iterable[bytes]]

_slot = 0


def worker_slot() -> int:
    """This worker's slot: 0 to the worker count less one, the lowest one no live worker
    held when the master forked it (a worker that died is replaced in its slot); 0 in a
    single-worker server and outside gunicorn."""
    return _slot


@dataclass(frozen=True)
class Served:
    """What a worker serves, built in that worker: ``app``, and ``on_start`` run once the
    worker is ready (start background threads there)."""

    app: WSGIApp
    on_start: Callable[[], None] | None = None


class EmbeddedServer(BaseApplication):
    """gunicorn with worker processes that each build their app themselves.

    ``build`` runs in the worker after gunicorn forks it, never in the master: whatever the
    app keeps in memory (an object graph, grants, caches, Config Store sessions) is read from
    the database by the process serving it. A worker killed and replaced (OOM killer, crash)
    so serves what the database holds then, not what the master knew at start-up.

    One worker process unless ``options`` says more: the Config Store keeps its object
    graph, sessions and notify subscriptions in memory, so it must be a single process. Each
    worker has a slot (:func:`worker_slot`), given by the master when it forks the worker:
    work only one process may do (leading, a fixed port) goes by slot.
    """

    def __init__(self, build: Callable[[], Served], wrap: Callable[[WSGIApp], WSGIApp],
                 options: dict[str, Any], heap: HeapSettings | None = None) -> None:
        self.build, self.wrap, self.options = build, wrap, options
        self.heap = HeapSettings() if heap is None else heap
        self.on_start: Callable[[], None] | None = None
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)
        self.cfg.set("post_worker_init", lambda worker: worker.app.started())
        self.cfg.set("pre_fork", _assign_slot)
        self.cfg.set("post_fork", _take_slot)

    def load(self) -> WSGIApp:
        """In the worker: build the app. A SystemExit there is one line on stderr, and the
        master stops (a worker that cannot be built is not forked again and again)."""
        try:
            served = self.build()
        except SystemExit as exc:
            raise AppImportError(str(exc.code or "the app could not be built")) from None
        self.on_start = served.on_start
        return self.wrap(served.app)

    def started(self) -> None:
        """In the worker, once it is ready: the garbage collection pacer (what the app
        loaded is frozen at once) and the app's ``on_start``."""
        HeapPacer(self.heap).start()
        if self.on_start is not None:
            self.on_start()


def _assign_slot(arbiter: Any, worker: Any) -> None:
    """In the master, before forking ``worker``: the lowest slot no live worker holds (gunicorn
    forks a replacement only once the worker it replaces was reaped)."""
    held = {getattr(w, "fplus_slot", None) for w in arbiter.WORKERS.values()}
    worker.fplus_slot = next(n for n in range(len(held) + 1) if n not in held)


def _take_slot(arbiter: Any, worker: Any) -> None:
    """In the worker, just forked: remember its slot (:func:`worker_slot`)."""
    global _slot  # one value per process, set once after the fork
    _slot = getattr(worker, "fplus_slot", 0)


ACCESS_LOG_FORMAT = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(L)ss'
"""One line per request: client, time, method, path **without the query** (bootstrap URLs
carry their token there), protocol, status, bytes, seconds. No headers (credentials)."""


def access_log() -> str | None:
    """``-`` (stderr) when ``ACCESS_LOG`` is on (``1``, ``true``, ``yes``), else None."""
    return "-" if os.environ.get("ACCESS_LOG", "").lower() in ("1", "true", "yes") else None


def serve(build: Callable[[], Served], host: str, port: int, connections: int = 2000,
          listener: socket.socket | None = None, tls: ServerTls | None = None,
          workers: int = 1) -> None:
    """Run what ``build`` makes until SIGTERM/SIGINT.

    ``build`` runs in the worker process, each time gunicorn forks one (at start, and after
    a worker died): build there everything that holds state from the database or another
    service, and check the configuration before calling this (a failure in ``build`` stops
    the server, but only once it is listening). :attr:`Served.on_start` runs in the worker
    once it is ready: start background threads there (they would not survive the fork).

    The gevent worker serves many keep-alive and WebSocket connections in one process
    with far less overhead per request than a thread pool.

    ``listener`` is ``host:port`` already bound (:func:`serving.bind_port`, early in a command,
    so a taken port is one line before anything starts); gunicorn takes it over and listens.
    Without it the port is bound here, with the same one-line failure.

    ``tls`` serves HTTPS with its certificate and key, reloaded when they change.

    ``workers`` processes accept on the one listening socket, each with its own app and
    ``connections``; a service that keeps state only in memory must keep it at 1.

    Slow and crowding clients are limited by the ``FPLUS_HTTP_*`` settings of
    :mod:`fplus.serving.http.httplimits` (header, keep-alive and body timeouts, connections
    per address); its garbage collection (:mod:`fplus.serving.background.heap`) by the
    ``FPLUS_GC_*`` settings read there too.
    """
    limits = http_limits(connections)  # a bad FPLUS_HTTP_* value: one line, nothing served
    heap = heap_settings()  # the same for FPLUS_GC_*
    if listener is None:
        listener = bind_port(host, port)
    from .bodyread import timed_bodies  # these import gevent: only where a service is served
    from .worker import worker_class

    options: dict[str, Any] = {
        "bind": f"fd://{listener.detach()}", "workers": workers,
        "worker_class": worker_class(limits), "worker_connections": connections,
        "timeout": 0, "graceful_timeout": 2, "keepalive": max(1, math.ceil(limits.idle_timeout)),
        "accesslog": access_log(), "access_log_format": ACCESS_LOG_FORMAT,
        "loglevel": "warning",
        # gunicorn's control socket (25.1+) is one path per user ($HOME/.gunicorn/gunicorn.ctl)
        # that every server of that user would take from the others, and its thread holds a
        # stop up by seconds under gevent; nothing of ours uses gunicornc.
        "control_socket_disable": True,
    }
    if tls is not None:
        options |= {"certfile": str(tls.cert), "keyfile": str(tls.key),
                    "ssl_context": lambda config, default: tls.context()}
    EmbeddedServer(build, functools.partial(timed_bodies, limits=limits), options, heap).run()
