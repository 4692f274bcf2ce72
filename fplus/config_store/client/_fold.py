"""Folding notify/v2 updates into what a subscriber sees.

A WATCH folds into the entry's body. A SEARCH folds in two steps: :class:`SearchDeltaFold`
turns each wire update into a :class:`SearchDelta` (the children it touched, or a full set),
and :class:`SearchMirror` applies deltas to a map kept in place, naming the children that
changed. A subscriber asking for deltas keeps its own mirror, so an update costs the
same with ten children or ten thousand; :class:`SearchFold` hands out a whole
:class:`SearchState` after every update instead (a copy: for small apps).

A fold also says what it holds as a resume token (``resume_token``: a WATCH's etag, a
SEARCH's :func:`~fplus.serving.notify.wire.selection_digest`), offered when subscribing
again; an :data:`~fplus.serving.notify.wire.UNCHANGED` answer delivers nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fplus.serving.notify.wire import UNCHANGED, selection_digest

MISSING: Any = object()
"""Returned by ``apply`` when an update carries nothing to deliver."""


def _ok(status: Any) -> bool:
    return isinstance(status, int) and 200 <= status < 300


def _unreadable(status: Any) -> bool:
    """A server error for one child: its entry exists but cannot be served now."""
    return isinstance(status, int) and status >= 500


def _etag(response: dict[str, Any]) -> str | None:
    headers = response.get("headers") or {}
    etag = headers.get("etag") if isinstance(headers, dict) else None
    return etag.strip('"') if isinstance(etag, str) else None


class SearchState(dict[str, Any]):
    """What a SEARCH delivers: ``child uuid → body``, plus ``etags``: ``child uuid → etag``.

    Both come from the same update, so a body and its etag always belong together.
    ``unreadable``: children the server answered with an error (an entry it cannot process
    is not a deleted one): they keep their last body if they had one, and are absent if not.
    """

    def __init__(self, children: dict[str, Any], etags: dict[str, str | None],
                 unreadable: frozenset[str] = frozenset()) -> None:
        super().__init__(children)
        self.etags = etags
        self.unreadable = unreadable


@dataclass(frozen=True)
class SearchDelta:
    """One SEARCH update as a change.

    ``full``: the update replaces everything (the first one on every connection, and the
    one after access returns): ``children`` is every readable child, and a known child
    neither in it nor in ``unreadable`` is gone. Otherwise ``children`` holds the children
    that appeared or changed and ``removed`` those that went.
    ``unreadable``: children the server cannot serve now; they keep their last body.
    ``refused``: no read access to the app at all; nothing is known until a full update.
    """

    full: bool
    children: dict[str, Any] = field(default_factory=dict)
    etags: dict[str, str | None] = field(default_factory=dict)
    removed: frozenset[str] = frozenset()
    unreadable: frozenset[str] = frozenset()
    refused: bool = False


def _unchanged(update: dict[str, Any]) -> bool:
    """The server says what the client offered to resume from is still current."""
    response = update.get("response")
    return isinstance(response, dict) and response.get("status") == UNCHANGED


class WatchFold:
    """A WATCH: the entry's body on a 2xx response, else None."""

    def __init__(self) -> None:
        self.etag: str | None = None

    def resume_token(self) -> str | None:
        """The etag of the entry last delivered (None: nothing to resume from)."""
        return self.etag

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return the value to deliver, or ``MISSING`` for none."""
        response = update.get("response")
        if not isinstance(response, dict) or _unchanged(update):
            return MISSING
        if _ok(response.get("status")):
            self.etag = _etag(response)
            return response.get("body")
        self.etag = None
        return None


class SearchDeltaFold:
    """A SEARCH delivered as :class:`SearchDelta` values; keeps no children itself, only
    their etags (its resume token)."""

    def __init__(self) -> None:
        self.needs_full = False
        self._etags: dict[str, str | None] | None = None
        """The etag of each child delivered (None before a full update, or once one is
        unreadable: nothing to resume from)."""

    def resume_token(self) -> str | None:
        """The digest of the children delivered, or None if nothing can be resumed from."""
        etags = self._etags
        if self.needs_full or etags is None or any(e is None for e in etags.values()):
            return None
        return selection_digest({k: e for k, e in etags.items() if e is not None})

    def apply(self, update: dict[str, Any]) -> Any:
        """One wire update as a :class:`SearchDelta`, or ``MISSING`` for none."""
        delta = self._delta(update)
        if delta is not MISSING:
            self._track(delta)
        return delta

    def _track(self, delta: SearchDelta) -> None:
        """Keep the children's etags as ``delta`` leaves them."""
        if delta.refused or delta.unreadable:
            self._etags = None
        elif delta.full:
            self._etags = dict(delta.etags)
        elif self._etags is not None:
            self._etags.update(delta.etags)
            for key in delta.removed:
                self._etags.pop(key, None)

    def _delta(self, update: dict[str, Any]) -> Any:
        children = update.get("children")
        child = update.get("child")
        response = update.get("response")
        if _unchanged(update):
            return MISSING
        if isinstance(children, dict):
            self.needs_full = False
            entries = {key: entry for key, entry in children.items() if isinstance(entry, dict)}
            readable = {key: entry for key, entry in entries.items()
                        if _ok(entry.get("status"))}
            return SearchDelta(
                True, {key: entry.get("body") for key, entry in readable.items()},
                {key: _etag(entry) for key, entry in readable.items()},
                unreadable=frozenset(key for key, entry in entries.items()
                                     if _unreadable(entry.get("status"))))
        if isinstance(child, str) and isinstance(response, dict):
            if self.needs_full:  # refused: nothing is known until the next full set
                return MISSING
            status = response.get("status")
            if _ok(status):
                return SearchDelta(False, {child: response.get("body")},
                                   {child: _etag(response)})
            if _unreadable(status):
                return SearchDelta(False, unreadable=frozenset((child,)))
            return SearchDelta(False, removed=frozenset((child,)))
        if isinstance(response, dict) and not _ok(response.get("status")):
            # No access to the parent at all: the server sends a full update once it returns.
            self.needs_full = True
            return SearchDelta(True, refused=True)
        return MISSING


class SearchMirror:
    """The children of a SEARCH, kept in place from :class:`SearchDelta` values.

    Not thread-safe: the owner serialises :meth:`apply` with its readers.
    """

    def __init__(self) -> None:
        self.children: dict[str, Any] = {}
        self.etags: dict[str, str | None] = {}
        self.unreadable: set[str] = set()

    def _differs(self, key: str, body: Any, etag: str | None) -> bool:
        if key not in self.children:
            return True
        old = self.etags.get(key)
        return old != etag or (etag is None and self.children[key] != body)

    def apply(self, delta: SearchDelta) -> set[str]:
        """Apply ``delta``; return the children that appeared, went or changed (by etag; by
        value without one). A full delta costs one pass over the children; any other, only
        the children it names."""
        if delta.refused:
            self.children, self.etags, self.unreadable = {}, {}, set()
            return set()
        if delta.full:
            return self._replace(delta)
        changed = {key for key, body in delta.children.items()
                   if self._differs(key, body, delta.etags.get(key))}
        self.children.update(delta.children)
        self.etags.update(delta.etags)
        self.unreadable.difference_update(delta.children)
        self.unreadable.update(delta.unreadable)
        for key in delta.removed:
            if self.children.pop(key, MISSING) is not MISSING:
                changed.add(key)
            self.etags.pop(key, None)
            self.unreadable.discard(key)
        return changed

    def _replace(self, delta: SearchDelta) -> set[str]:
        kept = {key for key in delta.unreadable if key in self.children}
        changed = {key for key in self.children
                   if key not in delta.children and key not in kept}
        changed |= {key for key, body in delta.children.items()
                    if self._differs(key, body, delta.etags.get(key))}
        self.children = {key: self.children[key] for key in kept} | delta.children
        self.etags = {key: self.etags.get(key) for key in kept} | delta.etags
        self.unreadable = set(delta.unreadable)
        return changed

    def snapshot(self) -> SearchState:
        """A copy of the children as a :class:`SearchState` (costs one pass)."""
        return SearchState(dict(self.children), dict(self.etags), frozenset(self.unreadable))


class SearchFold:
    """A SEARCH delivered whole: a :class:`SearchState` of the children currently readable
    after every update."""

    def __init__(self) -> None:
        self._deltas = SearchDeltaFold()
        self._mirror = SearchMirror()

    @property
    def needs_full(self) -> bool:
        """The server refused the app; nothing is known until it sends a full update."""
        return self._deltas.needs_full

    def resume_token(self) -> str | None:
        """What the children held say to resume from (:meth:`SearchDeltaFold.resume_token`)."""
        return self._deltas.resume_token()

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return a fresh :class:`SearchState`, or ``MISSING`` for none."""
        delta = self._deltas.apply(update)
        if delta is MISSING:
            return MISSING
        self._mirror.apply(delta)
        return self._mirror.snapshot()
