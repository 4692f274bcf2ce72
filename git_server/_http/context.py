"""What the routes work with: the Git server's parts, found on the current app."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from config_store.client import Access

from .._domain.registry import RepoRegistry
from .._domain.storage import RepoStorage


@dataclass
class GitServer:
    """Everything the routes need; one per app."""

    access: Access
    registry: RepoRegistry
    storage: RepoStorage


def server() -> GitServer:
    """The current app's Git server."""
    return current_app.extensions["git_server"]
