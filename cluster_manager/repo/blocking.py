"""Where the repo code runs creating a repository (a handful of ``mkdir`` calls).

By default in the caller's thread. A service on gevent installs a runner that hands the
call to a native thread (:func:`use_runner`), so creating one cluster's repository overlaps
with every other greenlet's work instead of stalling it; the call holds no locks. Pack
writes stay in the caller: handing them over cost more than it saved (measured with
``bench/seal.py`` and ``bench/commission.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
Runner = Callable[[Callable[..., Any], tuple[Any, ...]], Any]


def _direct(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return fn(*args)


_runner: Runner = _direct


def use_runner(runner: Runner | None) -> None:
    """Run blocking file-system calls through ``runner(fn, args)`` (None: directly)."""
    global _runner
    _runner = runner or _direct


def run(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` through the installed runner."""
    return _runner(fn, args)
