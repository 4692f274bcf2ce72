"""SQLite storage adapter (WAL mode): the only module that speaks SQL.

One connection per thread; writers are serialised by a process lock plus
``BEGIN IMMEDIATE`` so a read-check-write inside :meth:`SQLiteStorage.write` is atomic.
``synchronous=NORMAL`` in WAL mode survives a killed process (only an OS crash or
power loss can drop the last transactions). Opening a database made by an earlier version
adds the columns it lacks (:data:`ADDED_COLUMNS`). The file itself: :mod:`.dbfile`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import dbfile


@dataclass(frozen=True)
class ObjectRow:
    """A stored object."""

    uuid: str
    rank: int
    klass: str | None
    owner: str
    deleted: bool
    etag: str


@dataclass(frozen=True)
class LoginRow:
    """What checking a principal's password needs: its current hash and, during a graceful
    rotation, the previous hash and when that stops being accepted (epoch seconds)."""

    uuid: str
    password_hash: str | None
    previous_hash: str | None = None
    previous_until: float | None = None


@dataclass(frozen=True)
class GrantRow:
    """A stored grant (ACE)."""

    uuid: str
    principal: str
    permission: str
    target: str
    plural: bool
    object: str | None = None


class Reader:
    """Queries shared by plain reads and write transactions."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get_config(self, app: str, obj: str) -> tuple[str, str] | None:
        """Return ``(json_text, etag)`` of one entry, or None."""
        row = self.conn.execute(
            "SELECT json, etag FROM config WHERE app = ? AND object = ?", (app, obj)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def config_objects(self, app: str) -> list[str]:
        """Objects having an entry for ``app``."""
        rows = self.conn.execute("SELECT object FROM config WHERE app = ? ORDER BY object", (app,))
        return [r[0] for r in rows]

    def config_entries(self, app: str) -> list[tuple[str, str, str]]:
        """All ``(object, json_text, etag)`` of ``app``."""
        rows = self.conn.execute(
            "SELECT object, json, etag FROM config WHERE app = ? ORDER BY object", (app,)
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def search_entries(self, app: str, where: list[tuple[str, str, Any]]) -> list[tuple[str, str]]:
        """``(object, json_text)`` of ``app``'s entries meeting every condition.

        A condition is ``(json_path, json_type, value)``: the value at ``json_path`` (``$.a.b``)
        must have SQLite JSON type ``json_type`` (``true``, ``false``, ``null``, ``text``,
        ``number`` for integer or real, or ``missing``) and, for text and numbers, equal
        ``value``. Evaluated by SQLite, so non-matching entries are never parsed.
        """
        sql = ["SELECT object, json FROM config WHERE app = ?"]
        args: list[Any] = [app]
        for path, kind, value in where:
            if kind == "missing":
                sql.append("AND json_type(json, ?) IS NULL")
                args.append(path)
            elif kind == "number":
                sql.append("AND json_type(json, ?) IN ('integer', 'real') "
                           "AND json_extract(json, ?) = ?")
                args += [path, path, value]
            elif kind == "text":
                sql.append("AND json_type(json, ?) = 'text' AND json_extract(json, ?) = ?")
                args += [path, path, value]
            else:
                sql.append("AND json_type(json, ?) = ?")
                args += [path, kind]
        rows = self.conn.execute(" ".join(sql) + " ORDER BY object", args)
        return [(r[0], r[1]) for r in rows]

    def config_apps_of(self, obj: str) -> list[str]:
        """Apps having an entry for ``obj``."""
        return [r[0] for r in self.conn.execute("SELECT app FROM config WHERE object = ?", (obj,))]

    def principal_by_name(self, name: str) -> tuple[str, str | None] | None:
        """Return ``(uuid, password_hash)`` for a principal name."""
        row = self.conn.execute(
            "SELECT uuid, password_hash FROM principal WHERE name = ?", (name,)
        ).fetchone()
        return (row[0], row[1]) if row else None

    def principal_login(self, name: str) -> LoginRow | None:
        """The current and previous password hashes of a principal, by name."""
        row = self.conn.execute(
            "SELECT uuid, password_hash, previous_hash, previous_until FROM principal "
            "WHERE name = ?", (name,)
        ).fetchone()
        return LoginRow(row[0], row[1], row[2], row[3]) if row else None

    def principal_credentials(self, uuid: str) -> LoginRow | None:
        """The current and previous password hashes of a principal, by uuid."""
        row = self.conn.execute(
            "SELECT uuid, password_hash, previous_hash, previous_until FROM principal "
            "WHERE uuid = ?", (uuid,)
        ).fetchone()
        return LoginRow(row[0], row[1], row[2], row[3]) if row else None

    def principals_named_alike(self, name: str) -> list[tuple[str, str]]:
        """``(uuid, name)`` of principals whose name equals ``name`` ignoring ASCII case
        (names are ASCII). A database from before names were unique this way may hold
        several."""
        rows = self.conn.execute(
            "SELECT uuid, name FROM principal WHERE name = ? COLLATE NOCASE ORDER BY name",
            (name,))
        return [(r[0], r[1]) for r in rows]

    def principal_name(self, uuid: str) -> str | None:
        """The name of a principal, or None."""
        row = self.conn.execute("SELECT name FROM principal WHERE uuid = ?", (uuid,)).fetchone()
        return row[0] if row else None

    def principals(self) -> list[tuple[str, str]]:
        """All ``(uuid, name)`` pairs."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT uuid, name FROM principal")]

    def objects(self) -> list[ObjectRow]:
        """Every object."""
        rows = self.conn.execute("SELECT uuid, rank, class, owner, deleted, etag FROM object")
        return [ObjectRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]

    def memberships(self) -> list[tuple[str, str]]:
        """Every direct ``(class, member)`` pair."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT class, member FROM membership")]

    def subclasses(self) -> list[tuple[str, str]]:
        """Every direct ``(class, subclass)`` pair."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT class, subclass FROM subclass")]

    def grants(self) -> list[GrantRow]:
        """Every grant."""
        rows = self.conn.execute(
            "SELECT uuid, principal, permission, target, plural, object FROM acl_grant"
        )
        return [GrantRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]


class Writer(Reader):
    """Mutations, valid only inside :meth:`SQLiteStorage.write`."""

    def put_config(self, app: str, obj: str, json_text: str, etag: str) -> None:
        """Insert or replace one entry."""
        self.conn.execute(
            "INSERT INTO config (app, object, json, etag) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (app, object) DO UPDATE SET json = excluded.json, etag = excluded.etag",
            (app, obj, json_text, etag),
        )

    def delete_config(self, app: str, obj: str) -> bool:
        """Delete one entry; True if it existed."""
        cur = self.conn.execute("DELETE FROM config WHERE app = ? AND object = ?", (app, obj))
        return cur.rowcount > 0

    def put_object(self, row: ObjectRow) -> None:
        """Insert or replace an object."""
        self.conn.execute(
            "INSERT INTO object (uuid, rank, class, owner, deleted, etag) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT (uuid) DO UPDATE SET rank = excluded.rank, class = excluded.class, "
            "owner = excluded.owner, deleted = excluded.deleted, etag = excluded.etag",
            (row.uuid, row.rank, row.klass, row.owner, int(row.deleted), row.etag),
        )

    def delete_object(self, uuid: str) -> None:
        """Remove an object, its entries and its own memberships."""
        self.conn.execute("DELETE FROM object WHERE uuid = ?", (uuid,))
        self.conn.execute("DELETE FROM config WHERE object = ?", (uuid,))
        self.conn.execute("DELETE FROM membership WHERE member = ?", (uuid,))
        self.conn.execute("DELETE FROM subclass WHERE subclass = ?", (uuid,))

    def set_membership(self, klass: str, member: str, present: bool) -> None:
        """Add or remove a direct membership."""
        sql = (
            "INSERT OR IGNORE INTO membership (class, member) VALUES (?, ?)"
            if present
            else "DELETE FROM membership WHERE class = ? AND member = ?"
        )
        self.conn.execute(sql, (klass, member))

    def set_subclass(self, klass: str, sub: str, present: bool) -> None:
        """Add or remove a direct subclass link."""
        sql = (
            "INSERT OR IGNORE INTO subclass (class, subclass) VALUES (?, ?)"
            if present
            else "DELETE FROM subclass WHERE class = ? AND subclass = ?"
        )
        self.conn.execute(sql, (klass, sub))

    def put_principal(self, uuid: str, name: str, password_hash: str | None) -> None:
        """Insert or update a principal's name and password hash (dropping any previous)."""
        self.conn.execute(
            "INSERT INTO principal (uuid, name, password_hash) VALUES (?, ?, ?) "
            "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, "
            "password_hash = excluded.password_hash, previous_hash = NULL, "
            "previous_until = NULL",
            (uuid, name, password_hash),
        )

    def rotate_password(self, uuid: str, password_hash: str, previous_until: float,
                        now: float) -> str | None:
        """Store ``password_hash`` as current and keep the password in use as the previous one
        (accepted until ``previous_until``); returns the hash that is now previous.

        The password in use is the current one, unless a previous one is still accepted at
        ``now``: then the current one was never used (its first use retires the previous),
        so the previous one stays and the unused current one is dropped.
        """
        row = self.conn.execute(
            "SELECT password_hash, previous_hash, previous_until FROM principal "
            "WHERE uuid = ?", (uuid,)).fetchone()
        if row is None:
            return None
        current, previous, until = row
        in_use = previous if previous is not None and (until or 0.0) > now else current
        self.conn.execute(
            "UPDATE principal SET previous_hash = ?, previous_until = ?, password_hash = ? "
            "WHERE uuid = ?", (in_use, previous_until, password_hash, uuid))
        return in_use

    def retire_previous(self, uuid: str, previous_hash: str) -> bool:
        """Drop the previous hash if it is still ``previous_hash``; True if it was."""
        return self.conn.execute(
            "UPDATE principal SET previous_hash = NULL, previous_until = NULL "
            "WHERE uuid = ? AND previous_hash = ?", (uuid, previous_hash),
        ).rowcount > 0

    def delete_principal(self, uuid: str) -> bool:
        """Delete a principal's credentials; True if it existed."""
        return self.conn.execute("DELETE FROM principal WHERE uuid = ?", (uuid,)).rowcount > 0

    def put_grant(self, grant: GrantRow) -> None:
        """Insert a grant."""
        self.conn.execute(
            "INSERT INTO acl_grant (uuid, principal, permission, target, plural, object) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (grant.uuid, grant.principal, grant.permission, grant.target, int(grant.plural),
             grant.object),
        )

    def delete_grants(self, uuids: Iterable[str]) -> None:
        """Delete grants by uuid."""
        self.conn.executemany("DELETE FROM acl_grant WHERE uuid = ?", [(u,) for u in uuids])


ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("principal", "previous_hash", "TEXT"),
    ("principal", "previous_until", "REAL"),
)
"""``(table, column, type)`` added after a table's first version; ``schema.sql`` has them."""


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a database made by an earlier version up to date (idempotent, atomic)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, column, kind in ADDED_COLUMNS:
            present = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _initialise(conn: sqlite3.Connection) -> None:
    """WAL mode, the tables, and the columns a database from an earlier version lacks."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(resources.files(__package__).joinpath("schema.sql").read_text())
    _add_missing_columns(conn)


class SQLiteStorage:
    """The Config Store's durable state in one SQLite file (made and checked by
    :mod:`.dbfile`: private, never an empty or corrupt file taken for a store)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._write_lock = threading.Lock()
        dbfile.prepare(path, _initialise)
        try:
            # checked on a bare connection: switching to WAL would rewrite the header of
            # a file that is then refused, which stays as it was for the operator
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                dbfile.check(conn, path)
                _initialise(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise dbfile.refusal(
                path, f"is not a usable database ({dbfile.sqlite_reason(exc)})") from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def reader(self) -> Reader:
        """Queries on this thread's connection (autocommit snapshot per statement)."""
        return Reader(self._conn())

    @contextmanager
    def write(self) -> Iterator[Writer]:
        """One serialised write transaction; rolled back if the block raises."""
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Writer(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
