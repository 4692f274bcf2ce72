"""The Done-when test of backup and restore, on real processes: a stack with Ready clusters,
an Edge deployment, a sealed secret (escrow on) and an extra grant is backed up, stopped and
wiped; a fresh stack (new data dirs, the escrow key kept apart and given back) restored from
the backup has its clusters Ready at the same commits with the sealed file in the repo,
refuses bootstrap URLs issued before the backup, and seals and re-seals. Then the refusals:
a non-empty target, an incomplete backup, an old unauthenticated one and a backup without a
key to authenticate it write nothing."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.escrow import keyring
from fplus.config_store import uuids
from harness.gitcli import bare
from harness.servers import (
    ADMIN_PASSWORD,
    Api,
    admin_env,
    run_command,
)
from harness.stack import Stack, clone_url, git, wait_for
from tests.backup.stacks import cli, fresh_stack, restart_manager, state
from tests.cluster_manager.api.conftest import Cluster
from tests.cluster_manager.api.test_bootstrap import credentials
from tests.cluster_manager.escrow.conftest import (
    approve,
    bootstrap,
    fingerprint,
    keyfile_of,
    start,
    swap_certificate,
    wait_resealed,
)
from tests.conftest import grant, make_user

SECRET = ("fplus-edge", "db", "password")
SHARED = (uuids.Shared.HelmChartsRepo, uuids.Shared.FluxSystemRepo)
VALUE = b"backup-test-value-\x00\xff"
OPERATOR_PASSWORD = "operator-password-1"


@dataclass
class Restored:
    """What the test left behind: the restored stack and the facts it checks."""

    stack: Stack
    backup: Path
    clusters: list[Cluster]
    heads: dict[str, str]
    """Each cluster's head when the backup was taken."""
    restored_heads: dict[str, str]
    """Each cluster's head once the restored Cluster Manager found it Ready (before any
    test changes it: tests may run in any order)."""
    old_url: str
    operator: str
    edge: dict[str, tuple[str, str]]
    """The second cluster's edge credentials (from a bootstrap script run before the backup)."""
    audit: list[dict[str, Any]]
    """The audit log's rows when the backup was taken, oldest first."""
    key: Path
    """The escrow key file, kept apart from the backup (it authenticates it too)."""


def _cm(stack: Stack) -> Api:
    return Api(stack.manager.url, ("admin", ADMIN_PASSWORD))


def _head(stack: Stack, cluster: str) -> str:
    return bare(stack.repos / f"{cluster}.git", "rev-parse", "main").strip()


def _ready(api: Api, cluster: Cluster) -> bool:
    r = api.get(f"/v1/cluster/{cluster.uuid}/status")
    return r.ok and r.json()["phase"] == "Ready"


def _audit(stack: Stack) -> list[dict[str, Any]]:
    """Every row of the stack's audit log, oldest first, without its number."""
    r = _cm(stack).get("/v1/audit", params={"limit": "1000"})
    assert r.status_code == 200 and r.json()["next"] is None, r.text
    return [{k: v for k, v in e.items() if k != "seq"} for e in reversed(r.json()["entries"])]


def _chart(stack: Stack) -> str:
    r = stack.admin.post("/v2/object", json={"class": uuids.Class.HelmChart})
    assert r.status_code == 201, r.text
    chart = r.json()["uuid"]
    assert stack.admin.put(f"/v2/app/{uuids.App.Info}/object/{chart}",
                           json={"name": "MQTT broker"}).status_code == 201
    assert stack.admin.put(f"/v2/app/{uuids.App.HelmChartTemplate}/object/{chart}",
                           json={"chart": "mqtt-broker", "values": {}}).status_code == 201
    return chart


def _edge_credentials(stack: Stack, api: Api, cluster: str,
                      where: Path) -> dict[str, tuple[str, str]]:
    """Fetch a bootstrap script and use its Flux password once, as an edge that ran it
    (the new passwords are then the only ones)."""
    r = api.post(f"/v1/cluster/{cluster}/bootstrap-url")
    assert r.status_code == 200, r.text
    found = credentials(Api("").get(r.json()).text)
    clone = git("clone", "-q", clone_url(stack, *found["flux-secrets"], cluster), str(where))
    assert clone.returncode == 0, clone.stderr
    return found


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restored]:
    root = tmp_path_factory.mktemp("backup")
    first = start(root / "a", escrow=True)
    try:
        clusters = [bootstrap(first, "bk-one"), bootstrap(first, "bk-two")]
        one = clusters[0].uuid
        api = _cm(first)
        r = api.post(f"/v1/cluster/{one}/deployment", json={"name": "broker",
                                                             "chart": _chart(first)})
        assert r.status_code == 201, r.text
        r = api.put(f"/v1/cluster/{one}/secret/{'/'.join(SECRET)}", data=VALUE)
        assert r.status_code == 204, r.text
        operator, _ = make_user(first.admin, "bk-operator", OPERATOR_PASSWORD)
        grant(first.admin, operator, uuids.EdgePerm.Clusters, one)
        r = api.post(f"/v1/cluster/{one}/bootstrap-url")
        assert r.status_code == 200, r.text
        old_url = r.json().removeprefix(first.manager.url)
        edge = _edge_credentials(first, api, clusters[1].uuid, root / "clone-a")
        heads = {c.uuid: _head(first, c.uuid) for c in clusters}
        audit = _audit(first)
        done = cli("backup", first, "--out", str(root / "backup"),
                   key=keyfile_of(root / "a"))
        assert done.returncode == 0, done.stderr
        assert "escrow key is NOT in this backup" in done.stdout
        assert "Backed up 2 cluster(s)" in done.stdout
    finally:
        first.stop()
    kept = root / "kept-apart.key"
    shutil.copy(keyfile_of(root / "a"), kept)  # the escrow key, kept apart from the backup
    shutil.rmtree(root / "a")
    second = fresh_stack(root / "b", first, kept)
    try:
        wait_for(lambda: all(bare(second.repos / f"{repo}.git", "for-each-ref", check=False)
                             for repo in SHARED), what="the fresh stack's shared repos")
        empty = state(second)
        refused = cli("restore", second, str(root / "backup"), key=kept)
        assert refused.returncode != 0 and "is running" in refused.stderr, refused.stderr
        assert state(second) == empty
        second.manager.stop()  # a restore runs with the Cluster Manager stopped
        done = cli("restore", second, str(root / "backup"), key=kept)
        assert done.returncode == 0, done.stderr
        assert "escrow key is NOT in this backup" in done.stdout
        restart_manager(second, kept)
        api = _cm(second)
        for cluster in clusters:
            wait_for(functools.partial(_ready, api, cluster), what=f"{cluster.name} Ready")
        yield Restored(second, root / "backup", clusters, heads,
                       {c.uuid: _head(second, c.uuid) for c in clusters}, old_url, operator,
                       edge, audit, kept)
    finally:
        second.stop()


def test_backup_holds_what_was_taken_and_no_plain_secret(restored: Restored) -> None:
    manifest = json.loads((restored.backup / "manifest.json").read_text())
    assert manifest["format"] == "fplus-backup/2"
    assert {c.uuid for c in restored.clusters} <= set(manifest["repos"])
    assert manifest["tables"] == {"cm_sealed_keys": 1, "cm_sealing_keys": 2,
                                  "cm_audit": len(restored.audit)}
    assert "escrow key" in manifest["escrowKey"]
    assert "escrow key is NOT in this backup" in (restored.backup / "README.txt").read_text()
    everything = b"".join(p.read_bytes() for p in restored.backup.rglob("*") if p.is_file())
    assert VALUE not in everything and OPERATOR_PASSWORD.encode() not in everything
    assert ADMIN_PASSWORD.encode() not in everything
    assert not list(restored.backup.rglob("*.key"))


def test_clusters_are_ready_at_the_same_commits_with_the_sealed_file(
        restored: Restored) -> None:
    stack, api = restored.stack, _cm(restored.stack)
    for uuid, head in restored.heads.items():
        log = bare(stack.repos / f"{uuid}.git", "log", "--stat", "--format=%H %s", "-3")
        assert restored.restored_heads[uuid] == head, log
    for cluster in restored.clusters:
        assert api.get(f"/v1/cluster/{cluster.uuid}/status").json()["phase"] == "Ready"
    one = restored.clusters[0].uuid
    repo = stack.repos / f"{one}.git"
    path = f"edo/secrets/{SECRET[0]}/{SECRET[1]}.yaml"
    sealed = bare(repo, "show", f"{restored.restored_heads[one]}:{path}")
    assert "SealedSecret" in sealed and SECRET[2] in sealed
    assert path in bare(repo, "ls-tree", "-r", "--name-only", "main")
    r = api.get(f"/v1/cluster/{one}/deployment")
    assert [d["name"] for d in r.json()["deployments"]] == ["broker"], r.text


def test_the_audit_log_came_back_in_its_order_with_its_times(restored: Restored) -> None:
    actions = [e["action"] for e in restored.audit]
    assert {"secret.seal", "deployment.create", "bootstrap-url.issue",
            "phase.changed"} <= set(actions), actions
    after = _audit(restored.stack)
    assert after[:len(restored.audit)] == restored.audit  # the oldest rows, as they were


def test_the_directory_names_the_restored_stacks_services(restored: Restored) -> None:
    stack = restored.stack
    r = stack.admin.get(f"/v1/service/{uuids.Service.Git}")
    assert r.status_code == 200, r.text
    assert [s["url"] for s in r.json()] == [stack.git.url]


def test_tokens_issued_before_the_backup_are_refused(restored: Restored) -> None:
    r = Api(restored.stack.manager.url).get(restored.old_url)
    assert r.status_code == 401, r.text


def test_the_edges_accounts_keep_working(restored: Restored, tmp_path: Path) -> None:
    stack, cluster = restored.stack, restored.clusters[1].uuid
    clone = git("clone", "-q", clone_url(stack, *restored.edge["flux-secrets"], cluster),
                str(tmp_path / "clone"))
    assert clone.returncode == 0, clone.stderr
    sync = Api(stack.store.url, restored.edge["edge-sync-credentials"])
    assert sync.get("/v2/whoami/uuid").status_code == 200


def test_the_extra_grant_and_its_principal_came_back(restored: Restored) -> None:
    operator = Api(restored.stack.manager.url, ("bk-operator", OPERATOR_PASSWORD))
    one, two = (c.uuid for c in restored.clusters)
    assert operator.get(f"/v1/cluster/{one}/status").status_code == 200
    assert operator.get(f"/v1/cluster/{two}/status").status_code == 403


def test_a_new_seal_and_a_reseal_work(restored: Restored) -> None:
    stack, api = restored.stack, _cm(restored.stack)
    cluster = restored.clusters[0]
    before = _head(stack, cluster.uuid)
    r = api.put(f"/v1/cluster/{cluster.uuid}/secret/{SECRET[0]}/{SECRET[1]}/user",
                data=b"new-value")
    assert r.status_code == 204, r.text
    assert _head(stack, cluster.uuid) != before
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    swap_certificate(stack, cluster, new_key)
    approve(api, cluster, new_key)
    secrets = wait_resealed(api, cluster.uuid, new_key)
    assert secrets["sealedTo"] == fingerprint(new_key) and secrets["repost"] == 0


def test_restore_refuses_a_target_that_is_not_empty(restored: Restored) -> None:
    stack = restored.stack
    before = state(stack)
    done = cli("restore", stack, str(restored.backup), key=restored.key)
    assert done.returncode != 0
    assert "not empty" in done.stderr and "Edge cluster" in done.stderr
    assert state(stack) == before


def test_restore_refuses_an_incomplete_or_unknown_backup(restored: Restored,
                                                         tmp_path: Path) -> None:
    stack = restored.stack
    before = state(stack)
    broken = tmp_path / "broken"
    shutil.copytree(restored.backup, broken)
    next((broken / "repos").glob("*.bundle")).unlink()
    done = cli("restore", stack, str(broken), key=restored.key)
    assert done.returncode != 0 and "incomplete backup" in done.stderr, done.stderr
    manifest = json.loads((restored.backup / "manifest.json").read_text())
    (broken / "manifest.mac").unlink()  # as a backup taken before backups had a MAC
    (broken / "manifest.json").write_text(json.dumps(manifest | {"format": "fplus-backup/1"}))
    done = cli("restore", stack, str(broken), key=restored.key)
    assert done.returncode != 0 and "not authenticated" in done.stderr, done.stderr
    assert "before fplus-backup/2" in done.stderr and "take a new backup" in done.stderr
    done = cli("restore", stack, str(tmp_path / "nothing"), key=restored.key)
    assert done.returncode != 0 and "not a backup" in done.stderr, done.stderr
    done = run_command("fplus.cluster_manager.cli", "restore", str(restored.backup),
                       "--config-store", stack.store.url, "--data-dir", str(tmp_path / "cm"),
                       "--git-repos", str(stack.repos), "--backup-key-file",
                       str(restored.key), env=admin_env(stack.store.url))
    assert done.returncode != 0 and "no Cluster Manager database" in done.stderr, done.stderr
    assert not (tmp_path / "cm").exists()
    assert state(stack) == before


def test_backup_and_restore_need_a_key_file(restored: Restored, tmp_path: Path) -> None:
    """No escrow key file named and none in the data dir: both refused, nothing written."""
    stack = restored.stack
    before = state(stack)
    for args in (("backup", "--out", str(tmp_path / "out")), ("restore", str(restored.backup))):
        done = cli(args[0], stack, *args[1:])
        assert done.returncode != 0, done.stdout
        assert "--backup-key-file" in done.stderr and "escrow init" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert state(stack) == before


def test_a_backup_key_file_of_its_own_authenticates_the_backup(restored: Restored,
                                                               tmp_path: Path) -> None:
    """A key file made for backups alone (a stack without escrow): the backup names its
    key, and a restore with another key file is refused."""
    own = tmp_path / "backup.key"
    keyring.save(own, keyring.generate(), replace=False)
    done = cli("backup", restored.stack, "--out", str(tmp_path / "out"), "--backup-key-file",
               str(own))
    assert done.returncode == 0, done.stderr
    mac = json.loads((tmp_path / "out" / "manifest.mac").read_text())
    assert mac["alg"] == "HMAC-SHA256" and mac["keyId"] == keyring.load(own).current
    assert own.read_bytes() not in (tmp_path / "out" / "manifest.mac").read_bytes()
    done = cli("restore", restored.stack, str(tmp_path / "out"), key=restored.key)
    assert done.returncode != 0 and "not authentic" in done.stderr, done.stderr
    assert "does not hold" in done.stderr


def test_backup_refuses_a_directory_that_is_not_empty(restored: Restored,
                                                      tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    done = cli("backup", restored.stack, "--out", str(tmp_path / "full"), key=restored.key)
    assert done.returncode != 0 and "not an empty directory" in done.stderr
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["file"]


def test_backup_needs_the_administrator(restored: Restored, tmp_path: Path) -> None:
    stack = restored.stack
    env = admin_env(stack.store.url) | {"FPLUS_USER": "bk-operator",
                                        "FPLUS_PASSWORD": OPERATOR_PASSWORD,
                                        "FPLUS_SECRET_ESCROW": str(restored.key)}
    done = run_command("fplus.cluster_manager.cli", "backup", "--out", str(tmp_path / "out"),
                       "--config-store", stack.store.url, "--data-dir",
                       str(stack.root / "cm"), "--git-repos", str(stack.repos), env=env)
    assert done.returncode != 0, done.stdout
    assert "403" in done.stderr and "wildcard read grants" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
