"""How storage fails, in the domain's terms."""

from __future__ import annotations


class StorageUnavailable(RuntimeError):
    """The database cannot be reached right now; the request may be retried. A write is
    whole or absent: it did not commit, except when the connection was lost during COMMIT
    itself, when (as for any database client) the outcome is unknown until read again."""


class StorageBusy(StorageUnavailable):
    """Every pooled connection stayed in use while the request waited: the database is
    reachable, so the breaker stays closed (answered 503 like an unreachable database)."""


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message ("" if it has none): a database error's message
    can run over several lines of detail."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
