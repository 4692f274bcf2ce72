"""The Config Store's queries, written once for every database.

SQL here uses ``?`` placeholders and the subset SQLite and PostgreSQL share; what differs
(placeholder style, the search conditions on JSON, how an entry is stored) is the
:class:`Dialect` of the connection a :class:`Reader` runs on. Mutations also note what
changed (:class:`~.rows.Change`) for the storage to publish to other replicas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .rows import Change, GrantRow, LoginRow, ObjectRow, TokenRow

SearchCondition = tuple[str, str, Any]
"""``(json_path, json_type, value)``: see :meth:`Reader.search_entries`."""


class Dialect(Protocol):
    """What one database does its own way."""

    def search_condition(self, path: str, kind: str, value: Any) -> tuple[str, list[Any]]:
        """A ``?``-placeholder SQL condition on an entry's JSON, with its arguments."""

    def config_upsert(self, app: str, obj: str, json_text: str,
                      etag: str) -> tuple[str, list[Any]]:
        """SQL inserting or replacing one entry, with its arguments."""

    def searchable_fallback(self) -> str:
        """SQL OR-ed into a search: entries the database cannot evaluate (returned for the
        caller's own check), or ``FALSE``."""


class Sql(Protocol):
    """A connection (or a pool of them) running ``?``-placeholder statements."""

    @property
    def dialect(self) -> Dialect:
        """How this database differs (read only: an implementation's own dialect class)."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """All result rows."""

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple | None:
        """The first result row, or None."""

    def count(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a mutation; the number of rows it touched."""

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run a mutation whose outcome nobody reads: a transaction may send it later, with
        its next read or its commit (still in order, and before anything reads again)."""

    def many(self, sql: str, args: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each argument tuple."""


ENTRY_QUERY = "SELECT json, etag FROM config WHERE app = ? AND object = ?"
"""One entry's ``(json, etag)`` row, by ``(app, object)``."""


def _entry(row: Sequence[Any] | None) -> tuple[str, str] | None:
    return (row[0], row[1]) if row else None


_PRINCIPAL_LOGIN = ("SELECT uuid, password_hash, previous_hash, previous_until FROM principal "
                    "WHERE {} = ?")


class Reader:
    """Queries shared by plain reads and write transactions."""

    def __init__(self, sql: Sql) -> None:
        self.sql = sql

    def get_config(self, app: str, obj: str) -> tuple[str, str] | None:
        """Return ``(json_text, etag)`` of one entry, or None."""
        return _entry(self.sql.one(ENTRY_QUERY, (app, obj)))

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
        clauses, args = [], [app]
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
        rows = self.sql.rows(
            "SELECT uuid, name FROM principal WHERE lower(name) = lower(?) ORDER BY name",
            (name,))
        return [(r[0], r[1]) for r in rows]

    def principal_name(self, uuid: str) -> str | None:
        """The name of a principal, or None."""
        row = self.sql.one("SELECT name FROM principal WHERE uuid = ?", (uuid,))
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


class Outcome(Protocol):
    """A held-back commit's result (:class:`~.postgres.group_commit.Outcome`)."""

    def wait(self, timeout: float) -> bool:
        """Whether it is known within ``timeout``; raises if the write failed."""


class Writer(Reader):
    """Mutations, valid only inside the storage's ``write()``; :attr:`changes` lists what
    they changed, in order."""

    def __init__(self, sql: Sql, read_first: tuple[tuple[str, str], Sequence[Any] | None]
                 | None = None) -> None:
        super().__init__(sql)
        self.changes: list[Change] = []
        self._read_first = dict([read_first]) if read_first else {}
        """``{(app, object): row}``: an entry the storage read as the transaction began."""
        self.after_commit: Callable[[], None] | None = None
        """Set by :meth:`commit_later`."""
        self.outcome: Outcome | None = None
        """Set by the storage when it held the commit back: wait on it for the result."""

    def commit_later(self, after_commit: Callable[[], None]) -> None:
        """Allow the storage to commit this write with later ones (PostgreSQL's group
        commit); ``after_commit`` then runs at that commit, in write order. When the block
        ends and :attr:`outcome` is still None, the write has committed and ``after_commit``
        has not run: the caller does its work itself."""
        self.after_commit = after_commit

    def get_config(self, app: str, obj: str) -> tuple[str, str] | None:
        """See :meth:`Reader.get_config` (an entry read as the transaction began is not read
        again)."""
        if (app, obj) in self._read_first:
            return _entry(self._read_first.pop((app, obj)))
        return super().get_config(app, obj)

    def put_config(self, app: str, obj: str, json_text: str, etag: str) -> None:
        """Insert or replace one entry."""
        self._read_first.pop((app, obj), None)
        self.sql.execute(*self.sql.dialect.config_upsert(app, obj, json_text, etag))
        self.changes.append(Change("config", app, obj, etag))

    def delete_config(self, app: str, obj: str) -> bool:
        """Delete one entry; True if it existed."""
        self._read_first.pop((app, obj), None)
        existed = self.sql.count("DELETE FROM config WHERE app = ? AND object = ?",
                                 (app, obj)) > 0
        if existed:
            self.changes.append(Change("config", app, obj))
        return existed

    def put_object(self, row: ObjectRow) -> None:
        """Insert or replace an object."""
        self.sql.execute(
            "INSERT INTO object (uuid, rank, class, owner, deleted, etag) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT (uuid) DO UPDATE SET rank = excluded.rank, class = excluded.class, "
            "owner = excluded.owner, deleted = excluded.deleted, etag = excluded.etag",
            (row.uuid, row.rank, row.klass, row.owner, int(row.deleted), row.etag))
        self.changes.append(Change("object", row.uuid))

    def delete_object(self, uuid: str) -> None:
        """Remove an object, its entries and its own memberships."""
        self._read_first.clear()
        for app in self.config_apps_of(uuid):
            self.changes.append(Change("config", app, uuid))
        for klass in [r[0] for r in self.sql.rows(
                "SELECT class FROM membership WHERE member = ?", (uuid,))]:
            self.changes.append(Change("member", klass, uuid))
        for klass in [r[0] for r in self.sql.rows(
                "SELECT class FROM subclass WHERE subclass = ?", (uuid,))]:
            self.changes.append(Change("subclass", klass, uuid))
        self.sql.execute("DELETE FROM object WHERE uuid = ?", (uuid,))
        self.sql.execute("DELETE FROM config WHERE object = ?", (uuid,))
        self.sql.execute("DELETE FROM membership WHERE member = ?", (uuid,))
        self.sql.execute("DELETE FROM subclass WHERE subclass = ?", (uuid,))
        self.changes.append(Change("object", uuid))

    def set_membership(self, klass: str, member: str, present: bool) -> None:
        """Add or remove a direct membership."""
        self.sql.execute("INSERT INTO membership (class, member) VALUES (?, ?) ON CONFLICT "
                       "DO NOTHING" if present
                       else "DELETE FROM membership WHERE class = ? AND member = ?",
                       (klass, member))
        self.changes.append(Change("member", klass, member))

    def set_subclass(self, klass: str, sub: str, present: bool) -> None:
        """Add or remove a direct subclass link."""
        self.sql.execute("INSERT INTO subclass (class, subclass) VALUES (?, ?) ON CONFLICT "
                       "DO NOTHING" if present
                       else "DELETE FROM subclass WHERE class = ? AND subclass = ?",
                       (klass, sub))
        self.changes.append(Change("subclass", klass, sub))

    def put_principal(self, uuid: str, name: str, password_hash: str | None) -> None:
        """Insert or update a principal's name and password hash (dropping any previous)."""
        self.sql.execute(
            "INSERT INTO principal (uuid, name, password_hash) VALUES (?, ?, ?) "
            "ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, "
            "password_hash = excluded.password_hash, previous_hash = NULL, "
            "previous_until = NULL", (uuid, name, password_hash))
        self.changes.append(Change("principal", uuid))

    def rotate_password(self, uuid: str, password_hash: str, previous_until: float,
                        now: float) -> str | None:
        """Store ``password_hash`` as current and keep the password in use as the previous one
        (accepted until ``previous_until``); returns the hash that is now previous.

        The password in use is the current one, unless a previous one is still accepted at
        ``now``: then the current one was never used (its first use retires the previous),
        so the previous one stays and the unused current one is dropped.
        """
        row = self.sql.one("SELECT password_hash, previous_hash, previous_until "
                           "FROM principal WHERE uuid = ?", (uuid,))
        if row is None:
            return None
        current, previous, until = row
        in_use = previous if previous is not None and (until or 0.0) > now else current
        self.sql.execute("UPDATE principal SET previous_hash = ?, previous_until = ?, "
                       "password_hash = ? WHERE uuid = ?",
                       (in_use, previous_until, password_hash, uuid))
        self.changes.append(Change("principal", uuid))
        return in_use

    def retire_previous(self, uuid: str, previous_hash: str) -> bool:
        """Drop the previous hash if it is still ``previous_hash``; True if it was."""
        retired = self.sql.count(
            "UPDATE principal SET previous_hash = NULL, previous_until = NULL "
            "WHERE uuid = ? AND previous_hash = ?", (uuid, previous_hash)) > 0
        if retired:
            self.changes.append(Change("principal", uuid))
        return retired

    def delete_principal(self, uuid: str) -> bool:
        """Delete a principal's credentials and tokens; True if it existed."""
        self.sql.execute("DELETE FROM token WHERE principal = ?", (uuid,))
        existed = self.sql.count("DELETE FROM principal WHERE uuid = ?", (uuid,)) > 0
        if existed:
            self.changes.append(Change("principal", uuid))
        return existed

    def put_identity(self, principal: str, kind: str, name: str) -> None:
        """Set a principal's identity of ``kind`` (the caller checked the name is free)."""
        self.sql.execute(
            "INSERT INTO identity (principal, kind, name) VALUES (?, ?, ?) "
            "ON CONFLICT (principal, kind) DO UPDATE SET name = excluded.name",
            (principal, kind, name))
        self.changes.append(Change("identity", principal))

    def delete_identity(self, principal: str, kind: str | None = None) -> bool:
        """Delete a principal's identity of ``kind`` (every kind: None); True if any existed."""
        if kind is None:
            gone = self.sql.count("DELETE FROM identity WHERE principal = ?", (principal,))
        else:
            gone = self.sql.count("DELETE FROM identity WHERE principal = ? AND kind = ?",
                                  (principal, kind))
        if gone:
            self.changes.append(Change("identity", principal))
        return gone > 0

    def put_grant(self, grant: GrantRow) -> None:
        """Insert a grant."""
        self.sql.execute(
            "INSERT INTO acl_grant (uuid, principal, permission, target, plural, object) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (grant.uuid, grant.principal, grant.permission, grant.target, int(grant.plural),
             grant.object))
        self.changes.append(Change("grant", grant.uuid))

    def delete_grants(self, uuids: Iterable[str]) -> None:
        """Delete grants by uuid."""
        uuids = list(uuids)
        self.sql.many("DELETE FROM acl_grant WHERE uuid = ?", [(u,) for u in uuids])
        self.changes += [Change("grant", u) for u in uuids]

    def put_token(self, token: TokenRow) -> None:
        """Store an issued token (tokens are not replicated as changes: other replicas read
        one from storage the first time they see it)."""
        self.sql.execute("INSERT INTO token (digest, principal, tag, refused_from) "
                       "VALUES (?, ?, ?, ?)",
                       (token.digest, token.principal, token.tag, token.refused_from))

    def delete_token(self, digest: str) -> bool:
        """Forget one token (a sign-out); whether it was there. Other replicas learn of it as
        a ``token`` change of its principal and drop what they cached of its tokens."""
        row = self.sql.one("SELECT principal FROM token WHERE digest = ?", (digest,))
        if row is None:
            return False
        self.sql.execute("DELETE FROM token WHERE digest = ?", (digest,))
        self.changes.append(Change("token", row[0]))
        return True

    def delete_tokens_refused_before(self, when: float) -> int:
        """Forget tokens refused since before ``when``; how many."""
        return self.sql.count("DELETE FROM token WHERE refused_from < ?", (when,))


class Storage(Protocol):
    """What the domain needs of a database (:mod:`.sqlite`, :mod:`.postgres.storage`)."""

    replicated: bool
    """True when other replicas may write the same database (changes to follow)."""
    description: str
    """Where the data is, safe to print (no password)."""

    def reader(self) -> Reader:
        """Queries outside a transaction."""

    def snapshot(self) -> AbstractContextManager[Reader]:
        """Queries that all see one state of the database."""

    queued: Callable[[], bool] | None
    """Set by the domain: whether another write is waiting to begin (a storage may then
    hold a write's commit back to share it, see :meth:`Writer.commit_later`)."""

    def write(self, entry: tuple[str, str] | None = None) -> AbstractContextManager[Writer]:
        """One serialised write transaction, rolled back if the block raises. ``entry``:
        ``(app, object)`` of an entry the block reads first (a storage may read it as the
        transaction begins, in the same round trip)."""

    def flush(self) -> None:
        """Commit the writes whose commit is held back, if any."""

    def close(self) -> None:
        """Release connections (made again on next use)."""
