"""The Done-when test: a new edge key pair gets every escrowed secret re-sealed to it in one
commit (checked with an unsealer written here); without escrow, nothing is re-sealed and
every key is listed for re-posting."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from harness.gitcli import bare, fsck_clean
from harness.servers import Api
from harness.stack import Stack, wait_for
from tests.cluster_manager.escrow.conftest import (
    INTERVAL,
    approve,
    bootstrap,
    cm_status,
    fingerprint,
    head,
    layout,
    repo,
    rows,
    seal_all,
    sealed_entries,
    secret_files,
    start,
    swap_certificate,
    wait_resealed,
)
from tests.cluster_manager.escrow.unseal import label_of, opens, unseal_file

SECRETS = layout(50, several_every=5)  # 50 secrets, 10 of them with three keys: 70 keys


@pytest.fixture(scope="module")
def plain_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack whose Cluster Manager runs without --secret-escrow."""
    running = start(tmp_path_factory.mktemp("escrow-off"), escrow=False)
    yield running
    running.stop()


def unsealed_repo(stack: Stack, cluster: str, key: rsa.RSAPrivateKey,
                  ref: str = "main") -> dict[tuple[str, str, str], bytes]:
    found = {}
    for doc in secret_files(stack, cluster, ref).values():
        meta = doc["metadata"]
        for k, value in unseal_file(key, doc).items():
            found[(meta["namespace"], meta["name"], k)] = value
    return found


def test_new_key_pair_reseals_every_escrowed_key_in_one_commit(
        escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "reseal-edge")
    old_key = cluster.key
    values = seal_all(escrow_stack, cluster.uuid, SECRETS)
    assert len(values) == 70 and len({v for v in values.values()}) == 70
    assert unsealed_repo(escrow_stack, cluster.uuid, old_key) == values
    before = head(escrow_stack, cluster.uuid)
    assert cm_status(root_api, cluster.uuid)["secrets"] == {
        "sealedTo": fingerprint(old_key), "pending": 0, "repost": 0, "escrow": True}
    time.sleep(4 * INTERVAL)
    assert head(escrow_stack, cluster.uuid) == before  # nothing to re-seal: no commit

    new_key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    swap_certificate(escrow_stack, cluster, new_key)
    approve(root_api, cluster, new_key)  # a changed key is pinned once approved
    secrets = wait_resealed(root_api, cluster.uuid, new_key)
    assert secrets == {"sealedTo": fingerprint(new_key), "pending": 0, "repost": 0,
                       "escrow": True}
    time.sleep(4 * INTERVAL)  # a second pass must find nothing more to do

    git_repo = repo(escrow_stack, cluster.uuid)
    commits = bare(git_repo, "rev-list", f"{before}..main").split()
    assert len(commits) == 1, commits
    touched = set(bare(git_repo, "diff-tree", "--no-commit-id", "--name-only", "-r",
                       commits[0]).split())
    assert touched == {f"edo/secrets/{ns}/{name}.yaml" for ns, name, _, _ in SECRETS}
    assert touched == set(secret_files(escrow_stack, cluster.uuid))
    assert "Re-seal 70 secret keys" in bare(git_repo, "log", "-1", "--format=%s")

    assert unsealed_repo(escrow_stack, cluster.uuid, new_key) == values
    for doc in secret_files(escrow_stack, cluster.uuid).values():
        meta, template = doc["metadata"], doc["spec"]["template"]["metadata"]
        assert (template["namespace"], template["name"]) == (meta["namespace"], meta["name"])
        assert not any(opens(old_key, value, label_of(doc))  # no longer for the old key
                       for value in doc["spec"]["encryptedData"].values())
    fsck_clean(git_repo)

    entries = sealed_entries(root_api, cluster.uuid)
    assert set(entries) == set(values)
    assert {(e["certFingerprint"], e["escrowed"], e["needsRepost"])
            for e in entries.values()} == {(fingerprint(new_key), True, False)}
    assert {r[1] for r in rows(escrow_stack, cluster.uuid).values()} == {fingerprint(new_key)}

    audit = root_api.get("/v1/audit", params={"cluster": cluster.uuid, "limit": "1000"}).json()
    resealed = [e for e in audit["entries"] if e["action"] == "secret.reseal"]
    assert sorted(e["target"]["name"] for e in resealed) == sorted(
        "/".join(place) for place in values)  # one row per key re-sealed, in the one pass
    assert {(e["principal"]["name"], e["status"], e["outcome"], e["target"]["kind"])
            for e in resealed} == {("cluster-manager", 0, "ok", "secret")}
    assert not any(value.decode("latin-1") in repr(audit) for value in values.values())


def test_without_escrow_nothing_is_resealed_and_all_keys_need_reposting(
        plain_stack: Stack) -> None:
    api = Api(plain_stack.manager.url, plain_stack.admin.auth)
    cluster = bootstrap(plain_stack, "no-escrow-edge")
    old_key = cluster.key
    secrets = layout(40, several_every=8)  # 40 secrets, 5 with three keys: 50 keys
    values = seal_all(plain_stack, cluster.uuid, secrets)
    assert len(values) == 50
    assert cm_status(api, cluster.uuid)["secrets"] == {
        "sealedTo": fingerprint(old_key), "pending": 0, "repost": 0, "escrow": False}
    records = rows(plain_stack, cluster.uuid)
    assert set(records) == set(values)
    assert {r[2:] for r in records.values()} == {(None, None, None)}  # no value kept
    before = head(plain_stack, cluster.uuid)

    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    swap_certificate(plain_stack, cluster, new_key)
    approve(api, cluster, new_key)
    secrets_status = wait_for(lambda: (s := cm_status(api, cluster.uuid)["secrets"])
                              ["sealedTo"] == fingerprint(new_key) and s, what="new key seen")
    assert secrets_status == {"sealedTo": fingerprint(new_key), "pending": 0, "repost": 50,
                              "escrow": False}
    time.sleep(6 * INTERVAL)
    assert head(plain_stack, cluster.uuid) == before  # nothing re-sealed
    assert unsealed_repo(plain_stack, cluster.uuid, old_key) == values

    entries = sealed_entries(api, cluster.uuid)
    assert set(entries) == set(values)
    for entry in entries.values():
        assert entry["needsRepost"] is True and entry["escrowed"] is False
        assert entry["certFingerprint"] == fingerprint(old_key)
    assert cm_status(api, cluster.uuid)["secrets"]["repost"] == 50

    # re-posting one key clears it
    ns, name, key = next(iter(values))
    scope = next(s for n, m, s, _ in secrets if (n, m) == (ns, name))
    r = api.put(f"/v1/cluster/{cluster.uuid}/secret/{ns}/{name}/{key}?scope={scope}",
                data=values[(ns, name, key)])
    assert r.status_code == 204, r.text
    wait_for(lambda: cm_status(api, cluster.uuid)["secrets"]["repost"] == 49,
             timeout=10, what="one key re-posted")  # after the sealing-key cache expires
    assert sealed_entries(api, cluster.uuid)[(ns, name, key)]["needsRepost"] is False
