"""The threads the edge serves its streams in: a free one is taken again, none is ever
queued behind another, an idle one leaves."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from fplus.edge_sync.tunnel import Workers

pytestmark = pytest.mark.timeout(60)


def _until(check: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_thread_that_finished_a_task_takes_the_next() -> None:
    workers = Workers(idle=10)
    ran: list[threading.Thread] = []
    for _ in range(3):
        workers.spawn(lambda: ran.append(threading.current_thread()))
        _until(lambda: workers.waiting == 1)
    assert len(ran) == 3 and len(set(ran)) == 1
    assert ran[0].name == "edge-sync-tunnel" and ran[0].daemon


def test_a_task_never_waits_behind_a_busy_one() -> None:
    workers = Workers(idle=10)
    release, second = threading.Event(), threading.Event()

    def watch() -> None:  # holding its thread
        release.wait()

    workers.spawn(watch)
    workers.spawn(second.set)
    assert second.wait(5)
    release.set()
    _until(lambda: workers.waiting == 2)


def test_an_idle_thread_leaves() -> None:
    workers = Workers(idle=0.1)
    ran: list[threading.Thread] = []
    workers.spawn(lambda: ran.append(threading.current_thread()))
    _until(lambda: bool(ran))
    ran[0].join(5)
    assert not ran[0].is_alive() and workers.waiting == 0
    done = threading.Event()
    workers.spawn(done.set)  # a new one then
    assert done.wait(5)


def test_a_failing_task_is_logged_and_its_thread_serves_on(
        caplog: pytest.LogCaptureFixture) -> None:
    workers = Workers(idle=10)

    def boom() -> None:
        raise RuntimeError("a bug")

    with caplog.at_level(logging.ERROR):
        workers.spawn(boom)
        _until(lambda: workers.waiting == 1)
    assert "a stream's task failed" in caplog.text
    done = threading.Event()
    workers.spawn(done.set)
    assert done.wait(5)


def test_every_task_runs_once_while_threads_come_and_go() -> None:
    workers = Workers(idle=0.001)  # threads giving up while tasks are promised to them
    counts = [0] * 400
    lock = threading.Lock()

    def task(i: int) -> None:
        with lock:
            counts[i] += 1

    def spawner(start: int) -> None:
        for i in range(start, 400, 4):
            workers.spawn(lambda i=i: task(i))  # type: ignore[misc]
            if i % 16 == 0:
                time.sleep(0.002)

    spawners = [threading.Thread(target=spawner, args=(s,)) for s in range(4)]
    for thread in spawners:
        thread.start()
    for thread in spawners:
        thread.join()
    _until(lambda: sum(counts) == 400)
    assert set(counts) == {1}
