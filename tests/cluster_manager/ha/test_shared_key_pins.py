"""Sealing-key pins in one database seen by several replicas (separate handles, as separate
processes have), on real SQLite and real PostgreSQL: a repeated bootstrap arm writes nothing
while the row holds a recent one, and is written again as soon as another replica has used
that arm up or an approval has cleared it."""

from __future__ import annotations

from fplus.cluster_manager.keypin import SCHEMA, KeyPins
from tests.cluster_manager.ha.conftest import OpenDatabase

CLUSTER = "22222222-2222-4222-8222-222222222222"


def test_a_recent_arm_is_kept_and_a_used_one_written_again(open_db: OpenDatabase) -> None:
    first = open_db()
    first.prepare(SCHEMA)
    a, b = KeyPins(first, 3600.0, 60.0), KeyPins(open_db(), 3600.0, 60.0)
    assert a.arm(CLUSTER)  # no row yet: inserted armed
    armed = b.get(CLUSTER)
    assert armed is not None and armed.armed_at is not None and armed.fingerprint is None
    assert not b.arm(CLUSTER) and not a.arm(CLUSTER)  # a fetch again on either: kept
    assert a.get(CLUSTER) == armed
    assert b.observe(CLUSTER, "SHA256:a", "cert-a").fingerprint == "SHA256:a"
    assert a.arm(CLUSTER)  # pinning the first key used the arm up
    assert not b.arm(CLUSTER)
    taken = b.observe(CLUSTER, "SHA256:b", "cert-b")
    assert (taken.fingerprint, taken.armed_at) == ("SHA256:b", None)
    held = a.observe(CLUSTER, "SHA256:c", "cert-c")
    assert (held.fingerprint, held.pending) == ("SHA256:b", "SHA256:c")
    assert b.arm(CLUSTER)
    pending = a.get(CLUSTER)
    assert pending is not None and a.approve(pending, "operator-uuid")
    assert b.arm(CLUSTER)  # the approval cleared the arm
    first.execute("UPDATE cm_sealing_keys SET armed_at = armed_at - 61")  # past the refresh
    assert a.arm(CLUSTER)
