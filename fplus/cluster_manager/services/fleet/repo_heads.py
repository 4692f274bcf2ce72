"""The commit each cluster's repo is at, for comparing with what the edge applied."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from fplus.config_store.client import TTLCache
from fplus.git.repo.errors import GitError

log = logging.getLogger(__name__)


class RepoHeads:
    """``get(cluster)``: the head of the cluster's ``main`` branch, asked of Git at most once
    every ``ttl`` seconds per cluster (the remote case is a network round trip); None when
    the repo has no commit or Git cannot be asked (logged, never raised). Commits another
    process makes show within ``ttl``; this process's own, once :meth:`forget` is called."""

    def __init__(self, read: Callable[[str], str | None], ttl: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._known = TTLCache(ttl, max_items=4096, clock=clock)

    def forget(self, cluster: str) -> None:
        """The cluster's repo was written to: ask Git again next time (so a commit this
        process made shows at once)."""
        self._known.forget(cluster)

    def get(self, cluster: str) -> str | None:
        try:
            return self._known.get(cluster, lambda: self._read(cluster))
        except (GitError, OSError) as exc:
            log.warning("cluster %s: cannot read its repo's head: %s", cluster, exc)
            return None
