"""The Config Store's write queries (:class:`Writer`, on the reads of :mod:`.queries`) and
what the domain needs of a database (:class:`Storage`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from .queries import AUDIT_COLUMNS, READ_NOTHING, Read, Reader, ReadFirst, Sql
from .rows import AuditRow, Change, GrantRow, ObjectRow, TokenRow

_NAME_OF = "(SELECT name FROM principal WHERE uuid = ?)"


class Outcome(Protocol):
    """A held-back commit's result (:class:`~.postgres.group_commit.Outcome`)."""

    def wait(self, timeout: float) -> bool:
        """Whether it is known within ``timeout``; raises if the write failed."""


class Writer(Reader):
    """Mutations, valid only inside the storage's ``write()``; :attr:`changes` lists what
    they changed, in order."""

    def __init__(self, sql: Sql, read: Read | None = None) -> None:
        super().__init__(sql, read)
        self.changes: list[Change] = []
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

    def _principals_changed(self) -> None:
        """Principal rows read first may be stale now: read them from the database."""
        self._read.names.clear()
        self._read.principals.clear()

    def put_config(self, app: str, obj: str, json_text: str, etag: str) -> None:
        """Insert or replace one entry."""
        self._read.entries.pop((app, obj), None)
        self.sql.execute(*self.sql.dialect.config_upsert(app, obj, json_text, etag))
        self.changes.append(Change("config", app, obj, etag))

    def delete_config(self, app: str, obj: str) -> bool:
        """Delete one entry; True if it existed."""
        self._read.entries.pop((app, obj), None)
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
        self._read.entries.clear()
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
        self._principals_changed()
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
        self._principals_changed()
        self.sql.execute("UPDATE principal SET previous_hash = ?, previous_until = ?, "
                       "password_hash = ? WHERE uuid = ?",
                       (in_use, previous_until, password_hash, uuid))
        self.changes.append(Change("principal", uuid))
        return in_use

    def retire_previous(self, uuid: str, previous_hash: str) -> bool:
        """Drop the previous hash if it is still ``previous_hash``; True if it was."""
        self._principals_changed()
        retired = self.sql.count(
            "UPDATE principal SET previous_hash = NULL, previous_until = NULL "
            "WHERE uuid = ? AND previous_hash = ?", (uuid, previous_hash)) > 0
        if retired:
            self.changes.append(Change("principal", uuid))
        return retired

    def delete_principal(self, uuid: str) -> bool:
        """Delete a principal's credentials and tokens; True if it existed."""
        self._principals_changed()
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

    def add_audit(self, row: AuditRow, target_principal: str | None = None) -> None:
        """Append an audit row (never replicated as a change: readers read the table). Names
        ``row`` leaves None are the insert's own lookups, as the transaction stands at that
        point (no read, so no round trip of its own): ``principal_name`` is
        ``row.principal``'s, ``target_name`` ``target_principal``'s (when given)."""
        self.sql.execute(f"INSERT INTO cs_audit ({AUDIT_COLUMNS}) "  # noqa: S608 - fixed text
                         f"VALUES (?, ?, ?, coalesce(?, {_NAME_OF}), ?, ?, ?, "
                         f"coalesce(?, {_NAME_OF}), ?, ?, ?)",
                         (row.at, row.request_id, row.principal, row.principal_name,
                          row.principal, row.action, row.target_kind, row.target,
                          row.target_name, target_principal, row.outcome, row.status,
                          row.detail))


class Storage(Protocol):
    """What the domain needs of a database (:mod:`.sqlite`, :mod:`.postgres.storage`)."""

    replicated: bool
    """True when other replicas may write the same database (changes to follow)."""
    description: str
    """Where the data is, safe to print (no password)."""

    def reader(self) -> Reader:
        """Queries outside a transaction."""

    def snapshot(self, first: ReadFirst = READ_NOTHING) -> AbstractContextManager[Reader]:
        """Queries that all see one state of the database (``first``: what they will read,
        as for :meth:`write`)."""

    queued: Callable[[], bool] | None
    """Set by the domain: whether another write is waiting to begin (a storage may then
    hold a write's commit back to share it, see :meth:`Writer.commit_later`)."""

    def write(self, entry: tuple[str, str] | None = None, *,
              first: ReadFirst = READ_NOTHING) -> AbstractContextManager[Writer]:
        """One serialised write transaction, rolled back if the block raises. ``entry``:
        ``(app, object)`` of an entry the block reads first, ``first``: more it will read
        (a storage may read them as the transaction begins, in the same round trip)."""

    def flush(self) -> None:
        """Commit the writes whose commit is held back, if any."""

    def close(self) -> None:
        """Release connections (made again on next use)."""
