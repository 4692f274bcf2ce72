"""What the Cluster Manager remembers of each sealed key: who sealed it when, to which
certificate key, and (with escrow) the value in an :class:`~.envelope.Envelope`.

Rows live in the Cluster Manager's database (:mod:`fplus.cluster_manager.db`). Without escrow the
envelope columns stay empty and the value is known nowhere but on the edge, as in ACS.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..db import Database
from .envelope import Envelope

SCHEMA = ("""
CREATE TABLE IF NOT EXISTS cm_sealed_keys (
    cluster     TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    secret_key  TEXT NOT NULL,
    scope       TEXT NOT NULL,
    sealed_at   DOUBLE PRECISION NOT NULL,
    sealed_by   TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    key_id      TEXT,
    wrapped_key TEXT,
    ciphertext  TEXT,
    PRIMARY KEY (cluster, namespace, name, secret_key)
)""",)
"""The tables, for :meth:`fplus.cluster_manager.db.Database.prepare`."""

_SELECT = ("SELECT cluster, namespace, name, secret_key, scope, sealed_at, sealed_by, "
           "fingerprint, key_id, wrapped_key, ciphertext FROM cm_sealed_keys")


@dataclass(frozen=True)
class SealedKey:
    """One sealed key of one secret."""

    cluster: str
    namespace: str
    name: str
    key: str
    scope: str
    sealed_at: float
    sealed_by: str
    fingerprint: str
    """The fingerprint of the certificate key it is sealed to."""
    envelope: Envelope | None
    """The escrowed value; None without escrow."""

    @property
    def secret(self) -> tuple[str, str]:
        return self.namespace, self.name


def _row(row: tuple) -> SealedKey:
    envelope = Envelope(row[8], row[9], row[10]) if row[8] is not None else None
    return SealedKey(row[0], row[1], row[2], row[3], row[4], float(row[5]), row[6], row[7],
                     envelope)


class SealedKeys:
    """The records of sealed keys in one database (prepared with :data:`SCHEMA`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, record: SealedKey) -> None:
        """Record a seal (replacing the key's previous record)."""
        env = record.envelope
        self.db.execute(
            "INSERT INTO cm_sealed_keys (cluster, namespace, name, secret_key, scope, sealed_at, "
            "sealed_by, fingerprint, key_id, wrapped_key, ciphertext) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (cluster, namespace, name, secret_key) DO UPDATE SET "
            "scope=excluded.scope, sealed_at=excluded.sealed_at, sealed_by=excluded.sealed_by, "
            "fingerprint=excluded.fingerprint, key_id=excluded.key_id, "
            "wrapped_key=excluded.wrapped_key, ciphertext=excluded.ciphertext",
            (record.cluster, record.namespace, record.name, record.key, record.scope,
             record.sealed_at, record.sealed_by, record.fingerprint,
             env.key_id if env else None, env.wrapped_key if env else None,
             env.ciphertext if env else None))

    def delete(self, cluster: str, namespace: str, name: str, key: str) -> None:
        """Forget a key's record and escrowed value."""
        self.db.execute("DELETE FROM cm_sealed_keys WHERE cluster=? AND namespace=? AND name=? "
                        "AND secret_key=?", (cluster, namespace, name, key))

    def forget_cluster(self, cluster: str) -> None:
        """Forget every record of a cluster (it was deleted)."""
        self.db.execute("DELETE FROM cm_sealed_keys WHERE cluster=?", (cluster,))

    def of_cluster(self, cluster: str) -> list[SealedKey]:
        """Every record of a cluster."""
        return [_row(r) for r in self.db.fetchall(
            _SELECT + " WHERE cluster=? ORDER BY namespace, name, secret_key", (cluster,))]

    def clusters(self, *, escrowed: bool = False) -> list[str]:
        """The clusters having records (``escrowed``: escrowed values)."""
        sql = ("SELECT DISTINCT cluster FROM cm_sealed_keys WHERE key_id IS NOT NULL "
               "ORDER BY cluster" if escrowed else
               "SELECT DISTINCT cluster FROM cm_sealed_keys ORDER BY cluster")
        return [r[0] for r in self.db.fetchall(sql)]

    def reseals_pending(self) -> int:
        """Escrowed keys sealed to a key other than their cluster's pinned one (the pins'
        table, ``cm_sealing_keys``): what the leader's next re-seal passes have to do."""
        row = self.db.fetchone(
            "SELECT COUNT(*) FROM cm_sealed_keys s JOIN cm_sealing_keys p "
            "ON p.cluster = s.cluster WHERE s.key_id IS NOT NULL "
            "AND p.fingerprint IS NOT NULL AND s.fingerprint <> p.fingerprint")
        return int(row[0]) if row else 0

    def escrowed(self) -> list[SealedKey]:
        """Every record holding an escrowed value (for re-wrapping under a new escrow key)."""
        return [_row(r) for r in self.db.fetchall(
            _SELECT + " WHERE key_id IS NOT NULL")]

    def resealed(self, records: Iterable[SealedKey], fingerprint: str) -> None:
        """Note that ``records`` are now sealed to ``fingerprint`` (their values unchanged)."""
        now = time.time()
        for r in records:
            self.db.execute("UPDATE cm_sealed_keys SET fingerprint=?, sealed_at=? WHERE "
                            "cluster=? AND namespace=? AND name=? AND secret_key=?",
                            (fingerprint, now, r.cluster, r.namespace, r.name, r.key))

    def rewrapped(self, record: SealedKey, envelope: Envelope) -> None:
        """Store ``record``'s envelope re-wrapped under another escrow key."""
        self.db.execute("UPDATE cm_sealed_keys SET key_id=?, wrapped_key=? WHERE cluster=? AND "
                        "namespace=? AND name=? AND secret_key=? AND key_id=?",
                        (envelope.key_id, envelope.wrapped_key, record.cluster,
                         record.namespace, record.name, record.key,
                         record.envelope.key_id if record.envelope else None))
