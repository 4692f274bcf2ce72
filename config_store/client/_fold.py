"""Folding notify/v2 updates into the state a subscriber sees."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""Returned by ``apply`` when an update carries nothing to deliver."""


def _ok(status: Any) -> bool:
    return isinstance(status, int) and 200 <= status < 300


def _etag(response: dict[str, Any]) -> str | None:
    headers = response.get("headers") or {}
    etag = headers.get("etag") if isinstance(headers, dict) else None
    return etag.strip('"') if isinstance(etag, str) else None


class SearchState(dict[str, Any]):
    """What a SEARCH delivers: ``child uuid → body``, plus ``etags``: ``child uuid → etag``.

    Both come from the same update, so a body and its etag always belong together.
    """

    def __init__(self, children: dict[str, Any], etags: dict[str, str | None]) -> None:
        super().__init__(children)
        self.etags = etags


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
        self.needs_full = False

    def apply(self, update: dict[str, Any]) -> Any:
        """Fold one update; return a fresh :class:`SearchState`, or ``MISSING`` for none."""
        children = update.get("children")
        child = update.get("child")
        response = update.get("response")
        if isinstance(children, dict):
            readable = {key: entry for key, entry in children.items()
                        if isinstance(entry, dict) and _ok(entry.get("status"))}
            self.children = {key: entry.get("body") for key, entry in readable.items()}
            self.etags = {key: _etag(entry) for key, entry in readable.items()}
            self.needs_full = False
        elif isinstance(child, str) and isinstance(response, dict):
            if _ok(response.get("status")):
                self.children[child] = response.get("body")
                self.etags[child] = _etag(response)
            else:
                self.children.pop(child, None)
                self.etags.pop(child, None)
        elif isinstance(response, dict) and not _ok(response.get("status")):
            # No access to the parent at all: forget everything; the server sends
            # a full update once access returns.
            self.children, self.etags = {}, {}
            self.needs_full = True
        else:
            return MISSING
        return SearchState(self.children, dict(self.etags))
