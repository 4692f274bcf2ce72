"""The leader's rollout loop: follow every kind's inputs and the rollouts' states over
notify/v2, and make each kind's pass (:mod:`.kind`; by default :class:`.fleet_kind.FleetKind`
then :class:`.cluster_kind.ClusterKind`). The loop is the states' only writer, so a new
leader resumes a rollout where the last one left it.

Each input is a SEARCH followed as deltas into a :class:`SearchMirror`, so an update costs
what it changed, not the size of the app (10,000 clusters' heartbeats stay cheap). A change
marks the state dirty and one worker thread makes a pass over a copy of the mirrors, so
passes never overlap. The inputs a kind follows only while rolling (the edges' reports, the
setup statuses) cause no pass while no rollout is progressing: a change of theirs is kept.
The loop's own writes come back with the etags it already holds and cause none either.
Nothing is written until all inputs are known: an app the Config Store refuses to show
counts as unknown, not empty, so losing read access never removes a deployment. A failed
pass is retried after ``retry`` seconds; a resync every ``resync`` seconds repairs anything
missed. :meth:`start` and :meth:`stop` follow the leadership.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from fplus.config_store.client import (
    ConfigStoreClient,
    NotifyClient,
    SearchDelta,
    SearchMirror,
)

from .cluster_kind import ClusterKind
from .fleet_kind import FleetKind
from .gates import sooner
from .gates_input import DEFAULT_STALE_AFTER
from .kind import Pass, RolloutKind, Snapshot
from .state import ROLLOUT_APP, is_rolling

log = logging.getLogger(__name__)
T = TypeVar("T")

WRITERS = 8
"""Writes a pass makes at once: each is a few Config Store requests on entries of its own,
so a pass of thousands waits on round trips, not on each other."""


def _notify_client(cs: ConfigStoreClient) -> NotifyClient:
    return NotifyClient(cs, reconnect_delay=(1.0, 3.0))


class RolloutLoop:
    """Keeps every kind's rollouts moving while this replica leads."""

    def __init__(self, cs: ConfigStoreClient, kinds: Sequence[RolloutKind] | None = None, *,
                 notify: Callable[[ConfigStoreClient], NotifyClient] = _notify_client,
                 resync: float = 60.0, retry: float = 5.0, settle: float = 0.2,
                 writers: int = WRITERS, stale_after: float = DEFAULT_STALE_AFTER) -> None:
        self._cs, self._make_notify = cs, notify
        self.kinds: Sequence[RolloutKind] = (
            FleetKind(stale_after), ClusterKind(stale_after)) if kinds is None else kinds
        self.inputs: dict[str, str] = {"rollouts": ROLLOUT_APP}
        """What the loop follows: input name -> app (a SEARCH of each)."""
        for kind in self.kinds:
            self.inputs |= kind.inputs
        self._while_rolling = frozenset().union(*(k.followed_while_rolling
                                                  for k in self.kinds))
        self.resync, self.retry, self.settle = resync, retry, settle
        self.writers = writers
        self._lock = threading.Lock()
        self._mirrors = {key: SearchMirror() for key in self.inputs}
        self._known: set[str] = set()
        """Inputs with a full set delivered and not refused since."""
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._notify: NotifyClient | None = None
        self._thread: threading.Thread | None = None
        self.passes = 0
        """Passes made (for tests and logs)."""

    @property
    def cs(self) -> ConfigStoreClient:
        return self._cs

    def start(self) -> None:
        """Subscribe and start the worker (again after :meth:`stop`: afresh)."""
        with self._lock:
            if self._thread is not None:
                return
            self._mirrors = {key: SearchMirror() for key in self.inputs}
            self._known = set()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                            name="rollouts", daemon=True)
        self._notify = self._make_notify(self.cs)
        with self._lock:  # callbacks wait until the subscriptions are made
            for key, app in self.inputs.items():
                self._notify.search(app, self._callback(key), deltas=True)
        self._thread.start()

    def stop(self) -> None:
        """Unsubscribe and stop the worker (a pass under way finishes its current write)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        self._dirty.set()
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10.0)

    def _callback(self, key: str) -> Callable[[SearchDelta], None]:
        def update(delta: SearchDelta) -> None:
            with self._lock:
                mirror = self._mirrors[key]
                changed = mirror.apply(delta)
                if delta.refused:  # no access, not no entries
                    self._known.discard(key)
                elif delta.full:
                    self._known.add(key)
                # unreadable: entries that exist but cannot be served now
                unknown = key not in self._known or bool(mirror.unreadable)
                wanted = (delta.full or delta.refused or unknown
                          or (changed and (key not in self._while_rolling
                                           or self._rolling())))
            if unknown:
                log.warning("rollouts: the Config Store does not show every entry of %s "
                            "(%s); changing nothing until it does", key, self.inputs[key])
            if wanted:
                self._dirty.set()
        return update

    def _rolling(self) -> bool:
        """Some rollout is progressing, or waits for skipped edges (under the lock)."""
        return any(is_rolling(status)
                   for status in self._mirrors["rollouts"].children.values())

    def snapshot(self) -> Snapshot | None:
        """A copy of the inputs and their etags, or None while any is unknown."""
        with self._lock:
            if self._known != set(self.inputs) or any(m.unreadable
                                                      for m in self._mirrors.values()):
                return None
            return Snapshot({key: dict(m.children) for key, m in self._mirrors.items()},
                            {key: self._etags_of(key) for key in self._mirrors})

    def entry_etags(self, key: str) -> dict[str, str]:
        """The etags of input ``key``'s entries as last delivered or written."""
        with self._lock:
            return self._etags_of(key)

    def _etags_of(self, key: str) -> dict[str, str]:
        return {k: v for k, v in self._mirrors[key].etags.items() if v}

    def _run(self, stop: threading.Event) -> None:
        wait = self.resync
        while not stop.is_set():
            self._dirty.wait(wait)
            if stop.is_set():
                return
            stop.wait(self.settle)  # let related changes arrive together
            self._dirty.clear()
            found = self.snapshot()
            if found is None:
                wait = self.resync
                continue
            ok, wake_in = self.make_pass(found, stop)
            self.passes += 1
            wait = self.resync if ok else self.retry
            if wake_in is not None:  # a rollout's pause ends: look again then
                wait = min(wait, wake_in + 0.1)

    def make_pass(self, snapshot: Snapshot, stop: threading.Event) -> Pass:
        """Every kind's pass, in turn; ``(ok, seconds until a rollout's pause ends)``."""
        ok, wake_in = True, None
        for kind in self.kinds:
            done = kind.make_pass(snapshot, self, stop)
            ok, wake_in = ok and done.ok, sooner(wake_in, done.wake_in)
        return Pass(ok, wake_in)

    def each(self, work: Callable[[T], bool], items: Sequence[T],
             stop: threading.Event | None) -> bool:
        """``work`` on every item, ``writers`` at a time, until ``stop``; all succeeded?"""
        def guarded(item: T) -> bool:
            return True if stop is not None and stop.is_set() else work(item)

        if len(items) <= 1 or self.writers <= 1:
            return all([guarded(item) for item in items])
        with ThreadPoolExecutor(min(self.writers, len(items)),
                                thread_name_prefix="rollout-write") as pool:
            return all(list(pool.map(guarded, items)))

    def put_status(self, rollout: str, status: Mapping[str, object] | None) -> None:
        """Write a rollout's state (None: remove it) and take it as read, so the next pass
        does not begin the rollout again from the state before it while the notify/v2
        update is on its way."""
        if status is None:
            self.cs.delete_config(ROLLOUT_APP, rollout)
        else:
            self.cs.put_config(ROLLOUT_APP, rollout, status)
        self.seen_entry("rollouts", rollout, status)

    def seen_entry(self, key: str, uuid: str, value: object, etag: str | None = None) -> None:
        """Take an entry of input ``key`` written by this loop (None: removed) as read, with
        its new ``etag`` if known, until the notify/v2 update brings it."""
        with self._lock:
            if key not in self._known:
                return
            mirror = self._mirrors[key]
            if value is None:
                mirror.children.pop(uuid, None)
                mirror.etags.pop(uuid, None)
                return
            mirror.children[uuid] = value
            if etag:
                mirror.etags[uuid] = etag
            else:
                mirror.etags.pop(uuid, None)
