"""Finding 2: the edge's own credentials must not unlock the escrowed secrets.

The attack, replayed against real processes with secret escrow on: whoever holds the two
accounts of a bootstrap script (a stolen edge, a leaked script) writes its own certificate
into the Edge cluster status entry with the Edge Sync account, waits for the re-seal, clones
the repo with the Flux account and decrypts. The sealing key is pinned: the first certificate
after a bootstrap is taken, a later one waits for an operator's approval (or a re-bootstrap)
and nothing is sealed or re-sealed to it meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fplus.config_store import uuids
from harness.certs import make_cert
from harness.servers import Api
from harness.stack import Stack, clone_url, git, wait_for
from tests.cluster_manager.api.conftest import commission
from tests.cluster_manager.api.test_bootstrap import credentials, new_url
from tests.cluster_manager.escrow.conftest import (
    cm_status,
    fingerprint,
    head,
    layout,
    new_key,
    seal_all,
    secret_url,
    start,
    wait_resealed,
)
from tests.cluster_manager.escrow.unseal import label_of, opens

EDGE = uuids.App.EdgeClusterStatus


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start(tmp_path_factory.mktemp("key-pin"), escrow=True)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    return Api(stack.manager.url, stack.admin.auth)


class Edge:
    """A cluster bootstrapped by its operator: the script's two accounts, as the edge (or
    whoever took them) holds them."""

    def __init__(self, stack: Stack, root: Api, name: str) -> None:
        self.stack, self.root, self.name = stack, root, name
        self.uuid = commission(stack, name)
        self.bootstrap()

    def bootstrap(self) -> None:
        """Fetch a new script through a new one-time URL, as the edge does."""
        script = Api("").get(new_url(self.root, self.uuid))
        assert script.status_code == 200, script.text
        found = credentials(script.text)
        self.sync = Api(self.stack.store.url, found["edge-sync-credentials"])
        self.flux = found["flux-secrets"]

    def report(self, key: Any) -> None:
        """Write ``key``'s certificate with the Edge Sync account, as Edge Sync would."""
        r = self.sync.patch(f"/v2/app/{EDGE}/object/{self.uuid}",
                            json={"kubeseal_cert": make_cert(key)},
                            headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code in (201, 204), r.text

    def clone(self, where: Path) -> dict[tuple[str, str, str], tuple[str, bytes]]:
        """Every sealed value in the repo, cloned with the Flux account:
        (namespace, name, key) → (ciphertext, label)."""
        done = git("clone", "-q", clone_url(self.stack, *self.flux, self.uuid), str(where))
        assert done.returncode == 0, done.stderr
        found = {}
        for path in (where / "edo" / "secrets").rglob("*.yaml"):
            doc = yaml.safe_load(path.read_text())
            meta = doc["metadata"]
            for key, value in doc["spec"]["encryptedData"].items():
                found[(meta["namespace"], meta["name"], key)] = (value, label_of(doc))
        return found


def status(root: Api, edge: Edge) -> dict[str, Any]:
    return cm_status(root, edge.uuid)


def held_by_the_leader(stack: Stack, edge: Edge, key: Any) -> bool:
    """The leader's re-seal pass saw ``key`` reported and held the re-seal back (its log)."""
    line = (f"cluster {edge.uuid}: the edge reports the sealing key {fingerprint(key)}, "
            "which no operator has approved").encode()
    return any(line in log.read_bytes() for log in stack.root.glob("cluster_manager-*.log"))


def test_the_edges_credentials_cannot_get_secrets_resealed_to_their_key(
        stack: Stack, root: Api, tmp_path: Path) -> None:
    edge = Edge(stack, root, "stolen-edge")
    real = new_key()
    edge.report(real)  # the first certificate after the bootstrap: pinned
    values = seal_all(stack, edge.uuid, layout(6, several_every=3), tag=b"pin")
    before = head(stack, edge.uuid)

    attacker = new_key()
    edge.report(attacker)  # the Edge Sync account writes the attacker's certificate
    wait_for(lambda: head(stack, edge.uuid) != before
             or held_by_the_leader(stack, edge, attacker), timeout=60,
             what="the leader's re-seal pass to see the new key")
    # the attacker clones with the Flux account: nothing opens with its key
    sealed = edge.clone(tmp_path / "attack")
    assert set(sealed) == set(values)
    assert not any(opens(attacker, c, label) for c, label in sealed.values())
    assert all(opens(real, c, label) for c, label in sealed.values())
    assert head(stack, edge.uuid) == before  # "Re-seal N secret keys" never happened

    seen = status(root, edge)
    assert seen["sealingKey"]["fingerprint"] == fingerprint(real)
    assert seen["sealingKey"]["pinnedBy"] == "bootstrap"
    waiting = seen["pendingKey"]
    assert waiting["fingerprint"] == fingerprint(attacker)
    assert waiting["since"] and waiting["reportedBy"] == "op1sync/stolen-edge"
    assert "no operator has approved" in waiting["reason"]
    assert "sealing-key/approve" in waiting["reason"]
    assert seen["secrets"]["sealedTo"] == fingerprint(real)
    assert seen["secrets"]["pending"] == 0 and seen["secrets"]["waiting"] == waiting["reason"]

    # a seal made now goes to the pinned key too
    r = root.put(secret_url(edge.uuid, "team-a", "after", "token"), data=b"sealed-after")
    assert r.status_code == 204, r.text
    sealed = edge.clone(tmp_path / "after")
    assert set(sealed) == {*values, ("team-a", "after", "token")}
    assert not any(opens(attacker, c, label) for c, label in sealed.values())
    assert all(opens(real, c, label) for c, label in sealed.values())


def test_an_approved_key_is_resealed_to(stack: Stack, root: Api) -> None:
    edge = Edge(stack, root, "renewed-edge")
    old = new_key()
    edge.report(old)
    wait_for(lambda: status(root, edge).get("sealingKey"), what="the pinned key")
    seal_all(stack, edge.uuid, layout(3, several_every=2), tag=b"renew")
    renewed = new_key()
    edge.report(renewed)
    waiting = wait_for(lambda: status(root, edge).get("pendingKey"), what="the pending key")
    assert waiting["fingerprint"] == fingerprint(renewed)

    r = root.post(f"/v1/cluster/{edge.uuid}/sealing-key/approve",
                  json={"fingerprint": fingerprint(renewed)})
    assert r.status_code == 200, r.text
    assert r.json()["sealingKey"]["fingerprint"] == fingerprint(renewed)
    assert "pendingKey" not in r.json()
    secrets = wait_resealed(root, edge.uuid, renewed)
    assert "waiting" not in secrets
    seen = status(root, edge)
    assert seen["sealingKey"]["pinnedBy"] == stack.admin.get("/v2/whoami/uuid").json()
    assert "pendingKey" not in seen


def test_a_new_bootstrap_takes_the_next_new_key_but_not_one_reported_before(
        stack: Stack, root: Api, tmp_path: Path) -> None:
    edge = Edge(stack, root, "rebuilt-edge")
    old = new_key()
    edge.report(old)
    wait_for(lambda: status(root, edge).get("sealingKey"), what="the pinned key")
    values = seal_all(stack, edge.uuid, layout(3, several_every=2), tag=b"rebuilt")
    before = head(stack, edge.uuid)
    intruder = new_key()
    edge.report(intruder)  # reported before the operator re-bootstraps
    wait_for(lambda: held_by_the_leader(stack, edge, intruder), timeout=60,
             what="the leader to hold the intruder's key")

    edge.bootstrap()  # the operator re-bootstraps (new hardware)
    wait_for(lambda: status(root, edge)["sealingKey"].get("bootstrapArmedAt"),
             what="the pin armed by the bootstrap")
    edge.report(intruder)  # reported again: it was seen before, it still waits
    seen = status(root, edge)
    assert seen["sealingKey"]["fingerprint"] == fingerprint(old)
    assert seen["pendingKey"]["fingerprint"] == fingerprint(intruder)
    assert head(stack, edge.uuid) == before

    rebuilt = new_key()
    edge.report(rebuilt)  # the rebuilt edge's controller: first new key after the bootstrap
    wait_resealed(root, edge.uuid, rebuilt)
    seen = status(root, edge)
    assert seen["sealingKey"]["fingerprint"] == fingerprint(rebuilt)
    assert seen["sealingKey"]["pinnedBy"] == "bootstrap"
    assert "pendingKey" not in seen and seen["sealingKey"]["bootstrapArmedAt"] is None
    sealed = edge.clone(tmp_path / "clone")
    assert set(sealed) == set(values)
    assert all(opens(rebuilt, c, label) for c, label in sealed.values())
    assert not any(opens(intruder, c, label) for c, label in sealed.values())


def test_approval_refusals_write_nothing(stack: Stack, root: Api) -> None:
    edge = Edge(stack, root, "refusing-edge")
    pinned = new_key()
    edge.report(pinned)
    approve = f"/v1/cluster/{edge.uuid}/sealing-key/approve"
    r = root.post(approve, json={"fingerprint": fingerprint(pinned)})
    assert r.status_code == 409 and "no sealing key" in r.json()["error"], r.text
    waiting = new_key()
    edge.report(waiting)
    before = status(root, edge)
    assert before["pendingKey"]["fingerprint"] == fingerprint(waiting)

    wrong = root.post(approve, json={"fingerprint": fingerprint(new_key())})
    assert wrong.status_code == 409, wrong.text
    assert f"waiting for approval is {fingerprint(waiting)}" in wrong.json()["error"]
    unknown = root.post(f"/v1/cluster/{uuids.NULL[:-1]}1/sealing-key/approve",
                        json={"fingerprint": fingerprint(waiting)})
    assert unknown.status_code == 404, unknown.text
    for body in ({}, {"fingerprint": 7}, [fingerprint(waiting)]):
        bad = root.post(approve, json=body)
        assert bad.status_code == 400 and "fingerprint" in bad.json()["error"], bad.text
    assert root.post(approve, data=fingerprint(waiting)).status_code == 400
    as_edge = Api(stack.manager.url, edge.sync.auth).post(
        approve, json={"fingerprint": fingerprint(waiting)})
    assert as_edge.status_code == 403, as_edge.text  # the edge's account is no operator
    after = status(root, edge)
    assert after["sealingKey"] == before["sealingKey"]
    assert after["pendingKey"] == before["pendingKey"]
