"""The web console at ``/ui/``: server-rendered pages over the same API wing and permission
checks as the JSON routes. Signed in with Config Store credentials (the session cookie holds
the caller's Config Store token); every form carries a CSRF token derived from it."""

from __future__ import annotations

from . import (  # noqa: F401  (their routes join the blueprint)
    audit_pages,
    deploy_pages,
    label_pages,
    list_pages,
    rollout_pages,
    window_pages,
)
from .pages import bp

__all__ = ["bp"]
