"""The pinned sealing key's rules on a real SQLite file: first key pinned, a later one held,
approval, a bootstrap's arm (and its window), and conditional writes that lose races."""

from __future__ import annotations

from pathlib import Path

import pytest

from fplus.cluster_manager.db.sqlite import SqliteDatabase
from fplus.cluster_manager.keypin import BOOTSTRAP, SCHEMA, KeyPins

C = "0c6e8d1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"


def pins(tmp_path: Path, arm_window: float = 3600.0) -> KeyPins:
    db = SqliteDatabase(tmp_path / "cm.sqlite")
    db.prepare(SCHEMA)
    return KeyPins(db, arm_window)


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
    keys.arm(C)
    late = keys.observe(C, "SHA256:b", "cert-b")
    assert (late.fingerprint, late.pending, late.armed_at) == ("SHA256:a", "SHA256:b", None)


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
