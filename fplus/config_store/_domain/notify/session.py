"""One notify/v2 connection's subscriptions, independent of the WebSocket transport.

Committed events are handed to a :class:`NotifySession` by the writer's thread, through
the fan-out thread (:mod:`.fanout`), which turns them into updates while the session waits
(otherwise they are queued for :meth:`NotifySession.run`, the connection's thread, which
also handles the client's requests), re-checking the ACL for each, and puts them as JSON
(ASCII bytes; a response shared by many subscribers is encoded once: :mod:`.encoding`) in
:attr:`NotifySession.outbox`, which sends them. Nothing here waits for the client: a client
that does not keep up overflows the outbox (or the events waiting) and its session ends
(:class:`FellBehind`); the transport closes the connection with the reason.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from fplus.serving.notify.protocol import (
    Request,
    RequestRefused,
    dispatch,
    over_connection_cap,
    parse_request,
)
from fplus.serving.notify.wire import dumps, reply

from ..common.events import Event, Resynced
from ..store import Store
from .base import Sub
from .encoding import encode, plain
from .fanout import FANOUT
from .limits import CredentialsEnded, FellBehind, NotifyLimits, SessionError
from .outbox import Outbox
from .subscriptions import UNPROCESSABLE, reason_of, resume_refused, subscription, unprocessable

log = logging.getLogger(__name__)


def _safe(response: Any) -> Any:
    try:
        dumps(response)
    except UNPROCESSABLE as exc:
        return unprocessable(reason_of(exc))
    return response


def repaired(update: dict[str, Any]) -> str:
    """``update`` as JSON text, each entry whose value cannot be encoded replaced by its
    error response (:func:`unprocessable`), the rest of the update kept."""
    fixed = plain(update)
    if isinstance(fixed.get("children"), dict):
        fixed["children"] = {k: _safe(v) for k, v in fixed["children"].items()}
    if "response" in fixed:
        fixed["response"] = _safe(fixed["response"])
    return dumps(fixed)


class NotifySession:
    """The subscriptions of one authenticated notify/v2 connection.

    ``token`` is the credential the connection was opened with: a revocation of its
    principal's tokens ends the session (:meth:`recheck_credentials`).
    """

    def __init__(self, store: Store, principal: str, token: str,
                 limits: NotifyLimits | None = None,
                 principal_subscriptions: Callable[[str], int] = lambda _: 0) -> None:
        self.store, self.principal = store, principal
        self._principal_subscriptions = principal_subscriptions
        """Live subscriptions of a principal over all its sessions (the registry's count)."""
        self._token = token
        self.limits = limits = limits or NotifyLimits()
        self.outbox = Outbox(limits.queue_bytes, limits.queue_events)
        self.subs: dict[str, Sub] = {}
        self._items: deque[tuple[str, Any]] = deque()
        """What the session's thread has to handle, in order (under ``_cond``)."""
        self._cond = threading.Condition(threading.Lock())  # not an RLock: gevent's is pure Python
        self._busy = False
        """An item (or a batch, in the fan-out thread) is being handled."""
        self._writes_waiting = 0
        self._requests_waiting = 0
        self._behind = False
        self._stopped = False
        self._ends_at: float | None = None

    # -- called from other threads ------------------------------------------------

    def _on_events(self, events: Sequence[Event], number: int) -> None:
        """The event bus's listener (the writer's thread): hand the batch to the fan-out
        thread, never block. A batch is shared by every session, so what a slow session
        holds is counted in batches."""
        with self._cond:
            if self._behind or self._stopped:
                return
            self._writes_waiting += 1
            if self._writes_waiting > self.limits.queue_events:
                self._behind = True
                self._put("behind", None)
                return
        FANOUT.submit(functools.partial(self._fan_out, events, number))

    def _fan_out(self, events: Sequence[Event], number: int) -> None:
        """The fan-out thread: deliver the batch here and now if the session's thread waits
        with nothing to handle; otherwise queue it behind what it handles."""
        with self._cond:
            if self._stopped:
                return
            if self._busy or self._items:
                self._put("events", (events, number))
                return
            self._busy = True
        try:
            self._events((events, number))
        except Exception as exc:  # the session's thread ends the session with it
            with self._cond:
                self._put("ended", exc)
        finally:
            with self._cond:
                self._busy = False
                if self._items:  # came meanwhile: the session's thread waits for us
                    self._cond.notify_all()

    def submit(self, text: str) -> None:
        """Queue a client message (the transport's reader); waits while too many are queued,
        so a client sending faster than its requests are handled is slowed by TCP."""
        with self._cond:
            while self._requests_waiting >= self.limits.pending_requests and not self._stopped:
                self._cond.wait()
            if self._stopped:
                return
            self._requests_waiting += 1
            self._put("request", text)

    def recheck_credentials(self) -> None:
        """The principal's tokens were revoked: re-check this session's (never blocks)."""
        with self._cond:
            self._put("credentials", None)

    def stop(self) -> None:
        """Ask :meth:`run` to return."""
        with self._cond:
            self._stopped = True
            self._put("stop", None)

    def _put(self, kind: str, item: Any) -> None:
        """Queue an item for the session's thread (holding ``_cond``)."""
        self._items.append((kind, item))
        self._cond.notify_all()

    # -- the session's thread -----------------------------------------------------

    def run(self) -> None:
        """Handle requests and events until :meth:`stop`; raises :class:`SessionEnded`
        (a protocol error, a client behind, credentials revoked)."""
        unsubscribe = self.store.core.events.subscribe(self._on_events, interests=())
        try:
            self._check_credentials()  # the session ends when its token does
            while True:
                kind, item = self._next()
                if kind == "stop":
                    return
                if kind == "request":
                    self._handled_request()
                    self._request(item)
                elif kind == "events":
                    self._events(item)
                elif kind == "credentials":
                    self._check_credentials()
                elif kind == "behind":
                    raise FellBehind("notify: subscriber fell behind "
                                     f"(over {self.limits.queue_events} writes waiting)")
                elif kind == "ended":
                    raise item
        finally:
            unsubscribe()
            with self._cond:
                self._stopped = True
                self._cond.notify_all()

    def _next(self) -> tuple[str, Any]:
        """The next item, once the fan-out thread is not delivering here."""
        with self._cond:
            self._busy = False  # done with the last one
            while not self._items or self._busy:
                if self._ends_at is None:
                    self._cond.wait()
                    continue
                left = self._ends_at - time.time()
                if left <= 0:
                    raise CredentialsEnded("notify: credentials expired")
                self._cond.wait(left)
            self._busy = True
            return self._items.popleft()

    def _handled_request(self) -> None:
        with self._cond:
            self._requests_waiting -= 1
            self._cond.notify_all()

    def _events(self, batch: tuple[Sequence[Event], int]) -> None:
        events, number = batch
        with self._cond:
            self._writes_waiting -= 1
        if any(isinstance(e, Resynced) for e in events):
            raise FellBehind("notify: the server reloaded its state; subscribe again")
        for sub in list(self.subs.values()):
            if number > sub.mark:  # earlier batches are in its initial state already
                self._deliver(sub, functools.partial(sub.on_events, events), 200)

    def _check_credentials(self) -> None:
        until = self.store.core.sessions.token_valid_until(self._token)
        if until is None:
            raise CredentialsEnded("notify: credentials revoked")
        self._ends_at = until if self._ends_at is None else min(self._ends_at, until)

    def _deliver(self, sub: Sub, compute: Callable[[], list[dict]], status: int) -> None:
        """Send ``sub``'s updates from ``compute()``; data that breaks it is that
        subscription's error, not the session's."""
        try:
            updates = compute()
        except UNPROCESSABLE as exc:
            log.warning("notify: a %s subscription hit data it cannot process: %s",
                        type(sub).__name__, reason_of(exc))
            updates = [{"response": unprocessable(reason_of(exc))}]
        for update in updates:
            whole = {"status": status, **update, "uuid": sub.uuid}
            try:
                data, digest = encode(whole)
            except UNPROCESSABLE:
                data = repaired(whole).encode("ascii")
                digest = hashlib.blake2b(data, digest_size=16).digest()
            if digest != sub.last:
                sub.last = digest
                self.outbox.put(data)

    def _put_text(self, text: str) -> None:
        self.outbox.put(text.encode("ascii"))

    def _reply(self, sub_uuid: str, status: int, error: str | None = None) -> None:
        self._put_text(reply(sub_uuid, status, error))

    def _request(self, text: str) -> None:
        try:
            sub_uuid, req = parse_request(text)
        except RequestRefused as exc:
            raise SessionError(str(exc)) from None
        dispatch(sub_uuid, req, self.subs, self._put_text, self._open)

    def _open(self, sub_uuid: str, req: Request) -> None:
        """Every request but CLOSE (:func:`fplus.serving.notify.protocol.dispatch`)."""
        full = over_connection_cap(sub_uuid, self.subs, self.limits.max_subscriptions)
        if full:
            self._reply(sub_uuid, 429, full)
            return
        most = self.limits.max_principal_subscriptions
        if sub_uuid not in self.subs and self._principal_subscriptions(self.principal) >= most:
            self._reply(sub_uuid, 429, f"too many subscriptions for this principal (max {most})")
            return
        refused = resume_refused(req)
        if refused:
            self._reply(sub_uuid, 400, refused)
            return
        sub, status = subscription(self, sub_uuid, req)
        if sub is None:
            self._reply(sub_uuid, status)
            return
        self.subs[sub_uuid] = sub
        core = self.store.core
        with core.order:  # between two event batches: none older than the initial state
            core.events.add_interest(self._on_events, *sub.interests)
            sub.mark = core.events.published
            self._deliver(sub, sub.initial, 201)
