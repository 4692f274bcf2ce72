"""How storage fails, in the domain's terms."""

from __future__ import annotations


class StorageUnavailable(RuntimeError):
    """The database cannot be reached right now; the request may be retried. Nothing was
    written (a write's transaction never committed, or its outcome is re-read)."""
