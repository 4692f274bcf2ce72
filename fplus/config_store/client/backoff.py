"""How a client waits before trying again: exponential back-off with full jitter, and the
server's ``Retry-After`` honoured.

Full jitter (the n-th consecutive failure waits a time drawn evenly between 0 and
``min(cap, first * 2^(n-1))``) spreads clients that failed together, in a server's restart,
over the whole window instead of bunching them at its end. A ``Retry-After`` the server
sent (a 503 of its admission control: already jittered per client) is waited for instead,
when longer, up to :data:`MAX_RETRY_AFTER`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

MAX_RETRY_AFTER = 300.0
"""The longest a ``Retry-After`` is honoured for (a server asking for more gets this)."""


def full_jitter(failures: int, first: float, cap: float) -> float:
    """Seconds to wait after ``failures`` consecutive failures (0 → none): drawn evenly
    between 0 and ``first * 2^(failures-1)``, at most ``cap``."""
    if failures <= 0:
        return 0.0
    window = min(first * 2.0 ** min(failures - 1, 62), cap)
    return random.uniform(0.0, window)  # noqa: S311 - spread, not secrecy


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` value (a delay in seconds, or an HTTP date) asks for, at
    most :data:`MAX_RETRY_AFTER`; None without a readable one."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit() and value.isascii():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - (
                time.time() if now is None else now)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def header_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """:func:`retry_after` of the ``Retry-After`` among ``headers`` (any case)."""
    if not headers:
        return None
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    return retry_after(value)


def next_wait(failures: int, first: float, cap: float,
              asked: float | None = None) -> float:
    """The wait after ``failures`` consecutive failures: :func:`full_jitter`, or what the
    server ``asked`` (``Retry-After``) when that is longer."""
    jittered = full_jitter(failures, first, cap)
    return jittered if asked is None else max(jittered, min(asked, MAX_RETRY_AFTER))
