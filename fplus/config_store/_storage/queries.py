"""The Config Store's read queries, written once for every database (the writes:
:mod:`.writes`).

SQL here uses ``?`` placeholders and the subset SQLite and PostgreSQL share; what differs
(placeholder style, the search conditions on JSON, how an entry is stored) is the
:class:`Dialect` of the connection a :class:`Reader` runs on. Mutations also note what
changed (:class:`~.rows.Change`) for the storage to publish to other replicas.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .rows import AuditRow, GrantRow, LoginRow, ObjectRow, TokenRow

SearchValue = str | int | float | None
"""What a search compares a JSON path with (a JSON scalar; None for the kinds without one)."""
SearchCondition = tuple[str, str, SearchValue]
"""``(json_path, json_type, value)``: see :meth:`Reader.search_entries`."""


class Dialect(Protocol):
    """What one database does its own way."""

    def search_condition(self, path: str, kind: str,
                         value: SearchValue) -> tuple[str, list[object]]:
        """A ``?``-placeholder SQL condition on an entry's JSON, with its arguments."""

    def config_upsert(self, app: str, obj: str, json_text: str,
                      etag: str) -> tuple[str, list[object]]:
        """SQL inserting or replacing one entry, with its arguments."""

    def searchable_fallback(self) -> str:
        """SQL OR-ed into a search: entries the database cannot evaluate (returned for the
        caller's own check), or ``FALSE``."""


class Sql(Protocol):
    """A connection (or a pool of them) running ``?``-placeholder statements."""

    @property
    def dialect(self) -> Dialect:
        """How this database differs (read only: an implementation's own dialect class)."""

    def rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        """All result rows."""

    def one(self, sql: str, args: Sequence[object] = ()) -> tuple | None:
        """The first result row, or None."""

    def count(self, sql: str, args: Sequence[object] = ()) -> int:
        """Run a mutation; the number of rows it touched."""

    def execute(self, sql: str, args: Sequence[object] = ()) -> None:
        """Run a mutation whose outcome nobody reads: a transaction may send it later, with
        its next read or its commit (still in order, and before anything reads again)."""

    def many(self, sql: str, args: Iterable[Sequence[object]]) -> None:
        """Run one statement for each argument tuple."""


ENTRY_QUERY = "SELECT json, etag FROM config WHERE app = ? AND object = ?"
"""One entry's ``(json, etag)`` row, by ``(app, object)``."""


NAMES_ALIKE_QUERY = ("SELECT uuid, name FROM principal WHERE lower(name) = lower(?) "
                     "ORDER BY name")
"""``(uuid, name)`` rows of the principals named ``?`` ignoring ASCII case."""
PRINCIPAL_NAME_QUERY = "SELECT name FROM principal WHERE uuid = ?"
"""A principal's ``(name,)`` row, by uuid."""


@dataclass(frozen=True)
class ReadFirst:
    """What a write's block will read, named before it begins, so that a storage may read
    it all as the transaction begins (on PostgreSQL in the lock's round trip, instead of
    one round trip each): entries by ``(app, object)``, principals named alike by name,
    principals' names by uuid."""

    entries: tuple[tuple[str, str], ...] = ()
    names: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()

    def statements(self) -> list[tuple[str, tuple[str, ...]]]:
        """The reads (``?`` placeholders), in the order :meth:`Read.of` takes their rows."""
        return [*((ENTRY_QUERY, e) for e in self.entries),
                *((NAMES_ALIKE_QUERY, (n,)) for n in self.names),
                *((PRINCIPAL_NAME_QUERY, (u,)) for u in self.principals)]


READ_NOTHING = ReadFirst()
"""No read named first."""


@dataclass
class Read:
    """The rows of a :class:`ReadFirst`, served by the :class:`~.writes.Writer` until the
    write changes what they show (an entry's row once: it was so for a single entry)."""

    entries: dict[tuple[str, str], tuple | None] = field(default_factory=dict)
    names: dict[str, list[tuple]] = field(default_factory=dict)
    principals: dict[str, tuple | None] = field(default_factory=dict)

    @staticmethod
    def of(first: ReadFirst, results: list[list[tuple]]) -> Read:
        """``first``'s rows from the results of its :meth:`~ReadFirst.statements`."""
        rows = iter(results)
        return Read({e: next(iter(next(rows)), None) for e in first.entries},
                    {n: next(rows) for n in first.names},
                    {u: next(iter(next(rows)), None) for u in first.principals})


def entry_row(row: tuple | None) -> tuple[str, str] | None:
    return (row[0], row[1]) if row else None


AUDIT_COLUMNS = ("at, request_id, principal, principal_name, action, target_kind, target, "
                 "target_name, outcome, status, detail")
"""The columns of an audit row, in :class:`~.rows.AuditRow`'s order (``seq`` is last)."""

_PRINCIPAL_LOGIN = ("SELECT uuid, password_hash, previous_hash, previous_until FROM principal "
                    "WHERE {} = ?")


class Reader:
    """Queries shared by plain reads and write transactions."""

    def __init__(self, sql: Sql, read: Read | None = None) -> None:
        self.sql = sql
        self._read = read or Read()
        """What the storage read as the transaction began (:class:`ReadFirst`), served
        instead of reading again (a :class:`~.writes.Writer` drops what it changes)."""

    def get_config(self, app: str, obj: str) -> tuple[str, str] | None:
        """Return ``(json_text, etag)`` of one entry, or None (an entry read first: served
        once)."""
        if (app, obj) in self._read.entries:
            return entry_row(self._read.entries.pop((app, obj)))
        return entry_row(self.sql.one(ENTRY_QUERY, (app, obj)))

    def config_objects(self, app: str) -> list[str]:
        """Objects having an entry for ``app``."""
        return [r[0] for r in self.sql.rows(
            "SELECT object FROM config WHERE app = ? ORDER BY object", (app,))]

    def config_entries(self, app: str) -> list[tuple[str, str, str]]:
        """All ``(object, json_text, etag)`` of ``app``."""
        rows = self.sql.rows(
            "SELECT object, json, etag FROM config WHERE app = ? ORDER BY object", (app,))
        return [(r[0], r[1], r[2]) for r in rows]

    def search_entries(self, app: str, where: list[SearchCondition]) -> list[tuple[str, str]]:
        """``(object, json_text)`` of ``app``'s entries meeting every condition (a superset
        at most: the caller checks each again).

        A condition is ``(json_path, json_type, value)``: the value at ``json_path`` (``$.a.b``)
        must have JSON type ``json_type`` (``true``, ``false``, ``null``, ``text``, ``number``
        for integer or real, or ``missing``) and, for text and numbers, equal ``value``.
        Evaluated by the database, so non-matching entries are never parsed.
        """
        clauses: list[str] = []
        args: list[object] = [app]
        for path, kind, value in where:
            clause, more = self.sql.dialect.search_condition(path, kind, value)
            clauses.append(clause)
            args += more
        sql = "SELECT object, json FROM config WHERE app = ?"
        if clauses:
            sql += f" AND ({' AND '.join(clauses)} OR {self.sql.dialect.searchable_fallback()})"
        return [(r[0], r[1]) for r in self.sql.rows(sql + " ORDER BY object", args)]

    def config_apps_of(self, obj: str) -> list[str]:
        """Apps having an entry for ``obj``."""
        return [r[0] for r in self.sql.rows("SELECT app FROM config WHERE object = ?", (obj,))]

    def principal_by_name(self, name: str) -> tuple[str, str | None] | None:
        """Return ``(uuid, password_hash)`` for a principal name."""
        row = self.sql.one("SELECT uuid, password_hash FROM principal WHERE name = ?", (name,))
        return (row[0], row[1]) if row else None

    def principal_login(self, name: str) -> LoginRow | None:
        """The current and previous password hashes of a principal, by name."""
        row = self.sql.one(_PRINCIPAL_LOGIN.format("name"), (name,))
        return LoginRow(*row) if row else None

    def principal_credentials(self, uuid: str) -> LoginRow | None:
        """The current and previous password hashes of a principal, by uuid."""
        row = self.sql.one(_PRINCIPAL_LOGIN.format("uuid"), (uuid,))
        return LoginRow(*row) if row else None

    def principals_named_alike(self, name: str) -> list[tuple[str, str]]:
        """``(uuid, name)`` of principals whose name equals ``name`` ignoring ASCII case
        (names are ASCII). A database from before names were unique this way may hold
        several."""
        rows = self._read.names.get(name)
        if rows is None:
            rows = self.sql.rows(NAMES_ALIKE_QUERY, (name,))
        return [(r[0], r[1]) for r in rows]

    def principal_name(self, uuid: str) -> str | None:
        """The name of a principal, or None."""
        if uuid in self._read.principals:
            row = self._read.principals[uuid]
        else:
            row = self.sql.one(PRINCIPAL_NAME_QUERY, (uuid,))
        return row[0] if row else None

    def principals(self) -> list[tuple[str, str]]:
        """All ``(uuid, name)`` pairs."""
        return [(r[0], r[1]) for r in self.sql.rows("SELECT uuid, name FROM principal")]

    def identities(self) -> list[tuple[str, str, str]]:
        """Every stored identity as ``(principal, kind, name)``."""
        return [(r[0], r[1], r[2]) for r in self.sql.rows(
            "SELECT principal, kind, name FROM identity ORDER BY principal, kind")]

    def identities_of(self, principal: str) -> list[tuple[str, str]]:
        """``(kind, name)`` of a principal's stored identities."""
        return [(r[0], r[1]) for r in self.sql.rows(
            "SELECT kind, name FROM identity WHERE principal = ? ORDER BY kind", (principal,))]

    def identity_holder(self, kind: str, name: str) -> str | None:
        """The principal holding the stored identity ``name`` of ``kind``, or None."""
        row = self.sql.one("SELECT principal FROM identity WHERE kind = ? AND name = ?",
                           (kind, name))
        return row[0] if row else None

    def objects(self) -> list[ObjectRow]:
        """Every object."""
        rows = self.sql.rows("SELECT uuid, rank, class, owner, deleted, etag FROM object")
        return [ObjectRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]

    def object(self, uuid: str) -> ObjectRow | None:
        """One object, or None."""
        r = self.sql.one("SELECT uuid, rank, class, owner, deleted, etag FROM object "
                         "WHERE uuid = ?", (uuid,))
        return ObjectRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) if r else None

    def memberships(self) -> list[tuple[str, str]]:
        """Every direct ``(class, member)`` pair."""
        return [(r[0], r[1]) for r in self.sql.rows("SELECT class, member FROM membership")]

    def is_member(self, klass: str, member: str) -> bool:
        """True if ``member`` is a direct member of ``klass``."""
        return self.sql.one("SELECT 1 FROM membership WHERE class = ? AND member = ?",
                            (klass, member)) is not None

    def subclasses(self) -> list[tuple[str, str]]:
        """Every direct ``(class, subclass)`` pair."""
        return [(r[0], r[1]) for r in self.sql.rows("SELECT class, subclass FROM subclass")]

    def is_subclass(self, klass: str, sub: str) -> bool:
        """True if ``sub`` is a direct subclass of ``klass``."""
        return self.sql.one("SELECT 1 FROM subclass WHERE class = ? AND subclass = ?",
                            (klass, sub)) is not None

    def grants(self) -> list[GrantRow]:
        """Every grant."""
        rows = self.sql.rows(
            "SELECT uuid, principal, permission, target, plural, object FROM acl_grant")
        return [GrantRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]

    def grant(self, uuid: str) -> GrantRow | None:
        """One grant, or None."""
        r = self.sql.one("SELECT uuid, principal, permission, target, plural, object "
                         "FROM acl_grant WHERE uuid = ?", (uuid,))
        return GrantRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) if r else None

    def token(self, digest: str) -> TokenRow | None:
        """An issued token by the digest of its text, or None."""
        r = self.sql.one("SELECT digest, principal, tag, refused_from FROM token "
                         "WHERE digest = ?", (digest,))
        return TokenRow(r[0], r[1], r[2], r[3]) if r else None

    def audit_page(self, *, principal: str | None = None, target: str | None = None,
                   since: float | None = None, before: int | None = None,
                   limit: int = 100) -> list[AuditRow]:
        """Audit rows newest first matching every filter given (``principal`` the acting
        principal's uuid or name; ``target`` the target's uuid or name; ``since`` seconds
        since the epoch; ``before`` a ``seq``: only older rows), at most ``limit``."""
        where: list[str] = []
        args: list[object] = []
        if principal is not None:
            where.append("(principal = ? OR principal_name = ?)")
            args += [principal, principal]
        if target is not None:
            where.append("(target = ? OR target_name = ?)")
            args += [target, target]
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        if before is not None:
            where.append("seq < ?")
            args.append(before)
        clauses = " WHERE " + " AND ".join(where) if where else ""  # fixed text; values: ?
        rows = self.sql.rows(f"SELECT {AUDIT_COLUMNS}, seq FROM cs_audit{clauses} "  # noqa: S608
                             "ORDER BY seq DESC LIMIT ?", [*args, limit])
        return [AuditRow(at=float(r[0]), request_id=r[1], principal=r[2], principal_name=r[3],
                         action=r[4], target_kind=r[5], target=r[6], target_name=r[7],
                         outcome=r[8], status=int(r[9]), detail=r[10], seq=int(r[11]))
                for r in rows]
