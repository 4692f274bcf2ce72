"""Following other replicas' writes: the change log of :mod:`.storage`, read in order.

``LISTEN`` only wakes the reader early; every wait also times out, and each read asks for
everything after the reader's cursor, so a notification lost with a dropped connection
delays an update by at most one wait, never loses it. Old entries are pruned; a reader
whose cursor is older than the pruned point has missed changes and must reload.

A replica alone on the database would only wake itself: its listener counts the listeners
(:data:`LISTENER`, at most every :data:`COUNT_EVERY_S`) and, while it is the only one, the
storage's commits skip ``NOTIFY`` (:attr:`.storage.PostgresStorage.others_listening`). A
replica that starts listening meanwhile reads those commits at its next wait's timeout.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import psycopg

from ..errors import StorageUnavailable
from ..queries import Reader
from ..rows import Change
from .statements import pg, translated
from .storage import CHANNEL, PostgresStorage

_READ = ("SELECT p.upto, c.seq, c.origin, c.kind, c.a, c.b, c.etag FROM change_log_pruned p "
         "LEFT JOIN LATERAL (SELECT * FROM change_log WHERE seq > ? ORDER BY seq LIMIT ?) c "
         "ON TRUE WHERE p.id = 1 ORDER BY c.seq")
"""The pruned point and the changes after a cursor in one statement (one snapshot, one
round trip: a write runs it each time it takes the lock)."""

LISTENER = "fplus-config-store-feed"
"""The ``application_name`` of every replica's listening connection."""
_LISTENERS = ("SELECT count(*) FROM pg_stat_activity "
              "WHERE datname = current_database() AND application_name = %s")
COUNT_EVERY_S = 1.0
"""How often a listener counts the others (so how long a new replica may wait, at most, for
the first notifications of the replicas already running: its wait times out first)."""

KEEP_S = 600.0
"""How long change log entries are kept (a replica cut off longer reloads everything)."""


@dataclass(frozen=True)
class Batch:
    """Changes after a cursor: ``(seq, origin, change)`` in commit order, and whether the
    cursor was older than the pruned point (some changes are gone: reload)."""

    changes: list[tuple[int, str, Change]]
    gap: bool

    @property
    def cursor(self) -> int | None:
        """The last seq read, or None if nothing was."""
        return self.changes[-1][0] if self.changes else None


def position(reader: Reader) -> int:
    """The newest seq as ``reader`` (a snapshot) sees it."""
    row = reader.sql.one("SELECT coalesce(max(seq), 0) FROM change_log")
    return int(row[0]) if row else 0


class ChangeFeed:
    """Reads the change log of ``storage`` after a cursor, and waits for news."""

    def __init__(self, storage: PostgresStorage, batch: int = 1000,
                 count_every_s: float = COUNT_EVERY_S) -> None:
        self.storage = storage
        self.batch = batch
        self.count_every_s = count_every_s
        self._listener: psycopg.Connection | None = None
        self._counted_at = 0.0

    def read(self, cursor: int) -> Batch:
        """Up to :attr:`batch` changes after ``cursor``."""
        return self.batch_of(cursor, self.storage.reader().sql.rows(_READ,
                                                                   (cursor, self.batch)))

    def query(self, cursor: int) -> tuple[str, tuple[int, int]]:
        """:meth:`read` as a statement (``%s`` placeholders) and its arguments, to run with
        others."""
        return pg(_READ), (cursor, self.batch)

    @staticmethod
    def batch_of(cursor: int, rows: list[tuple]) -> Batch:
        """The :class:`Batch` the rows of :meth:`read`'s statement make."""
        gap = bool(rows) and cursor < int(rows[0][0])
        return Batch([(r[1], r[2], Change(r[3], r[4], r[5], r[6]))
                      for r in rows if r[1] is not None], gap)

    def wait(self, timeout: float) -> None:
        """Return when another replica's write may have committed, or after ``timeout``
        seconds (this store's own writes, announced with its origin, do not wake it).
        Raises :class:`StorageUnavailable` when the database cannot be reached (the next
        call connects again)."""
        try:
            with translated():
                if self._listener is None or self._listener.closed:
                    self._listener = self.storage.connect(application_name=LISTENER)
                    self._listener.execute(f"LISTEN {CHANNEL}")
                    self._counted_at = 0.0
                self._count_listeners(self._listener)
                for note in self._listener.notifies(timeout=timeout):
                    if note.payload != self.storage.origin:
                        break
        except StorageUnavailable:
            self.close()
            raise

    def _count_listeners(self, listener: psycopg.Connection) -> None:
        """Tell the storage whether another replica listens (checked again after
        :attr:`count_every_s`)."""
        now = time.monotonic()
        if now - self._counted_at < self.count_every_s:
            return
        row = listener.execute(_LISTENERS, (LISTENER,)).fetchone()
        self.storage.others_listening = row is None or int(row[0]) > 1
        self._counted_at = now

    def prune(self, keep_s: float = KEEP_S) -> int:
        """Delete entries older than ``keep_s`` seconds; how many."""
        with self.storage.write() as w:
            row = w.sql.one("SELECT max(seq) FROM change_log "
                            "WHERE at < now() - make_interval(secs => ?)", (keep_s,))
            if not row or row[0] is None:
                return 0
            w.sql.count("UPDATE change_log_pruned SET upto = greatest(upto, ?) WHERE id = 1",
                        (row[0],))
            return w.sql.count("DELETE FROM change_log WHERE seq <= ?", (row[0],))

    def close(self) -> None:
        """Drop the listening connection (the storage notifies again: nobody counts)."""
        self.storage.others_listening = True
        if self._listener is not None:
            with contextlib.suppress(psycopg.Error):
                self._listener.close()
            self._listener = None
