"""Group commit: writes queued behind each other share one PostgreSQL transaction.

Writes are serialised, so under load each waits for the one before it: its ``BEGIN``, lock,
catch-up, change-log insert, ``NOTIFY`` and ``COMMIT`` all cost round trips and database
work that a queue of writes can share. A write whose caller allows it
(:meth:`~.queries.Writer.commit_later`) and that sees another write queued leaves its
transaction open: the next write joins it behind a ``SAVEPOINT`` (so its failure undoes only
its own statements), and the last of the group commits for all. Nobody is answered before
the commit: a deferred write's caller waits on its :class:`Outcome`, and the committer runs
the deferred writes' ``after_commit`` in their order before its own, so events keep the
order of the changes. A failure of the shared transaction itself (the database lost) fails
every write in the group: none of them is half-written.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field

from .errors import StorageUnavailable, first_line
from .pgsql import PgTransactionSql
from .rows import Change

log = logging.getLogger(__name__)

MAX_DEFERRED = 16
"""Writes a group may hold back before one commits them all (bounds the first's wait)."""


class Outcome:
    """A deferred write's result, known when its group commits or fails."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._error: BaseException | None = None

    def settle(self, error: BaseException | None = None) -> None:
        """Record the group's result (``error``: it failed) and wake the waiter."""
        self._error = error
        self._done.set()

    def wait(self, timeout: float) -> bool:
        """Whether the group finished within ``timeout``; raises the group's error."""
        if not self._done.wait(timeout):
            return False
        if self._error is not None:
            raise self._error
        return True


@dataclass
class Deferred:
    """A write of the group that succeeded and waits for the commit."""

    changes: list[Change]
    after_commit: Callable[[], None]
    outcome: Outcome = field(default_factory=Outcome)


@dataclass
class Group:
    """One open transaction, its connection, and the writes waiting for its commit."""

    sql: PgTransactionSql
    """The statements of every write of the group."""
    resources: ExitStack
    """Closing it returns the connection to the pool."""
    deferred: list[Deferred] = field(default_factory=list)
    savepoints: int = 0

    def next_savepoint(self) -> str:
        """A fresh savepoint name for the next write to join."""
        self.savepoints += 1
        return f"fplus_w{self.savepoints}"

    def changes(self) -> list[Change]:
        """What the deferred writes changed, in order."""
        return [change for member in self.deferred for change in member.changes]

    def committed(self) -> None:
        """Run the deferred writes' ``after_commit`` in order, then answer them."""
        for member in self.deferred:
            try:
                member.after_commit()
            except Exception:
                log.exception("after a group commit")
        for member in self.deferred:
            member.outcome.settle()

    def failed(self, error: BaseException) -> None:
        """Answer every deferred write: not committed, because of ``error`` (503: retry)."""
        reason = first_line(error) or type(error).__name__
        for member in self.deferred:
            member.outcome.settle(StorageUnavailable(
                f"the write was not committed (its group's transaction failed: {reason})"))
