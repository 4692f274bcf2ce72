"""The store's shared state and its write transactions.

A :class:`Tx` writes storage and the in-memory graph together and collects change
events; they are published only after the commit. A failed transaction reloads the graph
and the grants from storage, so memory never keeps a rolled-back change.

A :class:`Batch` (:meth:`Core.batch`) runs several operations in one transaction: each
operation's own :meth:`Core.transaction` joins it, and what each changed is published
after the commit as if it had committed alone. A read-only batch (:meth:`Core.read_batch`)
reads through one snapshot, outside the writes' order.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ... import uuids
from ..._storage import (
    READ_NOTHING,
    Change,
    Outcome,
    Reader,
    ReadFirst,
    Storage,
    StorageUnavailable,
    Writer,
)
from ..common.events import AuthChanged, Event, EventBus
from .acl import Acl
from .credentials import Sessions
from .graph import Graph
from .tx import Tx

GROUP_WAIT_S = 1.0
"""How long a write whose commit the storage held back waits for the writes behind it to
commit it, before committing it itself."""
AUTH_KINDS = frozenset({"grant", "principal", "identity"})
SESSION_KINDS = frozenset({"principal", "token"})
"""Changes that may end a principal's tokens (a password change, a deletion, a sign-out)."""
"""The storage changes that publish :class:`AuthChanged`."""


class BatchRolledBack(Exception):
    """Raised inside a batch's storage write to roll it back (never leaves :meth:`Core.batch`)."""


class Batch:
    """Operations sharing one write transaction (:meth:`Core.batch`).

    Each operation's :meth:`Core.transaction` (and :meth:`Core.raw_write`, e.g. an audit
    row) joins the batch's: it writes through the same :class:`Writer`, and its events and
    changes are kept apart to be published after the commit, one operation after another.
    :meth:`Core.reader` reads through the batch's transaction too, so a later operation
    sees what an earlier one wrote.
    """

    def __init__(self, core: Core, writer: Writer) -> None:
        self.core = core
        self.writer = writer
        self.owner = threading.get_ident()
        self.done: list[Tx] = []
        """The operations' transactions that ended well, in order."""
        self.marks: list[int] = []
        """Where each of :attr:`done` ends in the writer's changes."""
        self.schemas: set[str] = set()
        """The apps whose ConfigSchema entry an operation wrote."""
        self.memory_changed = False
        """Whether an operation changed the graph or grants in memory (a rollback reloads)."""
        self.rollback = False
        """Set by the caller (or by a failed operation that wrote): roll the batch back."""

    def owned(self) -> bool:
        """Whether the calling thread (greenlet) runs the batch."""
        return self.owner == threading.get_ident()

    @contextmanager
    def operation(self) -> Iterator[Tx]:
        """One operation's transaction inside the batch's. If it raises having written
        something, the batch can only be rolled back (its own statements are not undone
        alone)."""
        tx = Tx(self.core.graph, self.core.acl, self.writer)
        start = len(self.writer.changes)
        try:
            yield tx
        except BaseException:
            if len(self.writer.changes) > start or tx.events or tx.acl_dirty:
                self.rollback = True
            self.memory_changed |= tx.acl_dirty
            raise
        self._apply(tx)
        self.schemas.update(c.b for c in self.writer.changes[start:]
                            if c.kind == "config" and c.a == uuids.App.ConfigSchema)
        self.done.append(tx)
        self.marks.append(len(self.writer.changes))

    def _apply(self, tx: Tx) -> None:
        """An operation's grants into the ACL now, as its own commit would have put them:
        later operations are checked as they would be when sent one by one (other requests
        see them too until the batch ends, as they see its graph changes; a rollback
        reloads both)."""
        tx.apply_acl()
        self.memory_changed |= tx.acl_dirty or bool(tx.added_grants or tx.removed_grants)

    def publish(self) -> None:
        """After the commit: each operation's events and changes, in order (as separate
        commits would have published them)."""
        start = 0
        for tx, end in zip(self.done, self.marks, strict=True):
            self.core.committed(tx.events, self.writer.changes[start:end])
            start = end


class Core:
    """Storage, the in-memory graph, grants, sessions and the event bus."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.graph = Graph()
        self.acl = Acl(self.graph)
        self.sessions = Sessions(storage, self.raw_write)
        self.events = EventBus()
        self.order = threading.RLock()
        """Held from a write's start until its events are published (a write whose commit
        the storage held back leaves them to the write that commits it, which publishes
        them in order before its own), and while another replica's changes are applied:
        event batches follow the order of the state they report, and a notify
        subscription's initial read sits between two batches."""
        self._writers_waiting = 0
        self._counting = threading.Lock()
        storage.queued = lambda: self._writers_waiting > 0
        self.stale = False
        """True when memory may hold a change the database does not (a write whose rollback
        could not be followed by a reload): the next :meth:`reload` clears it."""
        self._batch: Batch | None = None
        """The batch being run (by the thread holding :attr:`order`), if any."""
        self._snapshots: dict[int, Reader] = {}
        """The read-only batches being run (:meth:`read_batch`): their snapshot by thread."""
        self.reload()

    def reader(self) -> Reader:
        """Queries outside a write; inside a batch, through its transaction (what earlier
        operations of the batch wrote is seen); inside a :meth:`read_batch`, through its
        snapshot."""
        return (self.batch_writer() or self._snapshots.get(threading.get_ident())
                or self.storage.reader())

    def batch_writer(self) -> Writer | None:
        """The write of the batch the calling thread runs, if any."""
        batch = self._joined()
        return batch.writer if batch is not None else None

    def batch_schema(self, app: str) -> Reader | None:
        """Where to read ``app``'s ConfigSchema entry when the batch the calling thread runs
        has written it (not yet committed), else None."""
        batch = self._joined()
        return batch.writer if batch is not None and app in batch.schemas else None

    def _joined(self) -> Batch | None:
        """The batch the calling thread runs, if any."""
        batch = self._batch
        return batch if batch is not None and batch.owned() else None

    def reload(self) -> None:
        """Load the graph and grants from storage."""
        with self.storage.snapshot() as reader:
            self.load(reader)

    def load(self, reader: Reader) -> None:
        """Load the graph and grants through ``reader`` (a snapshot)."""
        self.graph.load(reader.objects(), reader.memberships(), reader.subclasses())
        self.acl.load(reader.grants())
        self.stale = False

    @contextmanager
    def transaction(self, entry: tuple[str, str] | None = None) -> Iterator[Tx]:
        """A serialised write; events are published after the commit. ``entry``:
        ``(app, object)`` of an entry the write reads first (read as it begins). A
        :meth:`Tx.shareable` write lets the storage commit it with the writes queued behind
        it (:meth:`~config_store._storage.Writer.commit_later`); it returns once committed.
        Inside a :meth:`batch`, the write joins the batch's transaction."""
        batch = self._joined()
        if batch is not None:
            with batch.operation() as joined:
                yield joined
            return
        tx: Tx | None = None
        with self._in_order():
            try:
                with self.storage.write(entry) as writer:
                    tx = Tx(self.graph, self.acl, writer)
                    yield tx
                    if tx.shareable():
                        writer.commit_later(functools.partial(
                            self.committed, tx.events, writer.changes))
            except BaseException:
                if tx is not None and tx.acl_dirty:
                    self._forget_rolled_back()
                raise
            if writer.outcome is None:
                tx.apply_acl()
                self.committed(tx.events, writer.changes)
        if writer.outcome is not None:
            self._wait_for(writer.outcome)

    @contextmanager
    def raw_write(self) -> Iterator[Writer]:
        """A storage write outside the graph (tokens, upkeep), in the same lock order as
        :meth:`transaction`: the order lock first, then the storage's. Inside a
        :meth:`batch`, the batch's transaction."""
        batch = self._joined()
        if batch is not None:
            yield batch.writer
            return
        with self._in_order(), self.storage.write() as writer:
            yield writer

    @contextmanager
    def batch(self, first: ReadFirst = READ_NOTHING) -> Iterator[Batch]:
        """One write transaction for several operations (see :class:`Batch`): committed
        when the block ends, unless it raises or sets :attr:`Batch.rollback`; nothing of a
        rolled-back batch is published. ``first``: what the operations will read (read as
        the transaction begins)."""
        with self._in_order():
            batch: Batch | None = None
            try:
                with self.storage.write(first=first) as writer:
                    batch = self._batch = Batch(self, writer)
                    try:
                        yield batch
                    finally:
                        self._batch = None
                    if batch.rollback:
                        raise BatchRolledBack
            except BaseException as exc:
                if batch is not None and batch.memory_changed:
                    self._forget_rolled_back()
                if not isinstance(exc, BatchRolledBack):
                    raise
                return
            batch.publish()

    @contextmanager
    def read_batch(self, first: ReadFirst = READ_NOTHING) -> Iterator[None]:
        """Several reads that all see one state of the database: :meth:`reader` reads
        through one snapshot on the calling thread (greenlet) until the block ends. No write
        begins and no writer is waited for (a write asked meanwhile runs as alone).
        ``first``: what the reads will be (read as the snapshot begins)."""
        ident = threading.get_ident()
        with self.storage.snapshot(first) as reader:
            self._snapshots[ident] = reader
            try:
                yield
            finally:
                del self._snapshots[ident]

    @contextmanager
    def _in_order(self) -> Iterator[None]:
        """Hold :attr:`order` as a writer: while one waits for it, the storage knows more
        writes are coming."""
        with self._counting:
            self._writers_waiting += 1
        try:
            self.order.acquire()
        finally:
            with self._counting:
                self._writers_waiting -= 1
        try:
            yield
        finally:
            self.order.release()

    def _wait_for(self, outcome: Outcome) -> None:
        """Wait for a held-back commit; if the writes that were coming never came to commit
        it, commit it here."""
        while not outcome.wait(GROUP_WAIT_S):
            with self.order, contextlib.suppress(StorageUnavailable):  # the outcome says
                self.storage.flush()

    def committed(self, events: list[Event], changes: list[Change]) -> None:
        """After a commit (this replica's or another's): end what changed principals
        obtained, and publish ``events``."""
        for principal in dict.fromkeys(c.a for c in changes if c.kind in SESSION_KINDS):
            self.sessions.revoke(principal)
        if any(c.kind in AUTH_KINDS for c in changes):
            events = [*events, AuthChanged()]
        self.events.publish(events)

    def _forget_rolled_back(self) -> None:
        """Memory saw changes that were rolled back: reload, or say it must be reloaded."""
        try:
            self.reload()
        except StorageUnavailable:
            self.stale = True
