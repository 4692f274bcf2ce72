"""Group commit: callers that arrive while a commit is in progress share the next one.

The first caller becomes the leader and commits its own change set. Callers arriving meanwhile
queue up and sleep; when the leader is done, one of them leads the next commit for the whole
queue (in arrival order) and every caller in that batch gets the same result.

A leader takes its turn first (``turn``: another process committing to the same branch
holds it meanwhile) and only then the batch, so whoever arrived while it waited shares the
commit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence

from fplus.git.repo._build import Pending
from fplus.git.repo.changes import ChangeSet, WriteResult

CommitBatch = Callable[[Sequence[Pending]], list[WriteResult | Exception]]
Turn = contextlib.AbstractContextManager[object]


class _Ticket:
    __slots__ = ("changes", "error", "message", "result")

    def __init__(self, changes: ChangeSet, message: str) -> None:
        self.changes, self.message = changes, message
        self.result: WriteResult | None = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.result is not None or self.error is not None


class GroupCommitter:
    """Serialises ``commit_batch`` calls and batches whoever is waiting for one."""

    gather_wait = 0.002
    """Seconds a leader waits at most for callers still arriving (see :meth:`_gather`)."""
    gather_step = 0.0003
    """Seconds it waits for the next one to arrive before it commits what it has."""

    def __init__(self, commit_batch: CommitBatch, max_batch: int = 512,
                 turn: Callable[[], Turn] = contextlib.nullcontext) -> None:
        """``turn()``: held by the leader from before it takes its batch until the batch is
        committed (:class:`fplus.git.bare.turns.Turns` across processes; none by default)."""
        self._commit_batch = commit_batch
        self._turn = turn
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Ticket] = []
        self._busy = False

    def submit(self, changes: ChangeSet, message: str) -> WriteResult:
        """Commit ``changes`` (possibly together with others) and return the outcome."""
        if not isinstance(changes, ChangeSet):
            raise TypeError(f"expected a ChangeSet, not {type(changes).__name__}")
        ticket = _Ticket(changes, message)
        with self._cond:
            self._queue.append(ticket)
        while True:
            with self._cond:
                while self._busy and not ticket.done:
                    self._cond.wait()
                if ticket.done:
                    break
                self._busy = True
            try:
                with self._turn():
                    self._gather()
                    with self._cond:
                        batch = self._queue[:self._max_batch]
                        del self._queue[:self._max_batch]
                    self._lead(batch)
            except BaseException:
                # interrupted before leading (a timeout, the greenlet killed): leave, and let
                # one of those still queued lead
                with self._cond:
                    if ticket in self._queue:
                        self._queue.remove(ticket)
                raise
            finally:
                self._done()  # only once the turn is given back: the next leader takes it anew
        if ticket.error is not None:
            raise ticket.error
        assert ticket.result is not None
        return ticket.result

    def _gather(self) -> None:
        """Yield before taking the batch, so callers already running (threads, or greenlets
        whose requests are parsed) queue up and share this commit; while more keep coming,
        wait a little longer (at most ``gather_wait`` seconds in all)."""
        time.sleep(0)
        deadline = time.monotonic() + self.gather_wait
        queued = len(self._queue)
        while queued > 1 and time.monotonic() < deadline:
            time.sleep(self.gather_step)
            if len(self._queue) == queued:
                return
            queued = len(self._queue)

    def _lead(self, batch: list[_Ticket]) -> None:
        try:
            results = self._commit_batch([(t.changes, t.message) for t in batch])
            for t, r in zip(batch, results, strict=True):
                if isinstance(r, Exception):
                    t.error = r
                else:
                    t.result = r
        except BaseException as exc:
            for t in batch:
                t.error = exc

    def _done(self) -> None:
        with self._cond:
            self._busy = False
            self._cond.notify_all()
