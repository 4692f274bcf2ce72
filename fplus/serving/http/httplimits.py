"""Limits on slow and crowding HTTP clients, read from the environment by every service.

Environment variables (a bad value stops the service at start-up with one line):

``FPLUS_HTTP_HEADER_TIMEOUT`` (20 s)
    A new connection must deliver its first request's headers within this time, or it is
    closed. Trickling the headers a byte at a time does not extend it.
``FPLUS_HTTP_IDLE_TIMEOUT`` (15 s)
    A kept-alive connection must deliver the next request's headers within this time of the
    previous answer, or it is closed.
``FPLUS_HTTP_BODY_TIMEOUT`` (30 s)
    While a request body is read, no read may wait longer than this for data; and the whole
    body must arrive within this time plus one second per ``FPLUS_HTTP_BODY_MIN_RATE`` bytes.
    Otherwise the answer is 408 and the connection closes.
``FPLUS_HTTP_BODY_MIN_RATE`` (500 bytes/s; 0: no rate rule, only the idle rule)
    The slowest sustained body upload accepted (as Apache's ``mod_reqtimeout`` ``MinRate``).
``FPLUS_HTTP_CONNECTIONS_PER_IP`` (half of the service's connections; 0: no cap)
    Open connections from one client address; one more is answered 503 with ``Retry-After``
    and closed. Edges behind one NAT share an address, and behind a proxy or ingress every
    client does: there, set 0 and let the proxy limit its clients.

WebSocket connections, once upgraded, are bound by none of these (notify has its own limits).

Garbage collection (:mod:`fplus.serving.background.heap`), read here with the limits:

``FPLUS_GC_FREEZE_EVERY`` (60 s; 0: off, Python's own collection only)
    Seconds between two freezes of what survives the young generations' collection.
``FPLUS_GC_FULL_EVERY`` (3600 s)
    Seconds between two collections of everything, frozen or not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..background.heap import HeapSettings

HEADER_TIMEOUT = "FPLUS_HTTP_HEADER_TIMEOUT"
IDLE_TIMEOUT = "FPLUS_HTTP_IDLE_TIMEOUT"
BODY_TIMEOUT = "FPLUS_HTTP_BODY_TIMEOUT"
BODY_MIN_RATE = "FPLUS_HTTP_BODY_MIN_RATE"
CONNECTIONS_PER_IP = "FPLUS_HTTP_CONNECTIONS_PER_IP"
GC_FREEZE_EVERY = "FPLUS_GC_FREEZE_EVERY"
GC_FULL_EVERY = "FPLUS_GC_FULL_EVERY"


@dataclass(frozen=True)
class HttpLimits:
    """Timeouts (seconds), the slowest body rate (bytes/s, 0: none) and the per-address
    connection cap (0: none)."""

    header_timeout: float = 20.0
    idle_timeout: float = 15.0
    body_timeout: float = 30.0
    body_min_rate: int = 500
    connections_per_ip: int = 0


def http_limits(connections: int, environ: Mapping[str, str] | None = None) -> HttpLimits:
    """The limits set in ``environ`` (default ``os.environ``) for a server of
    ``connections``; SystemExit with one line naming the variable for a bad value."""
    env = os.environ if environ is None else environ
    return HttpLimits(
        header_timeout=env_seconds(env, HEADER_TIMEOUT, HttpLimits.header_timeout),
        idle_timeout=env_seconds(env, IDLE_TIMEOUT, HttpLimits.idle_timeout),
        body_timeout=env_seconds(env, BODY_TIMEOUT, HttpLimits.body_timeout),
        body_min_rate=_count(env, BODY_MIN_RATE, HttpLimits.body_min_rate),
        connections_per_ip=_count(env, CONNECTIONS_PER_IP, max(1, connections // 2)),
    )


def heap_settings(environ: Mapping[str, str] | None = None) -> HeapSettings:
    """The garbage collection pacer's settings in ``environ`` (default ``os.environ``);
    SystemExit with one line naming the variable for a bad value."""
    env = os.environ if environ is None else environ
    return HeapSettings(
        freeze_every=env_seconds(env, GC_FREEZE_EVERY, HeapSettings.freeze_every, off=True),
        full_every=env_seconds(env, GC_FULL_EVERY, HeapSettings.full_every))


def env_seconds(env: Mapping[str, str], name: str, default: float, *,
                off: bool = False) -> float:
    """Seconds set in ``env[name]`` (``default`` when unset): above 0 and at most 86400, or
    0 when ``off`` allows it; SystemExit with one line naming the variable otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (0 < value <= 86400 or (off and value == 0)):
        raise SystemExit(f"{name}={raw!r}: must be a number of seconds above 0 "
                         f"(at most 86400{'; 0: off' if off else ''})")
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not raw.isascii():
        raise SystemExit(f"{name}={raw!r}: must be a whole number, 0 or more (0: no limit)")
    return int(raw)
