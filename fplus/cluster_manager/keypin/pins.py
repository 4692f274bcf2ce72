"""The pinned sealing key of each cluster, in the Cluster Manager's own database.

One row per cluster (``cm_sealing_keys``): the pinned certificate and its fingerprint, who
pinned it and when, a certificate waiting for approval, and since when a bootstrap armed the
pin. Edge Sync's credentials reach the Config Store only, never this table, so what the edge
reports can only ever become *pending* here.

Every change is one conditional update on the row's ``version``: of two replicas observing
at once, one writes and the other reads the result. An arm the row already holds from under
:data:`ARM_REFRESH` ago is left as it is (nothing written): a burst of fetches costs one
write, not one each. Whether it holds one is read from the row every time, never remembered:
another replica may have used the arm up (a key pinned) or cleared it (an approval) since.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..db import Database

SCHEMA = ("""
CREATE TABLE IF NOT EXISTS cm_sealing_keys (
    cluster        TEXT PRIMARY KEY,
    version        INTEGER NOT NULL,
    fingerprint    TEXT,
    certificate    TEXT,
    pinned_at      DOUBLE PRECISION,
    pinned_by      TEXT,
    armed_at       DOUBLE PRECISION,
    pending        TEXT,
    pending_cert   TEXT,
    pending_since  DOUBLE PRECISION
)""",)
"""The table, for :meth:`fplus.cluster_manager.db.Database.prepare`."""

BOOTSTRAP = "bootstrap"
"""``pinned_by`` of a key taken as the first new certificate after a bootstrap."""
ARM_WINDOW = 3600.0
"""Seconds a fetched bootstrap script keeps the pin open for the edge's next new key."""
ARM_REFRESH = 1.0
"""Seconds within which a fetch leaves an earlier fetch's arm as it is (nothing written)
rather than moving ``armed_at`` forward by less than this: the pin stays armed at least
``ARM_WINDOW - ARM_REFRESH`` after every fetch, and never longer than ``ARM_WINDOW`` after
one."""

_SELECT = ("SELECT version, fingerprint, certificate, pinned_at, pinned_by, "
           "CASE WHEN armed_at > {now} - ? THEN armed_at END, pending, pending_cert, "
           "pending_since FROM cm_sealing_keys WHERE cluster=?")
_CLEARED = "armed_at=NULL, pending=NULL, pending_cert=NULL, pending_since=NULL"


@dataclass(frozen=True)
class Pin:
    """One cluster's row: the pinned key, and the key waiting for approval if any."""

    cluster: str
    version: int
    fingerprint: str | None
    """The pinned key's fingerprint (None: nothing pinned yet; the next key is taken)."""
    certificate: str | None
    pinned_at: float | None
    pinned_by: str | None
    """:data:`BOOTSTRAP`, or the uuid of the operator who approved it."""
    armed_at: float | None
    """When a bootstrap script was fetched, while that is under :data:`ARM_WINDOW` ago."""
    pending: str | None
    """The fingerprint of a reported key no one approved (never sealed to)."""
    pending_certificate: str | None
    pending_since: float | None

    def decide(self, fingerprint: str) -> str:
        """What a report of ``fingerprint`` does: ``keep`` (nothing to write), ``pin`` (take
        it), ``hold`` (it becomes the pending key) or ``settle`` (the pinned key is reported
        again: no key is pending any more).

        A bootstrap arms the pin for a key first seen after it: the pending key, reported
        before the bootstrap, still needs an approval."""
        if self.fingerprint is None:
            return "pin"
        if fingerprint == self.fingerprint:
            return "keep" if self.pending is None else "settle"
        if fingerprint == self.pending:
            return "keep"
        return "pin" if self.armed_at is not None else "hold"


class KeyPins:
    """The pins in one database (prepared with :data:`SCHEMA`)."""

    def __init__(self, db: Database, arm_window: float = ARM_WINDOW,
                 arm_refresh: float = ARM_REFRESH) -> None:
        self.db, self.arm_window = db, arm_window
        self.arm_refresh = min(arm_refresh, arm_window)
        """An arm recorded under this long ago is not moved (never longer than the window:
        an arm that has ended is always renewed)."""

    def get(self, cluster: str) -> Pin | None:
        """The cluster's row, if any."""
        row = self.db.fetchone(_SELECT, (self.arm_window, cluster))
        return None if row is None else Pin(cluster, int(row[0]), *row[1:])

    def observe(self, cluster: str, fingerprint: str, certificate: str) -> Pin:
        """Apply a report of ``certificate`` (whose key is ``fingerprint``): see
        :meth:`Pin.decide`. Returns the row as it is afterwards."""
        pin = self.get(cluster)
        if pin is None:
            self.db.execute(
                "INSERT INTO cm_sealing_keys (cluster, version, fingerprint, certificate, "
                "pinned_at, pinned_by) VALUES (?, 1, ?, ?, {now}, ?) ON CONFLICT (cluster) "
                "DO NOTHING", (cluster, fingerprint, certificate, BOOTSTRAP))
        else:
            action = pin.decide(fingerprint)
            if action == "pin":
                self._update(pin, "fingerprint=?, certificate=?, pinned_at={now}, pinned_by=?, "
                             + _CLEARED, (fingerprint, certificate, BOOTSTRAP))
            elif action == "hold":
                self._update(pin, "pending=?, pending_cert=?, pending_since={now}",
                             (fingerprint, certificate))
            elif action == "settle":
                self._update(pin, "pending=NULL, pending_cert=NULL, pending_since=NULL", ())
            else:
                return pin
        found = self.get(cluster)
        assert found is not None
        return found

    def approve(self, pin: Pin, by: str) -> bool:
        """Pin ``pin``'s pending key (approved by ``by``); False if the row changed since
        ``pin`` was read (nothing written)."""
        return self._update(pin, "fingerprint=pending, certificate=pending_cert, "
                            "pinned_at={now}, pinned_by=?, " + _CLEARED, (by,),
                            extra=" AND pending IS NOT NULL")

    def arm(self, cluster: str) -> bool:
        """A bootstrap script was fetched: the next key first reported from now on (within
        the arm window) is pinned. Whether anything was written: not when the row holds an
        arm from under :attr:`arm_refresh` ago, which is used up by the same next new key
        (a key pinned since has cleared it, and then this arm is written)."""
        if self.db.fetchone("SELECT 1 FROM cm_sealing_keys WHERE cluster=? "
                            "AND armed_at > {now} - ?", (cluster, self.arm_refresh)):
            return False  # found by a read: on PostgreSQL an upsert that changes nothing locks
        return self.db.execute(  # conditional again: another replica may have armed it since
            "INSERT INTO cm_sealing_keys (cluster, version, armed_at) VALUES (?, 1, {now}) "
            "ON CONFLICT (cluster) DO UPDATE SET armed_at=excluded.armed_at, "
            "version=cm_sealing_keys.version+1 WHERE cm_sealing_keys.armed_at IS NULL "
            "OR cm_sealing_keys.armed_at <= excluded.armed_at - ?",
            (cluster, self.arm_refresh)) == 1

    def forget(self, cluster: str) -> None:
        """Drop the cluster's row (it was deleted)."""
        self.db.execute("DELETE FROM cm_sealing_keys WHERE cluster=?", (cluster,))

    def _update(self, pin: Pin, assignments: str, params: tuple, extra: str = "") -> bool:
        """One conditional update of ``pin``'s row (``assignments`` and ``extra`` are this
        module's constants; values go in ``params``); whether it was still that version."""
        return self.db.execute(
            f"UPDATE cm_sealing_keys SET {assignments}, version=version+1 "  # noqa: S608
            f"WHERE cluster=? AND version=?{extra}",
            (*params, pin.cluster, pin.version)) == 1
