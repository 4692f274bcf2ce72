"""Blocking work that should not stall a gevent worker: ``run(fn, *args)``.

By default ``fn`` runs in the caller's thread. A service on gevent calls
:func:`use_gevent_threadpool`, after which ``run`` hands the call to a native thread of the
worker's hub and only the calling greenlet waits; the others keep serving. Give it plain
work that holds no locks and releases the GIL (file-system calls, argon2 hashing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")
Runner = Callable[[Callable[..., Any], tuple[Any, ...]], Any]


def _direct(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return fn(*args)


def _gevent_threadpool(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    import gevent  # only services running on gevent install this runner

    return gevent.get_hub().threadpool.apply(fn, args)


_runner: Runner = _direct


def use_runner(runner: Runner | None) -> None:
    """Run offloaded calls through ``runner(fn, args)`` (None: directly)."""
    global _runner
    _runner = runner or _direct


def use_gevent_threadpool() -> None:
    """Offload to the current gevent hub's native thread pool (looked up at each call, so
    it may be installed before gunicorn forks its worker)."""
    use_runner(_gevent_threadpool)


def run(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` through the installed runner."""
    return cast(T, _runner(fn, args))  # the runner returns what fn does
