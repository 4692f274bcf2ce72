"""fplus.serving.background.offload: blocking calls run directly, or in a native thread of
the gevent hub."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from fplus.serving.background import offload


@pytest.fixture(autouse=True)
def direct_afterwards() -> Iterator[None]:
    yield
    offload.use_runner(None)


def test_runs_in_the_caller_by_default() -> None:
    assert offload.run(threading.get_ident) == threading.get_ident()


def test_an_installed_runner_gets_every_call() -> None:
    seen = []
    offload.use_runner(lambda fn, args: seen.append((fn, args)) or fn(*args))
    assert offload.run(divmod, 7, 2) == (3, 1)
    assert seen == [(divmod, (7, 2))]
    offload.use_runner(None)
    assert offload.run(divmod, 9, 4) == (2, 1) and len(seen) == 1


def test_gevent_threadpool_runs_in_another_native_thread() -> None:
    offload.use_gevent_threadpool()
    assert offload.run(threading.get_ident) != threading.get_ident()
    with pytest.raises(ZeroDivisionError):  # exceptions reach the caller
        offload.run(divmod, 1, 0)
