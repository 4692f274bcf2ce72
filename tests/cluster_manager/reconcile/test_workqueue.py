"""KeyedWorkQueue: one worker per key at a time, coalesced resubmissions, back-off, stop."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from fplus.cluster_manager.reconcile.workqueue import KeyedWorkQueue
from harness.stack import wait_for


class Recorder:
    """A handler that records runs and can hold a key until released or fail it N times."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.running: Counter[str] = Counter()
        self.overlaps = 0
        self.hold: dict[str, threading.Event] = {}
        self.failures: Counter[str] = Counter()
        self.started: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def __call__(self, key: str) -> None:
        with self._lock:
            self.running[key] += 1
            self.overlaps += self.running[key] > 1
            self.runs.append(key)
        self.started.setdefault(key, threading.Event()).set()
        try:
            if key in self.hold:
                self.hold[key].wait(5)
            if self.failures[key] > 0:
                self.failures[key] -= 1
                raise RuntimeError(f"{key} failed")
        finally:
            with self._lock:
                self.running[key] -= 1


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def queue(recorder: Recorder) -> Iterator[KeyedWorkQueue]:
    q = KeyedWorkQueue(recorder, workers=4, backoff_initial=0.05, backoff_max=0.2)
    q.start()
    yield q
    q.stop()


def test_each_submitted_key_is_handled(queue: KeyedWorkQueue, recorder: Recorder) -> None:
    for key in "abc":
        queue.submit(key)
    wait_for(lambda: sorted(recorder.runs) == ["a", "b", "c"], 5)
    wait_for(lambda: queue.depth() == 0, 5)


def test_a_key_submitted_while_running_runs_once_more_after(queue: KeyedWorkQueue,
                                                            recorder: Recorder) -> None:
    recorder.hold["a"] = threading.Event()
    queue.submit("a")
    recorder.started.setdefault("a", threading.Event()).wait(5)
    for _ in range(5):  # coalesced into one more run
        queue.submit("a")
    assert queue.depth() == 1
    recorder.hold["a"].set()
    wait_for(lambda: recorder.runs == ["a", "a"] and queue.depth() == 0, 5)
    time.sleep(0.05)
    assert recorder.runs == ["a", "a"] and recorder.overlaps == 0


def test_one_key_is_never_handled_by_two_workers(queue: KeyedWorkQueue,
                                                 recorder: Recorder) -> None:
    for _ in range(200):
        queue.submit("same")
        queue.submit("other")
    wait_for(lambda: queue.depth() == 0 and not any(recorder.running.values()), 5)
    assert recorder.overlaps == 0


def test_a_failing_key_is_retried_with_back_off(queue: KeyedWorkQueue,
                                                recorder: Recorder) -> None:
    recorder.failures["a"] = 2
    start = time.monotonic()
    queue.submit("a")
    wait_for(lambda: recorder.runs.count("a") == 3, 5)
    assert time.monotonic() - start >= 0.05 + 0.1  # two waits: initial, then doubled
    wait_for(lambda: queue.depth() == 0, 5)


def test_a_new_submission_cancels_the_back_off(recorder: Recorder) -> None:
    q = KeyedWorkQueue(recorder, workers=1, backoff_initial=30, backoff_max=30)
    q.start()
    try:
        recorder.failures["a"] = 1
        q.submit("a")
        wait_for(lambda: recorder.runs == ["a"] and q.depth() == 1, 5)  # waiting 30 s
        q.submit("a")
        wait_for(lambda: recorder.runs == ["a", "a"] and q.depth() == 0, 5)
    finally:
        q.stop()


def test_stop_ends_the_workers(recorder: Recorder) -> None:
    q = KeyedWorkQueue(recorder, workers=2)
    q.start()
    q.stop()
    time.sleep(0.05)
    q.submit("late")
    time.sleep(0.1)
    assert recorder.runs == []


def test_keys_run_in_the_order_they_became_due(recorder: Recorder) -> None:
    """One worker: the keys run as submitted, a failed one waits out its back-off without
    holding back those submitted after it."""
    q = KeyedWorkQueue(recorder, workers=1, backoff_initial=30, backoff_max=30)
    recorder.failures["k1"] = 1
    for key in ("k1", "k2", "k3", "k4"):  # in name order too: equal times would agree
        q.submit(key)
    q.start()
    try:
        wait_for(lambda: recorder.runs == ["k1", "k2", "k3", "k4"] and q.depth() == 1, 5)
        q.submit("k5")
        wait_for(lambda: recorder.runs[-1] == "k5" and q.depth() == 1, 5)  # k1 still waits
    finally:
        q.stop()


def test_ten_thousand_keys_each_run_once(recorder: Recorder) -> None:
    q = KeyedWorkQueue(recorder, workers=2)
    keys = [f"cluster-{i:05d}" for i in range(10_000)]
    for key in keys:
        q.submit(key)
    q.start()
    try:
        wait_for(lambda: q.depth() == 0 and not any(recorder.running.values()), 30)
        assert sorted(recorder.runs) == keys and recorder.overlaps == 0
    finally:
        q.stop()
