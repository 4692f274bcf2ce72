"""The audit log: one append-only row per change asked of the Cluster Manager's API.

Who (the principal's uuid and name, when known), what (an action such as ``cluster.create``),
on what (a target kind, uuid and name, and the cluster concerned), how it ended (``ok`` or
``refused`` with the HTTP status), when (the database's clock) and under which request id.
Rows hold names only, never values: a secret is named by namespace/name/key, a bootstrap URL
by its cluster, never its token. Rows are only ever inserted, and dropped by age
(:attr:`AuditLog.retention_days`): nothing updates them.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .db import Database

_TABLE = """
CREATE TABLE IF NOT EXISTS cm_audit (
    seq            {serial} PRIMARY KEY,
    at             DOUBLE PRECISION NOT NULL,
    request_id     TEXT NOT NULL,
    principal      TEXT,
    principal_name TEXT,
    action         TEXT NOT NULL,
    target_kind    TEXT NOT NULL,
    target         TEXT,
    target_name    TEXT,
    cluster        TEXT,
    outcome        TEXT NOT NULL,
    status         INTEGER NOT NULL,
    reason         TEXT
)"""
_INDEXES = ("CREATE INDEX IF NOT EXISTS cm_audit_cluster ON cm_audit (cluster, seq)",
            "CREATE INDEX IF NOT EXISTS cm_audit_at ON cm_audit (at)")


def schema(dialect: str) -> tuple[str, ...]:
    """The table, for :meth:`fplus.cluster_manager.db.Database.prepare` of a ``dialect``
    database: ``seq`` counts up (SQLite's rowid, PostgreSQL's ``BIGSERIAL``)."""
    serial = "BIGSERIAL" if dialect == "postgresql" else "INTEGER"
    return (_TABLE.replace("{serial}", serial), *_INDEXES)


DEFAULT_RETENTION_DAYS = 365.0
"""Days a row is kept by default (0: forever)."""
PRUNE_EVERY = 3600.0
"""Seconds between one process's prunes of rows older than the retention."""
_COLUMNS = ("seq, at, request_id, principal, principal_name, action, target_kind, target, "
            "target_name, cluster, outcome, status, reason")


@dataclass(frozen=True)
class Entry:
    """One change as the API saw it (what :meth:`AuditLog.record` writes)."""

    request_id: str
    principal: str | None
    principal_name: str | None
    action: str
    target_kind: str
    target: str | None
    target_name: str | None
    cluster: str | None
    status: int
    reason: str | None = None
    """Why a refusal was refused, in a word of a fixed vocabulary (bootstrap URLs:
    ``invalid``, ``used``, ``expired``); never a message."""

    @property
    def outcome(self) -> str:
        """``ok`` for a 2xx/3xx answer, else ``refused``."""
        return "ok" if self.status < 400 else "refused"


def view(row: tuple[Any, ...]) -> dict[str, Any]:
    """A row as the API answers it."""
    (seq, at, request_id, principal, principal_name, action, kind, target, target_name,
     cluster, outcome, status, reason) = row
    return {"seq": int(seq),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(float(at)))
            + f".{int(float(at) % 1 * 1000):03d}Z",
            "requestId": request_id,
            "principal": {"uuid": principal, "name": principal_name},
            "action": action,
            "target": {"kind": kind, "uuid": target, "name": target_name},
            "cluster": cluster, "outcome": outcome, "status": int(status), "reason": reason}


class AuditLog:
    """The audit rows in one database (prepared with :func:`schema`)."""

    def __init__(self, db: Database, retention_days: float = DEFAULT_RETENTION_DAYS) -> None:
        self.db, self.retention_days = db, retention_days
        self._lock = threading.Lock()
        self._pruned = 0.0

    def record(self, entry: Entry) -> None:
        """Append ``entry`` (and now and then drop rows past the retention)."""
        fields = asdict(entry)
        self.db.execute(
            "INSERT INTO cm_audit (at, request_id, principal, principal_name, action, "
            "target_kind, target, target_name, cluster, outcome, status, reason) "
            "VALUES ({now}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fields["request_id"], fields["principal"], fields["principal_name"],
             fields["action"], fields["target_kind"], fields["target"], fields["target_name"],
             fields["cluster"], entry.outcome, entry.status, entry.reason))
        self._prune_now_and_then()

    def _prune_now_and_then(self) -> None:
        if self.retention_days <= 0:
            return
        with self._lock:
            if time.monotonic() - self._pruned < PRUNE_EVERY and self._pruned:
                return
            self._pruned = time.monotonic()
        self.prune()

    def prune(self) -> int:
        """Drop the rows older than the retention; return how many."""
        if self.retention_days <= 0:
            return 0
        return self.db.execute("DELETE FROM cm_audit WHERE at < {now} - ?",
                               (self.retention_days * 86400.0,))

    def page(self, *, cluster: str | None = None, principal: str | None = None,
             since: float | None = None, before: int | None = None,
             limit: int = 100) -> tuple[list[dict[str, Any]], int | None]:
        """Rows newest first, matching every filter given (``principal`` is a uuid or a
        name; ``since`` seconds since the epoch; ``before`` a ``seq``: rows older than it),
        at most ``limit``; and the ``seq`` to pass as ``before`` for the next page (None:
        no more)."""
        where: list[str] = []
        params: list[Any] = []
        if cluster is not None:
            where.append("cluster = ?")
            params.append(cluster)
        if principal is not None:
            where.append("(principal = ? OR principal_name = ?)")
            params += [principal, principal]
        if since is not None:
            where.append("at >= ?")
            params.append(since)
        if before is not None:
            where.append("seq < ?")
            params.append(before)
        clauses = " WHERE " + " AND ".join(where) if where else ""  # fixed text; values: ?
        sql = f"SELECT {_COLUMNS} FROM cm_audit{clauses} ORDER BY seq DESC LIMIT ?"  # noqa: S608
        rows = self.db.fetchall(sql, (*params, limit + 1))
        more = len(rows) > limit
        rows = rows[:limit]
        return [view(row) for row in rows], (int(rows[-1][0]) if more else None)


log = logging.getLogger(__name__)
OWN_STATUS = 0
"""The ``status`` of a row for a change the Cluster Manager made of its own accord (no
request was answered)."""


class OwnChanges:
    """Rows for the changes the Cluster Manager makes of its own accord (a phase reached, a
    re-seal), naming itself as the principal: the account it uses (``whoami()`` gives its
    ``uuid`` and ``name``, asked once). Recording never fails the change: a row that cannot
    be written is logged."""

    def __init__(self, log_: AuditLog, whoami: Callable[[], dict[str, Any]]) -> None:
        self.log, self._whoami = log_, whoami
        self._me: dict[str, Any] | None = None

    def _principal(self) -> tuple[str | None, str | None]:
        if self._me is None:
            try:
                self._me = dict(self._whoami())
            except Exception:  # asked again next time; the row names no one meanwhile
                return None, None
        uuid, name = self._me.get("uuid"), self._me.get("name")
        return (uuid if isinstance(uuid, str) else None, name if isinstance(name, str) else None)

    def record(self, action: str, cluster: str, *, name: str | None = None,
               kind: str = "cluster", target: str | None = None,
               reason: str | None = None) -> None:
        """One row: ``action`` on ``target`` (default the cluster itself) of ``cluster``;
        ``reason`` a word of a fixed vocabulary (a phase's name)."""
        uuid, who = self._principal()
        entry = Entry(request_id=uuidlib.uuid4().hex, principal=uuid, principal_name=who,
                      action=action, target_kind=kind,
                      target=cluster if kind == "cluster" and target is None else target,
                      target_name=name, cluster=cluster, status=OWN_STATUS, reason=reason)
        try:
            self.log.record(entry)
        except Exception:  # the change is made: say so loudly, never undo it
            log.exception("audit: could not record %s of cluster %s", action, cluster)

    def phase_changed(self, cluster: str, phase: str, name: str | None) -> None:
        """The reconciler recorded ``phase`` for ``cluster`` (``phase.changed``)."""
        self.record("phase.changed", cluster, name=name, reason=phase)


__all__ = ["DEFAULT_RETENTION_DAYS", "OWN_STATUS", "AuditLog", "Entry", "OwnChanges", "schema",
           "view"]
