"""Finding 4: a restore must refuse a backup changed by whoever can write where backups
are kept.

The attack, replayed against real processes: the backup's ``config-store/auth.json`` gains
every grant for a nobody principal, or its ``tables.json`` pins the attacker's sealing key
for a cluster, and the manifest's SHA-256 list is recomputed. The manifest is authenticated
(HMAC-SHA256 under a key derived from the stack's escrow key, which no backup holds): any
change is refused with one line before the target is looked at, and nothing is written. An
untampered backup still restores, and a restored pin stays a pin: a key the edge reports
that differs from it waits for approval.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fplus.cluster_manager.escrow import keyring
from fplus.config_store import uuids
from harness.certs import make_cert
from harness.gitcli import bare
from harness.servers import ADMIN_PASSWORD, Api, plain_env, run_command
from harness.stack import Stack, wait_for
from tests.backup.stacks import cli, fresh_stack, restart_manager, state
from tests.cluster_manager.api.conftest import Cluster
from tests.cluster_manager.escrow.conftest import (
    bootstrap,
    cm_status,
    fingerprint,
    keyfile_of,
    new_key,
    secret_url,
    start,
    swap_certificate,
)
from tests.conftest import make_user

SHARED = (uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo)
NOBODY = ("nobody", "nobody-password-1")
AUTH, TABLES = "config-store/auth.json", "cluster-manager/tables.json"


@dataclass
class Taken:
    """A backup, the escrow key kept apart from it, and an empty target to restore into."""

    backup: Path
    key: Path
    target: Stack
    cluster: Cluster


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Taken]:
    root = tmp_path_factory.mktemp("tamper")
    first = start(root / "a", escrow=True)
    try:
        cluster = bootstrap(first, "tamper-one")
        api = Api(first.manager.url, ("admin", ADMIN_PASSWORD))
        wait_for(lambda: cm_status(api, cluster.uuid).get("sealingKey"), what="the pin")
        r = api.put(secret_url(cluster.uuid, "fplus-edge", "db", "password"), data=b"v-1")
        assert r.status_code == 204, r.text
        make_user(first.admin, *NOBODY)  # a principal with no grant at all
        done = cli("backup", first, "--out", str(root / "backup"), key=keyfile_of(root / "a"))
        assert done.returncode == 0, done.stderr
    finally:
        first.stop()
    kept = root / "kept-apart.key"
    shutil.copy(keyfile_of(root / "a"), kept)
    shutil.rmtree(root / "a")
    target = fresh_stack(root / "b", first, kept)
    try:
        wait_for(lambda: all(bare(target.repos / f"{repo}.git", "for-each-ref", check=False)
                             for repo in SHARED), what="the fresh stack's shared repos")
        target.manager.stop()  # a restore runs with the Cluster Manager stopped
        yield Taken(root / "backup", kept, target, cluster)
    finally:
        target.stop()


def _tampered(taken: Taken, where: Path, edit: Callable[[Path], None]) -> Path:
    """A copy of the backup changed by ``edit``, its manifest's checksums recomputed."""
    shutil.copytree(taken.backup, where)
    edit(where)
    manifest = json.loads((where / "manifest.json").read_text())
    manifest["files"] = {name: hashlib.sha256((where / name).read_bytes()).hexdigest()
                         for name in manifest["files"] if (where / name).is_file()}
    (where / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return where


def _edit_json(path: Path, change: Callable[[Any], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _every_grant_to_nobody(root: Path) -> None:
    def change(auth: Any) -> None:
        nobody = next(u for u, p in auth["principals"].items() if p["name"] == NOBODY[0])
        merged: dict[str, dict[str, bool]] = {}
        for grants in auth["grants"].values():
            for permission, targets in (grants or {}).items():
                merged.setdefault(permission, {}).update(targets or {})
        auth["grants"][nobody] = merged
    _edit_json(root / AUTH, change)


def _refused(taken: Taken, backup: Path, key: Path | None = None) -> str:
    """Restore ``backup`` into the target: refused in one line, nothing written."""
    before = state(taken.target)
    done = cli("restore", taken.target, str(backup), key=key or taken.key)
    assert done.returncode != 0, done.stdout
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert state(taken.target) == before
    return done.stderr


def test_a_grant_added_with_recomputed_checksums_is_refused(taken: Taken,
                                                            tmp_path: Path) -> None:
    backup = _tampered(taken, tmp_path / "grants", _every_grant_to_nobody)
    assert "not authentic" in _refused(taken, backup)
    auth = json.loads((backup / AUTH).read_text())
    nobody = next(u for u, p in auth["principals"].items() if p["name"] == NOBODY[0])
    r = taken.target.admin.post("/v2/grant/find", json={"principal": nobody})
    assert r.status_code == 200 and r.json() == [], r.text
    nowhere = str(tmp_path / "no-stack")  # checked before any of the target is looked at
    done = run_command("fplus.cluster_manager.cli", "restore", str(backup), "--config-store",
                       taken.target.store.url, "--data-dir", nowhere, "--git-repos", nowhere,
                       "--backup-key-file", str(taken.key), env=plain_env())
    assert done.returncode != 0 and "not authentic" in done.stderr, done.stderr


def test_a_replaced_sealing_key_pin_is_refused(taken: Taken, tmp_path: Path) -> None:
    attacker = new_key()

    def pin(rows: Any) -> None:
        for row in rows["cm_sealing_keys"]:
            row["certificate"], row["fingerprint"] = make_cert(attacker), fingerprint(attacker)
    backup = _tampered(taken, tmp_path / "pin", lambda root: _edit_json(root / TABLES, pin))
    assert "not authentic" in _refused(taken, backup)


@pytest.mark.parametrize("edit", ["added", "removed", "mac-edited", "mac-removed",
                                  "manifest-edited"])
def test_any_other_change_is_refused(taken: Taken, tmp_path: Path, edit: str) -> None:
    backup = tmp_path / "changed"
    shutil.copytree(taken.backup, backup)
    if edit == "added":
        (backup / "repos" / "extra.bundle").write_bytes(b"# v2 git bundle\n")
    elif edit == "removed":
        backup = _tampered(taken, tmp_path / "fewer", lambda root: next(
            (root / "repos").glob("*.bundle")).unlink())
    elif edit == "mac-edited":
        mac = json.loads((backup / "manifest.mac").read_text())
        mac["mac"] = "0" * len(mac["mac"])
        (backup / "manifest.mac").write_text(json.dumps(mac))
    elif edit == "mac-removed":  # as a backup taken before backups were authenticated
        (backup / "manifest.mac").unlink()
    else:
        _edit_json(backup / "manifest.json", lambda m: m.update(taken="2000-01-01T00:00:00Z"))
    refusal = _refused(taken, backup)
    assert "not authentic" in refusal or "not authenticated" in refusal, refusal


def test_another_key_is_refused(taken: Taken, tmp_path: Path) -> None:
    other = tmp_path / "other.key"
    keyring.save(other, keyring.generate(), replace=False)
    assert "not authentic" in _refused(taken, taken.backup, key=other)


def test_an_untampered_backup_restores_and_its_pins_stay_pins(taken: Taken) -> None:
    done = cli("restore", taken.target, str(taken.backup), key=taken.key)
    assert done.returncode == 0, done.stderr
    restart_manager(taken.target, taken.key)
    api = Api(taken.target.manager.url, ("admin", ADMIN_PASSWORD))
    cluster = taken.cluster
    wait_for(lambda: cm_status(api, cluster.uuid).get("phase") == "Ready", 60,
             what="the restored cluster Ready")
    pinned = fingerprint(cluster.key)
    assert cm_status(api, cluster.uuid)["sealingKey"]["fingerprint"] == pinned
    other = new_key()
    swap_certificate(taken.target, cluster, other)  # the edge now reports another key
    waiting = wait_for(lambda: cm_status(api, cluster.uuid).get("pendingKey"), 60,
                       what="the reported key waiting for approval")
    assert waiting["fingerprint"] == fingerprint(other)
    assert cm_status(api, cluster.uuid)["sealingKey"]["fingerprint"] == pinned
