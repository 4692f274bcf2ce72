"""notify/v2 subscriptions, independent of the WebSocket transport (reference §1.8).

A :class:`NotifySession` belongs to one authenticated connection. Committed events are
queued to it by the writer's thread; :meth:`NotifySession.run` (the connection's thread)
turns them into updates, re-checking the ACL for each, and hands them to ``send``.

Differences from ACS, all fixes: every update carries the entry's etag; falsy values
(``0``, ``false``, ``""``, ``null``) are reported as values, not 404; a filter never
crashes on arrays or non-object bodies.
"""

from __future__ import annotations

import copy
import json
import queue
import re
from collections.abc import Callable, Sequence
from typing import Any

import json_merge_patch

from .. import uuids
from . import configs, objects
from .errors import DomainError
from .events import ConfigChanged, Event, StructureChanged
from .jsonvalue import canonical
from .store import Store

_U = r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
ENTRY = re.compile(rf"^v[12]/app/{_U}/object/{_U}/?$", re.I)
APP_LIST = re.compile(rf"^v[12]/app/{_U}/object/?$", re.I)
CLASS_REL = re.compile(rf"^v[12]/class/{_U}/(direct/)?(member|subclass)/?$", re.I)
SEARCH_PARENT = re.compile(rf"^v[12]/app/{_U}/object/$", re.I)

P = uuids.ConfigDBPerm


class SessionError(Exception):
    """The client broke the protocol; the connection must close."""


def filter_matches(body: Any, flt: Any) -> bool:
    """True if merge-patching ``flt`` onto ``body`` would change nothing."""
    if not isinstance(flt, dict):
        return canonical(body) == canonical(flt)
    if not isinstance(body, dict):
        return False
    merged = json_merge_patch.merge(copy.deepcopy(body), copy.deepcopy(flt))
    return canonical(merged) == canonical(body)


def _entry_response(value: Any, etag: str | None) -> dict[str, Any]:
    if etag is None:
        return {"status": 404}
    return {"status": 200, "body": value, "headers": {"etag": etag}}


class _Sub:
    """One subscription; subclasses compute its updates."""

    def __init__(self, session: NotifySession, uuid: str) -> None:
        self.session, self.uuid, self.last = session, uuid, ""

    @property
    def store(self) -> Store:
        return self.session.store

    def can(self, perm: str, target: str, obj: str | None = None) -> bool:
        return self.store.core.acl.check(self.session.principal, perm, target, obj=obj)

    def initial(self) -> list[dict]:
        raise NotImplementedError

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        raise NotImplementedError


class _EntryWatch(_Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str, obj: str, head: bool):
        super().__init__(session, uuid)
        self.app, self.obj, self.head = app.lower(), obj.lower(), head

    def _response(self, value: Any, etag: str | None) -> dict:
        if not self.can(P.ReadApp, self.app, self.obj):
            return {"status": 403}
        resp = _entry_response(value, etag)
        if self.head:
            resp.pop("body", None)
        return resp

    def initial(self) -> list[dict]:
        found = configs.get(self.store.core, self.app, self.obj)
        return [{"response": self._response(*(found or (None, None)))}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        mine = [e for e in events if isinstance(e, ConfigChanged)
                and e.app == self.app and e.obj == self.obj]
        return [{"response": self._response(mine[-1].value, mine[-1].etag)}] if mine else []


class _AppListWatch(_Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str):
        super().__init__(session, uuid)
        self.app = app.lower()

    def initial(self) -> list[dict]:
        if not self.can(P.ReadApp, self.app):
            return [{"response": {"status": 403}}]
        try:
            return [{"response": {"status": 200,
                                  "body": configs.app_objects(self.store.core, self.app)}}]
        except DomainError as exc:
            return [{"response": {"status": exc.status}}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        touched = any(isinstance(e, ConfigChanged) and e.app == self.app for e in events)
        return self.initial() if touched else []


class _ClassWatch(_Sub):
    def __init__(self, session: NotifySession, uuid: str, klass: str, direct: bool, rel: str):
        super().__init__(session, uuid)
        self.klass, self.direct, self.rel = klass.lower(), direct, rel
        member = rel == "member"
        if direct:
            self.perm = P.WriteMembers if member else P.WriteSubclasses
        else:
            self.perm = P.ReadMembers if member else P.ReadSubclasses

    def initial(self) -> list[dict]:
        if not self.can(self.perm, self.klass):
            return [{"response": {"status": 403}}]
        try:
            found = objects.class_view(self.store.core, self.klass, self.rel, self.direct)
        except DomainError as exc:
            return [{"response": {"status": exc.status}}]
        return [{"response": {"status": 200, "body": found}}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        touched = any(isinstance(e, StructureChanged) for e in events)
        return self.initial() if touched else []


class _AppSearch(_Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str, flt: Any):
        super().__init__(session, uuid)
        self.app, self.filter = app.lower(), flt
        self.selected: set[str] = set()
        self.no_access = False

    def _visible(self, obj: str) -> bool:
        return self.can(P.ReadApp, self.app, obj)

    def _selects(self, value: Any, etag: str | None) -> bool:
        return etag is not None and (self.filter is None or filter_matches(value, self.filter))

    def initial(self) -> list[dict]:
        core = self.store.core
        if core.graph.get(self.app) is None:
            return [{"response": {"status": 404}}]
        entries = core.storage.reader().config_entries(self.app)
        visible = [(o, t, e) for o, t, e in entries if self._visible(o)]
        if not self.can(P.ReadApp, self.app) and not visible:
            self.no_access, self.selected = True, set()
            return [{"response": {"status": 403}}]
        children = {}
        for obj, text, etag in visible:
            value = json.loads(text)
            if self._selects(value, etag):
                children[obj] = _entry_response(value, etag)
        self.no_access, self.selected = False, set(children)
        return [{"response": {"status": 204}, "children": children}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        out: list[dict] = []
        for e in events:
            if not isinstance(e, ConfigChanged) or e.app != self.app:
                continue
            if self.no_access:
                full = self.initial()
                if not self.no_access:
                    out.extend(full)
                continue
            out.extend(self._child(e))
        return out

    def _child(self, e: ConfigChanged) -> list[dict]:
        if not self._visible(e.obj):
            rest = self.selected - {e.obj}
            if self.selected and not any(self._visible(o) for o in rest):
                # nothing shown to this principal is readable any more
                self.no_access, self.selected = True, set()
                return [{"response": {"status": 403}}]
            if e.obj in self.selected:
                self.selected.discard(e.obj)
                return [{"child": e.obj, "response": {"status": 403}}]
            return []  # never shown to this principal: stay silent
        if self._selects(e.value, e.etag):
            self.selected.add(e.obj)
            return [{"child": e.obj, "response": _entry_response(e.value, e.etag)}]
        if e.obj in self.selected:
            self.selected.discard(e.obj)
            gone = 404 if self.filter is None else 412
            return [{"child": e.obj, "response": {"status": gone}}]
        return []


class NotifySession:
    """The subscriptions of one notify/v2 connection."""

    def __init__(self, store: Store, principal: str, send: Callable[[dict], None]) -> None:
        self.store, self.principal, self.send = store, principal, send
        self.subs: dict[str, _Sub] = {}
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._unsubscribe = store.core.events.subscribe(
            lambda events: self._queue.put(("events", events)))

    def submit(self, text: str) -> None:
        """Queue a client message (called by the transport's reader)."""
        self._queue.put(("request", text))

    def stop(self) -> None:
        """Ask :meth:`run` to return."""
        self._queue.put(("stop", None))

    def run(self) -> None:
        """Process requests and events until :meth:`stop`; raises :class:`SessionError`."""
        try:
            while True:
                kind, item = self._queue.get()
                if kind == "stop":
                    return
                if kind == "request":
                    self._request(item)
                else:
                    for sub in list(self.subs.values()):
                        self._emit(sub, sub.on_events(item), 200)
        finally:
            self._unsubscribe()

    def _emit(self, sub: _Sub, updates: list[dict], status: int) -> None:
        for update in updates:
            update = {"status": status, **update, "uuid": sub.uuid}
            key = canonical(update)
            if key != sub.last:
                sub.last = key
                self.send(update)

    def _request(self, text: str) -> None:
        try:
            req = json.loads(text)
        except ValueError:
            raise SessionError("request is not JSON") from None
        if not isinstance(req, dict) or not isinstance(req.get("uuid"), str):
            raise SessionError("request has no uuid")
        sub_uuid, method = req["uuid"], req.get("method")
        if method == "CLOSE":
            self.subs.pop(sub_uuid, None)
            self.send({"status": 410, "uuid": sub_uuid})
            return
        sub, status = self._subscription(sub_uuid, method, req)
        if sub is None:
            self.send({"status": status, "uuid": sub_uuid})
            return
        self.subs[sub_uuid] = sub
        self._emit(sub, sub.initial(), 201)

    def _subscription(self, sub_uuid: str, method: Any, req: dict) -> tuple[_Sub | None, int]:
        if method == "WATCH":
            request = req.get("request")
            if not isinstance(request, dict) or not isinstance(request.get("url"), str):
                return None, 400
            verb = str(request.get("method", "GET")).upper()
            if verb not in ("GET", "HEAD"):
                return None, 400
            url = request["url"].split("?", 1)[0]
            if m := ENTRY.match(url):
                return _EntryWatch(self, sub_uuid, m[1], m[2], verb == "HEAD"), 201
            if m := APP_LIST.match(url):
                return _AppListWatch(self, sub_uuid, m[1]), 201
            if m := CLASS_REL.match(url):
                return _ClassWatch(self, sub_uuid, m[1], bool(m[2]), m[3]), 201
            return None, 404
        if method == "SEARCH":
            parent = req.get("parent")
            if not isinstance(parent, str) or not parent.endswith("/"):
                return None, 400
            if m := SEARCH_PARENT.match(parent):
                return _AppSearch(self, sub_uuid, m[1], req.get("filter")), 201
            return None, 404
        return None, 400
