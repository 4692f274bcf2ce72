"""The pinned sealing key's rules on a real SQLite file: first key pinned, a later one held,
approval, a bootstrap's arm (its window, and repeated arms that write nothing), and
conditional writes that lose races."""

from __future__ import annotations

from pathlib import Path

import pytest

from fplus.cluster_manager.db.base import Params
from fplus.cluster_manager.db.sqlite import SqliteDatabase
from fplus.cluster_manager.keypin import ARM_REFRESH, BOOTSTRAP, SCHEMA, KeyPins

C = "0c6e8d1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"


class CountingDatabase(SqliteDatabase):
    """Counts the statements that may write (every write goes through ``execute``)."""

    writes = 0

    def execute(self, sql: str, params: Params = ()) -> int:
        self.writes += 1
        return super().execute(sql, params)


def pins(tmp_path: Path, arm_window: float = 3600.0, arm_refresh: float = ARM_REFRESH
         ) -> KeyPins:
    db = CountingDatabase(tmp_path / "cm.sqlite")
    db.prepare(SCHEMA)
    return KeyPins(db, arm_window, arm_refresh)


def age_arm(keys: KeyPins, seconds: float) -> None:
    """Move the recorded arm ``seconds`` into the past (as if that long had gone by)."""
    keys.db.execute("UPDATE cm_sealing_keys SET armed_at = armed_at - ?", (seconds,))


def test_first_key_is_pinned_and_a_later_one_waits_for_approval(tmp_path: Path) -> None:
    keys = pins(tmp_path)
    first = keys.observe(C, "SHA256:a", "cert-a")
    assert (first.fingerprint, first.certificate, first.pinned_by, first.pending) == (
        "SHA256:a", "cert-a", BOOTSTRAP, None)
    held = keys.observe(C, "SHA256:b", "cert-b")
    assert (held.fingerprint, held.pending, held.pending_certificate) == (
        "SHA256:a", "SHA256:b", "cert-b")
    assert held.pending_since is not None
    assert keys.observe(C, "SHA256:b", "cert-b") == held  # reported again: nothing written
    approved = keys.get(C)
    assert approved is not None and keys.approve(approved, "operator-uuid")
    after = keys.get(C)
    assert after is not None
    assert (after.fingerprint, after.certificate, after.pinned_by, after.pending) == (
        "SHA256:b", "cert-b", "operator-uuid", None)


def test_the_pinned_key_reported_again_settles_a_pending_one(tmp_path: Path) -> None:
    keys = pins(tmp_path)
    keys.observe(C, "SHA256:a", "cert-a")
    keys.observe(C, "SHA256:b", "cert-b")
    settled = keys.observe(C, "SHA256:a", "cert-a")
    assert (settled.fingerprint, settled.pending) == ("SHA256:a", None)


def test_a_bootstrap_pins_the_next_new_key_but_not_the_one_pending_before(
        tmp_path: Path) -> None:
    keys = pins(tmp_path)
    keys.observe(C, "SHA256:a", "cert-a")
    keys.observe(C, "SHA256:x", "cert-x")  # reported before the bootstrap
    keys.arm(C)
    armed = keys.observe(C, "SHA256:x", "cert-x")
    assert (armed.fingerprint, armed.pending) == ("SHA256:a", "SHA256:x")
    assert armed.armed_at is not None
    assert keys.observe(C, "SHA256:a", "cert-a").armed_at is not None  # still armed
    taken = keys.observe(C, "SHA256:y", "cert-y")
    assert (taken.fingerprint, taken.pinned_by, taken.pending, taken.armed_at) == (
        "SHA256:y", BOOTSTRAP, None, None)
    assert keys.observe(C, "SHA256:z", "cert-z").pending == "SHA256:z"  # the arm is used up


def test_an_arm_ends_after_its_window(tmp_path: Path) -> None:
    keys = pins(tmp_path, arm_window=0.0)
    keys.observe(C, "SHA256:a", "cert-a")
    assert keys.arm(C)
    late = keys.observe(C, "SHA256:b", "cert-b")
    assert (late.fingerprint, late.pending, late.armed_at) == ("SHA256:a", "SHA256:b", None)
    assert keys.arm(C)  # an ended arm is always written again, however recent


def test_a_repeated_arm_writes_nothing_until_the_refresh_has_passed(tmp_path: Path) -> None:
    keys = pins(tmp_path, arm_refresh=60.0)
    keys.observe(C, "SHA256:a", "cert-a")
    assert keys.arm(C)
    armed = keys.get(C)
    assert armed is not None and armed.armed_at is not None
    writes = keys.db.writes  # type: ignore[attr-defined]
    for _ in range(3):
        assert not keys.arm(C)
    assert keys.db.writes == writes  # type: ignore[attr-defined]  # not even a no-op write
    assert keys.get(C) == armed  # the same arm: neither armed_at nor the version moved
    age_arm(keys, 61.0)  # past the refresh, still inside the window
    aged = keys.get(C)
    assert aged is not None and aged.armed_at is not None
    assert keys.arm(C)
    renewed = keys.get(C)
    assert renewed is not None and renewed.armed_at is not None
    assert renewed.armed_at > aged.armed_at and renewed.version == armed.version + 1
    age_arm(keys, 7200.0)  # past the window: the arm has ended
    ended = keys.get(C)
    assert ended is not None and ended.armed_at is None
    assert keys.arm(C)
    rearmed = keys.observe(C, "SHA256:b", "cert-b")
    assert (rearmed.fingerprint, rearmed.pinned_by, rearmed.armed_at) == (
        "SHA256:b", BOOTSTRAP, None)


def test_an_arm_used_up_or_cleared_meanwhile_is_written_again_at_once(tmp_path: Path) -> None:
    keys = pins(tmp_path, arm_refresh=60.0)
    other = KeyPins(SqliteDatabase(tmp_path / "cm.sqlite"), 3600.0, 60.0)  # another replica
    keys.observe(C, "SHA256:a", "cert-a")
    assert keys.arm(C)
    used = other.observe(C, "SHA256:b", "cert-b")  # the arm pins the edge's new key
    assert (used.fingerprint, used.armed_at) == ("SHA256:b", None)
    assert keys.arm(C)  # within the refresh, but nothing holds an arm any more
    assert other.observe(C, "SHA256:c", "cert-c").fingerprint == "SHA256:c"
    other.observe(C, "SHA256:d", "cert-d")  # pending
    assert keys.arm(C)
    pending = other.get(C)
    assert pending is not None and pending.armed_at is not None
    assert other.approve(pending, "operator-uuid")  # an approval clears the arm
    assert keys.arm(C)
    assert other.observe(C, "SHA256:e", "cert-e").fingerprint == "SHA256:e"


def test_writes_are_conditional_on_the_version_read(tmp_path: Path) -> None:
    keys = pins(tmp_path)
    keys.observe(C, "SHA256:a", "cert-a")
    stale = keys.observe(C, "SHA256:b", "cert-b")
    keys.observe(C, "SHA256:c", "cert-c")  # another replica saw a newer report
    assert not keys.approve(stale, "operator-uuid")  # approves nothing it did not see
    now = keys.get(C)
    assert now is not None and (now.fingerprint, now.pending) == ("SHA256:a", "SHA256:c")
    keys.forget(C)
    assert keys.get(C) is None


@pytest.mark.parametrize("first", ["SHA256:a", "SHA256:b"])
def test_an_arm_before_any_key_still_takes_the_first(tmp_path: Path, first: str) -> None:
    keys = pins(tmp_path)
    keys.arm(C)
    pin = keys.observe(C, first, "cert")
    assert (pin.fingerprint, pin.pinned_by, pin.armed_at) == (first, BOOTSTRAP, None)
