"""Following the writes of other replicas on a shared database.

Each replica keeps the object graph and grants in memory and publishes change events to
its notify sessions. When the storage is shared (:attr:`Storage.replicated`), a
:class:`Replication` loop reads the change log after its cursor (woken by ``NOTIFY``, and at
least every :attr:`Replication.poll_s`), skips the changes this replica made itself, and
for each other one re-reads the current state by id: the object, the membership, the grant
or the entry. An entry's change is published only if the entry still has that change's
etag (a later change will publish the later value), so subscribers never see a value go
back in time. A write catches up first, once it holds the write lock (so its checks see
every earlier commit of every replica, and nothing is applied while it changes memory).
A replica that fell behind the pruned part of the log reloads everything and
ends its notify sessions (clients subscribe again and get the full state).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ... import uuids
from ..._storage import Change, Reader, StorageUnavailable
from ..common.events import ConfigChanged, Event, Resynced, StructureChanged
from ..common.jsonvalue import parse
from .graph import Obj
from .state import Core

if TYPE_CHECKING:
    # psycopg only where PostgreSQL is used
    from ..._storage.postgres.change_feed import Batch
    from ..._storage.postgres.storage import PostgresStorage

log = logging.getLogger(__name__)

PRUNE_EVERY_S = 60.0


class Replication:
    """Applies other replicas' committed changes to ``core``; :meth:`start` in the serving
    process (a thread: a greenlet under gevent)."""

    def __init__(self, core: Core, storage: PostgresStorage, poll_s: float = 1.0) -> None:
        """``storage``: ``core``'s own, shared with the other replicas."""
        from ..._storage.postgres.change_feed import ChangeFeed  # PostgreSQL only

        self.core = core
        self.poll_s = poll_s
        self.feed = ChangeFeed(storage)
        self.origin: str = storage.origin
        self.cursor = 0
        self._reload()
        storage.follower = self
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lost = False
        self._pruned_at = 0.0

    def start(self) -> None:
        """Follow the log in the background until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="replication", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop."""
        self._stop.set()
        self.feed.close()

    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                self.catch_up()
                self._prune()
                self.feed.wait(self.poll_s)
                if self._lost:
                    log.warning("replication: the database is reachable again")
                    self._lost = False
                backoff = 0.5
            except StorageUnavailable as exc:
                if not self._lost:
                    log.warning("replication: %s; retrying", exc)
                    self._lost = True
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
            except Exception:
                log.exception("replication: applying changes failed; retrying")
                self._stop.wait(backoff)

    def catch_up(self) -> int:
        """Apply every change committed after the cursor; how many were read."""
        with self.core.order:
            return self._catch_up()

    def changes_query(self) -> tuple[str, tuple[int, int]]:
        """For a write taking the lock: the statement reading what this replica lacks, and
        its arguments."""
        return self.feed.query(self.cursor)

    def committed_before(self, rows: list[tuple]) -> None:
        """A write holds the lock (and :attr:`Core.order`): apply what was committed first."""
        with self.core.order:
            self._catch_up(self.feed.batch_of(self.cursor, rows))

    def wrote(self, seq: int) -> None:
        """This replica's write committed as ``seq``, right after everything it had caught up
        with (it held the lock): nothing lies between, so the cursor moves past it."""
        with self.core.order:
            self.cursor = max(self.cursor, seq)

    def _catch_up(self, first: Batch | None = None) -> int:
        if self.core.stale:
            self.core.reload()
            first = None  # read again after the reload
        total = 0
        while True:
            batch, first = (first or self.feed.read(self.cursor)), None
            if batch.gap:
                self._resync()
                continue
            if not batch.changes:
                return total
            theirs = [c for _, origin, c in batch.changes if origin != self.origin]
            if theirs:
                self._apply(theirs)
            self.cursor = batch.cursor or self.cursor
            total += len(batch.changes)
            if len(batch.changes) < self.feed.batch:
                return total  # that was the end when it was read

    def _reload(self) -> None:
        """Load the graph and grants, and the cursor they correspond to, from one snapshot."""
        from ..._storage.postgres.change_feed import position

        with self.core.storage.snapshot() as reader:
            self.core.load(reader)
            self.cursor = position(reader)

    def _resync(self) -> None:
        log.warning("replication: changes were pruned before this replica read them; "
                    "reloading everything and ending notify sessions")
        self._reload()
        self.core.sessions.revoke_all()
        self.core.events.publish([Resynced()])  # under the order lock: catch_up holds it

    def _apply(self, changes: list[Change]) -> None:
        core, reader = self.core, self.core.storage.reader()
        events: list[Event] = []
        structure = False
        for change in changes:
            if change.kind == "config":
                events += _entry_event(reader, change)
            elif change.kind == "object":
                events.append(self._object(reader, change.a))
                structure = True
            elif change.kind == "member":
                core.graph.set_member(change.a, change.b, reader.is_member(change.a, change.b))
                structure = True
            elif change.kind == "subclass":
                core.graph.set_subclass(change.a, change.b,
                                        reader.is_subclass(change.a, change.b))
                structure = True
            elif change.kind == "grant":
                core.acl.remove([change.a])
                grant = reader.grant(change.a)
                if grant is not None:
                    core.acl.add(grant)
        if structure:
            core.acl.invalidate()
            events.append(StructureChanged())
        core.committed(events, changes)

    def _object(self, reader: Reader, uuid: str) -> ConfigChanged:
        row = reader.object(uuid)
        if row is None:
            self.core.graph.remove(uuid)
            return ConfigChanged(uuids.App.Registration, uuid, None, None)
        obj = Obj.of(row)
        self.core.graph.put(obj)
        return ConfigChanged(uuids.App.Registration, uuid, obj.registration(), obj.etag)

    def _prune(self) -> None:
        now = time.monotonic()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            with self.core.order:  # a write: the lock order of every write
                self.feed.prune()


def _entry_event(reader: Reader, change: Change) -> list[Event]:
    """The event for an entry's change, if the entry still is as that change left it."""
    stored = reader.get_config(change.a, change.b)
    if change.etag is None:
        return [ConfigChanged(change.a, change.b, None, None)] if stored is None else []
    if stored is None or stored[1] != change.etag:
        return []
    return [ConfigChanged(change.a, change.b, parse(stored[0]), change.etag)]
