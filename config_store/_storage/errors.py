"""How storage fails, in the domain's terms."""

from __future__ import annotations


class StorageUnavailable(RuntimeError):
    """The database cannot be reached right now; the request may be retried. A write is
    whole or absent: it did not commit, except when the connection was lost during COMMIT
    itself, when (as for any database client) the outcome is unknown until read again."""
