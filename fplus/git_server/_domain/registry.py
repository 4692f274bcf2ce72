"""Which repos exist: one per Git repository configuration entry, followed through notify.

The notify SEARCH, followed as deltas, keeps a map uuid → entry and an index path → uuids,
so a change costs the same with ten repos or ten thousand; a miss falls back to reading the
entry directly, so a repo configured a moment ago is served before its notification lands.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from fplus.config_store import uuids
from fplus.config_store.client import ConfigStoreClient, NotifyClient, SearchDelta, SearchMirror

log = logging.getLogger(__name__)
APP = uuids.App.GitRepoConfig


class RepoRegistry:
    """Configured repos: ``{uuid: {"path": "group/name", ...}}``."""

    def __init__(self, client: ConfigStoreClient,
                 on_change: Callable[[], None] | None = None) -> None:
        self.client = client
        self.on_change = on_change
        """Called (from the notify thread) when the set of configured repos changed."""
        self._lock = threading.Lock()
        self._mirror = SearchMirror()
        self._repos: dict[str, dict[str, Any]] = {}
        self._by_path: dict[str, set[str]] = {}
        self._notify: NotifyClient | None = None

    def start(self) -> None:
        """Follow the Git repository configuration app."""
        self._notify = NotifyClient(self.client, reconnect_delay=(1.0, 2.0))
        self._notify.search(APP, self._apply, deltas=True)

    def stop(self) -> None:
        """Stop following."""
        if self._notify is not None:
            self._notify.close()

    def _apply(self, delta: SearchDelta) -> None:
        with self._lock:
            # a refusal empties the mirror without naming what it held
            changed = self._mirror.apply(delta) | (set(self._repos) if delta.refused else set())
            came_or_went = False
            for uuid in changed:
                was = self._forget(uuid)
                entry = self._mirror.children.get(uuid)
                if isinstance(entry, dict):
                    self._repos[uuid] = entry
                    self._by_path.setdefault(str(entry.get("path")), set()).add(uuid)
                came_or_went |= was != isinstance(entry, dict)
        if came_or_went and self.on_change is not None:
            self.on_change()

    def _forget(self, uuid: str) -> bool:
        """Drop ``uuid`` from the map and the path index; whether it was there."""
        gone = self._repos.pop(uuid, None)
        if gone is None:
            return False
        path = str(gone.get("path"))
        self._by_path.get(path, set()).discard(uuid)
        if not self._by_path.get(path):
            self._by_path.pop(path, None)
        return True

    def get(self, uuid: str, *, ask_store: bool = True) -> dict[str, Any] | None:
        """The repo's configuration, or None if it is not configured. A repo not (yet) known
        from notify is read from the Config Store, unless ``ask_store`` is False (a watcher
        that re-reads on :attr:`on_change` anyway)."""
        with self._lock:
            found = self._repos.get(uuid)
        if found is not None or not ask_store:
            return found
        entry = self.client.get_config(APP, uuid)
        return entry if isinstance(entry, dict) else None

    def by_path(self, path: str) -> list[str]:
        """Repo uuids configured with ``path`` (``group/name``)."""
        with self._lock:
            hits = sorted(self._by_path.get(path, ()))
        if hits:
            return hits
        found = self.client.search(APP, {"path": path})
        return found if isinstance(found, list) else []

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every configured repo's entry known from notify (a snapshot)."""
        with self._lock:
            return dict(self._repos)

    def configured(self) -> list[str]:
        """Every configured repo uuid known from notify."""
        with self._lock:
            return sorted(self._repos)
