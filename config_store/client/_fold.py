"""Folding notify/v2 updates into the state a subscriber sees."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""Returned by ``apply`` when an update carries nothing to deliver."""


def _ok(status: Any) -> bool:
    return isinstance(status, int) and 200 <= status < 300


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
            headers = response.get("headers") or {}
            etag = headers.get("etag") if isinstance(headers, dict) else None
            self.etag = etag.strip('"') if isinstance(etag, str) else None
            return response.get("body")
        self.etag = None
        return None


class SearchFold:
    """A SEARCH: a map ``child uuid → body`` of the children currently readable."""

    def __init__(self) -> None:
        self.children: dict[str, Any] = {}
        self.needs_full = False

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return a fresh copy of the map, or ``MISSING`` for none."""
        children = update.get("children")
        child = update.get("child")
        response = update.get("response")
        if isinstance(children, dict):
            self.children = {
                key: entry.get("body")
                for key, entry in children.items()
                if isinstance(entry, dict) and _ok(entry.get("status"))
            }
            self.needs_full = False
        elif isinstance(child, str) and isinstance(response, dict):
            if _ok(response.get("status")):
                self.children[child] = response.get("body")
            else:
                self.children.pop(child, None)
        elif isinstance(response, dict) and not _ok(response.get("status")):
            # No access to the parent at all: forget everything; the server sends
            # a full update once access returns.
            self.children = {}
            self.needs_full = True
        else:
            return MISSING
        return dict(self.children)
