"""The Cluster Manager's own database: bootstrap tokens and the leader lease.

``sqlite:///FILE`` for one machine (the default, a private file in the data dir) or
``postgresql://…`` shared by every replica. Statements are written once for both: ``?``
placeholders, and ``{now}`` for the database's clock in seconds since the epoch (replicas
never compare their own clocks).
"""

from __future__ import annotations

from fplus.serving.db.dburl import redacted

from .base import Database, DatabaseError, DatabaseUnavailable
from .urls import open_database

__all__ = ["Database", "DatabaseError", "DatabaseUnavailable", "open_database", "redacted"]
