"""The commit each cluster's repo is at, for comparing with what the edge applied."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pygit2

log = logging.getLogger(__name__)

MAX_REMEMBERED = 4096


class RepoHeads:
    """``get(cluster)``: the head of the cluster's ``main`` branch, asked of Git at most once
    every ``ttl`` seconds per cluster (the remote case is a network round trip); None when
    the repo has no commit or Git cannot be asked (logged, never raised)."""

    def __init__(self, read: Callable[[str], str | None], ttl: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read, self.ttl, self._clock = read, ttl, clock
        self._known: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def get(self, cluster: str) -> str | None:
        now = self._clock()
        with self._lock:
            hit = self._known.get(cluster)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            found = self._read(cluster)
        except (pygit2.GitError, OSError) as exc:
            log.warning("cluster %s: cannot read its repo's head: %s", cluster, exc)
            return None
        with self._lock:
            if len(self._known) >= MAX_REMEMBERED:
                self._known = {c: v for c, v in self._known.items() if v[0] > now}
            self._known[cluster] = (now + self.ttl, found)
        return found
