"""Folding notify/v2 updates into the state a subscriber sees."""

from __future__ import annotations

from typing import Any

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


class WatchFold:
    """A WATCH: the entry's body on a 2xx response, else None."""

    def __init__(self) -> None:
        self.etag: str | None = None

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return the value to deliver, or ``MISSING`` for none."""
        response = update.get("response")
        if not isinstance(response, dict):
            return MISSING
        if _ok(response.get("status")):
            self.etag = _etag(response)
            return response.get("body")
        self.etag = None
        return None


class SearchFold:
    """A SEARCH: a map ``child uuid → body`` of the children currently readable."""

    def __init__(self) -> None:
        self.children: dict[str, Any] = {}
        self.etags: dict[str, str | None] = {}
        self.unreadable: set[str] = set()
        self.needs_full = False

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return a fresh :class:`SearchState`, or ``MISSING`` for none."""
        children = update.get("children")
        child = update.get("child")
        response = update.get("response")
        if isinstance(children, dict):
            entries = {key: entry for key, entry in children.items() if isinstance(entry, dict)}
            readable = {key: entry for key, entry in entries.items()
                        if _ok(entry.get("status"))}
            broken = {key for key, entry in entries.items() if _unreadable(entry.get("status"))}
            kept = {key: self.children[key] for key in broken if key in self.children}
            kept_etags = {key: self.etags.get(key) for key in kept}
            self.children = kept | {key: entry.get("body") for key, entry in readable.items()}
            self.etags = kept_etags | {key: _etag(entry) for key, entry in readable.items()}
            self.unreadable = broken
            self.needs_full = False
        elif isinstance(child, str) and isinstance(response, dict):
            status = response.get("status")
            if _ok(status):
                self.children[child] = response.get("body")
                self.etags[child] = _etag(response)
                self.unreadable.discard(child)
            elif _unreadable(status):
                self.unreadable.add(child)  # its last body, if any, stays
            else:
                self.children.pop(child, None)
                self.etags.pop(child, None)
        elif isinstance(response, dict) and not _ok(response.get("status")):
            # No access to the parent at all: forget everything; the server sends
            # a full update once access returns.
            self.children, self.etags, self.unreadable = {}, {}, set()
            self.needs_full = True
        else:
            return MISSING
        return SearchState(self.children, dict(self.etags), frozenset(self.unreadable))
