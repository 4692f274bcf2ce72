"""The kinds of notify/v2 subscription and the updates each computes (reference §1.8).

Differences from ACS, all fixes: every update carries the entry's etag; falsy values
(``0``, ``false``, ``""``, ``null``) are reported as values, not 404; a filter never
crashes on arrays or non-object bodies; a stored entry that cannot be processed (nested
deeper than the door allows, or holding a lone surrogate: written before the door check
existed) is reported as that entry's error (:func:`unprocessable`), never as the end of the
subscription or of the session.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import json_merge_patch

from fplus.serving import JSONRejected, loads_checked
from fplus.serving.notify.wire import RESUME, RESUME_MAX, UNCHANGED, selection_digest

from ... import uuids
from ..common.errors import DomainError
from ..common.events import ConfigChanged, Event, StructureChanged
from ..common.jsonvalue import canonical
from ..configdb import configs, objects, scopes
from .auth_watch import auth_watch
from .base import Sub
from .encoding import Shared, shared

if TYPE_CHECKING:
    from .base import Session as NotifySession

log = logging.getLogger(__name__)

_U = r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
ENTRY = re.compile(rf"^v[12]/app/{_U}/object/{_U}/?$", re.I)
APP_LIST = re.compile(rf"^v[12]/app/{_U}/object/?$", re.I)
CLASS_REL = re.compile(rf"^v[12]/class/{_U}/(direct/)?(member|subclass)/?$", re.I)
SEARCH_PARENT = re.compile(rf"^v[12]/app/{_U}/object/$", re.I)

P = uuids.ConfigDBPerm

UNPROCESSABLE = (RecursionError, ValueError)
"""What stored data that cannot be processed raises (too deep; not encodable or parseable)."""


def unprocessable(reason: str) -> dict[str, Any]:
    """The response for one entry whose stored value cannot be processed."""
    return {"status": 500, "error": f"stored entry cannot be processed: {reason}"}


def reason_of(exc: BaseException) -> str:
    """A short reason why a stored value cannot be processed."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc) if isinstance(exc, JSONRejected) else type(exc).__name__


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


class EntryWatch(Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str, obj: str, head: bool):
        super().__init__(session, uuid)
        self.app, self.obj, self.head = app.lower(), obj.lower(), head
        self.interest = self.app
        self.shown = False
        """Whether the last update showed the entry (its deletion is then shown too)."""

    def _readable(self, value: Any, etag: str | None) -> bool:
        """May the watcher read the entry as it now is (a deletion: as it was)?"""
        acl = self.store.core.acl
        if etag is None and self.shown:
            return scopes.may_search(acl, self.session.principal, self.app)
        return scopes.may_read(acl, self.session.principal, self.app, self.obj, value)

    def _response(self, value: Any, etag: str | None) -> dict:
        readable = self._readable(value, etag)
        self.shown = readable and etag is not None
        if not readable:
            return {"status": 403}
        resp = _entry_response(value, etag)
        if self.head:
            resp.pop("body", None)
        return resp

    def initial(self) -> list[dict]:
        try:
            found = configs.get(self.store.core, self.app, self.obj)
        except UNPROCESSABLE as exc:
            return [{"response": unprocessable(reason_of(exc))}]
        response = self._response(*(found or (None, None)))
        etag = response.get("headers", {}).get("etag")
        if self.offered is not None and etag is not None \
                and etag.strip('"') == self.offered.strip('"'):
            return [{"response": {"status": UNCHANGED, "headers": {"etag": etag}}}]
        return [{"response": response}]

    def on_events(self, events: Sequence[Event]) -> list[dict]:
        mine = [e for e in events if isinstance(e, ConfigChanged)
                and e.app == self.app and e.obj == self.obj]
        if not mine:
            return []
        last = mine[-1]
        readable = self._readable(last.value, last.etag)
        self.shown = readable and last.etag is not None
        if not readable:
            return [{"response": {"status": 403}}]
        return [{"response": shared(last, self.head)}]  # one for every watcher


class AppListWatch(Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str):
        super().__init__(session, uuid)
        self.app = self.interest = app.lower()

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


class ClassWatch(Sub):
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


class AppSearch(Sub):
    def __init__(self, session: NotifySession, uuid: str, app: str, flt: Any):
        super().__init__(session, uuid)
        self.app, self.filter = app.lower(), flt
        self.interest = self.app
        self.selected: set[str] = set()
        self.no_access = False

    def _visible(self, obj: str, value: Any) -> bool:
        """May the principal read ``obj``'s entry, which holds ``value``?"""
        return scopes.may_read(self.store.core.acl, self.session.principal, self.app, obj,
                               value)

    def _may_search(self) -> bool:
        """May the principal read some entry of the app (else the search is refused)?"""
        return scopes.may_search(self.store.core.acl, self.session.principal, self.app)

    def _selects(self, value: Any, etag: str | None) -> bool:
        return etag is not None and (self.filter is None or filter_matches(value, self.filter))

    def initial(self) -> list[dict]:
        core = self.store.core
        if core.graph.get(self.app) is None:
            return [{"response": {"status": 404}}]
        if not self._may_search():
            self.no_access, self.selected = True, set()
            return [{"response": {"status": 403}}]
        wide = self.can(P.ReadApp, self.app)
        entries = self.store.app_entries.get(self.app)
        # every entry is a child then: the client's digest is checked without reading one
        if wide and self.filter is None and self.offered is not None and \
                selection_digest({obj: etag for obj, _, etag in entries}) == self.offered:
            return self._unchanged({obj for obj, _, _ in entries})
        children = {}
        for obj, text, etag in entries:
            if wide or self.can(P.ReadApp, self.app, obj):
                response = self._guarded(obj, functools.partial(self._stored, text, etag))
            else:
                response = self._scoped(obj, text, etag)
            if response is not None:
                children[obj] = response
        if self.offered is not None and self.offered == _digest(children):
            return self._unchanged(set(children))
        self.no_access, self.selected = False, set(children)
        return [{"response": {"status": 204}, "children": children}]

    def _unchanged(self, selected: set[str]) -> list[dict]:
        """The first update when the client holds ``selected`` as they are now."""
        self.no_access, self.selected = False, selected
        return [{"response": {"status": UNCHANGED}}]

    def _stored(self, text: str, etag: str, obj: str | None = None) -> dict | None:
        """The child response of a stored entry, None if the filter leaves it out (or, given
        ``obj``, if the principal may not read the entry as it is)."""
        value = loads_checked(text)
        if obj is not None and not self._visible(obj, value):
            return None
        return _entry_response(value, etag) if self._selects(value, etag) else None

    def _scoped(self, obj: str, text: str, etag: str) -> dict | None:
        """The child response of an entry the principal may read only as the object its
        value names (:mod:`..configdb.scopes`); None if it may not. One that cannot be
        processed is not known to be its own: left out."""
        if not scopes.scoped(self.app):
            return None
        try:
            return self._stored(text, etag, obj)
        except UNPROCESSABLE:
            return None

    def _guarded(self, obj: str,
                 compute: Callable[[], dict | Shared | None]) -> dict | Shared | None:
        """``compute()``, or the unprocessable-entry response if ``obj``'s data breaks it."""
        try:
            return compute()
        except UNPROCESSABLE as exc:
            log.warning("notify: entry %s of app %s cannot be processed: %s",
                        obj, self.app, reason_of(exc))
            return unprocessable(reason_of(exc))

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
        if not self._may_search():  # nothing of the app is readable any more
            self.no_access, self.selected = True, set()
            return [{"response": {"status": 403}}]
        if not self._visible(e.obj, e.value):
            if e.obj in self.selected:  # deleted, or no longer the principal's to read
                self.selected.discard(e.obj)
                return [{"child": e.obj, "response": {"status": 404 if e.etag is None
                                                      else 403}}]
            return []  # never shown to this principal: stay silent
        response = self._guarded(e.obj, lambda: self._changed(e))
        if response is not None:
            self.selected.add(e.obj)
            return [{"child": e.obj, "response": response}]
        if e.obj in self.selected:
            self.selected.discard(e.obj)
            gone = 404 if self.filter is None else 412
            return [{"child": e.obj, "response": {"status": gone}}]
        return []

    def _changed(self, e: ConfigChanged) -> Shared | None:
        return shared(e) if self._selects(e.value, e.etag) else None


def _digest(children: dict[str, Any]) -> str | None:
    """The :func:`selection_digest` of a SEARCH's children, None if one is not an entry
    with an etag (an error a client holds apart: it offers no digest then)."""
    etags = {}
    for obj, response in children.items():
        if not isinstance(response, dict) or response.get("status") != 200:
            return None
        etag = response.get("headers", {}).get("etag")
        if not isinstance(etag, str):
            return None
        etags[obj] = etag
    return selection_digest(etags)


def resume_refused(req: dict) -> str | None:
    """Why a request's ``resume`` cannot be read (answered 400), or None."""
    offered = req.get(RESUME)
    if offered is not None and (not isinstance(offered, str) or len(offered) > RESUME_MAX):
        return f"resume must be a string of at most {RESUME_MAX} characters"
    return None


def subscription(session: NotifySession, sub_uuid: str, req: dict) -> tuple[Sub | None, int]:
    """The subscription a WATCH or SEARCH request asks for (with what it offers to resume
    from, checked by :func:`resume_refused`), or None and the error status."""
    sub, status = _subscription(session, sub_uuid, req)
    if sub is not None:
        sub.offered = req.get(RESUME)
    return sub, status


def _subscription(session: NotifySession, sub_uuid: str, req: dict) -> tuple[Sub | None, int]:
    method = req.get("method")
    if method == "WATCH":
        request = req.get("request")
        if not isinstance(request, dict) or not isinstance(request.get("url"), str):
            return None, 400
        verb = str(request.get("method", "GET")).upper()
        if verb not in ("GET", "HEAD"):
            return None, 400
        url = request["url"].split("?", 1)[0]
        if m := ENTRY.match(url):
            return EntryWatch(session, sub_uuid, m[1], m[2], verb == "HEAD"), 201
        if m := APP_LIST.match(url):
            return AppListWatch(session, sub_uuid, m[1]), 201
        if m := CLASS_REL.match(url):
            return ClassWatch(session, sub_uuid, m[1], bool(m[2]), m[3]), 201
        watch = auth_watch(session, sub_uuid, url)
        return (watch, 201) if watch is not None else (None, 404)
    if method == "SEARCH":
        parent = req.get("parent")
        if not isinstance(parent, str) or not parent.endswith("/"):
            return None, 400
        if m := SEARCH_PARENT.match(parent):
            return AppSearch(session, sub_uuid, m[1], req.get("filter")), 201
        return None, 404
    return None, 400
