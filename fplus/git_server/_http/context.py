"""What the routes work with: the Git server's parts, found on the current app."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app

from fplus.config_store.client import Access

from .._domain.changes import ChangeSignal
from .._domain.registry import RepoRegistry
from .._domain.storage import RepoStorage
from .push_body import DEFAULT_LIMIT


@dataclass
class GitServer:
    """Everything the routes need; one per app."""

    access: Access
    registry: RepoRegistry
    storage: RepoStorage
    changes: ChangeSignal = field(default_factory=ChangeSignal)
    """Told of every push and every change of the configured repos; notify/v2 watchers
    re-read on it."""
    push_limit: int = DEFAULT_LIMIT
    """The most one push's request body may hold, in bytes (413 above, nothing written)."""

    def __post_init__(self) -> None:
        if self.registry.on_change is None:
            self.registry.on_change = self.changes.changed


def server() -> GitServer:
    """The current app's Git server."""
    return current_app.extensions["git_server"]
