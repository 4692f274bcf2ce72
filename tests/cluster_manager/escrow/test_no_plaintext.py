"""With escrow on, a sealed value appears nowhere but in its seals: not in the Cluster
Manager's database (file and WAL), any service's log, /metrics, the listing, the status, or
any Git object — through seals, refused and dry-run seals, a re-seal and a removal."""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa

from harness.gitcli import GIT_ENV
from harness.servers import Api
from harness.stack import Stack
from tests.cluster_manager.escrow.conftest import (
    approve,
    bootstrap,
    cm_status,
    database,
    fingerprint,
    listing,
    rows,
    secret_files,
    secret_url,
    swap_certificate,
    wait_resealed,
)
from tests.cluster_manager.escrow.unseal import unseal_file


def forms(value: bytes) -> set[bytes]:
    """``value`` as bytes, hex, and base64 (standard and URL-safe) at each of the three
    alignments it can have inside a longer base64 text (without the edge characters that
    depend on its neighbours)."""
    found = {value, value.hex().encode(), value.hex().upper().encode()}
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(bytes(shift) + value)
            found.add(text[4 if shift else 0:-4])
    return {f for f in found if len(f) >= 16}


def leaks(blob: bytes, values: dict[str, bytes]) -> list[str]:
    return [name for name, value in values.items() for form in forms(value) if form in blob]


def test_the_search_finds_every_form() -> None:
    value = b"PLAINTEXT-0123456789abcdef"
    for prefix in (b"", b"x", b"xy", b"xyz"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            assert leaks(b"<" + encode(prefix + value + b"tail") + b">", {"v": value})
    assert leaks(b"..." + value.hex().encode() + b"...", {"v": value})
    assert leaks(b"..." + value + b"...", {"v": value})
    assert not leaks(base64.b64encode(b"PLAINTEXT-01234X6789abcdef"), {"v": value})


def git_objects(repos: Path) -> bytes:
    out = b""
    for bare in sorted(repos.glob("*.git")):
        out += subprocess.run(["git", "--git-dir", str(bare), "cat-file",
                               "--batch-all-objects", "--batch"], env=os.environ | GIT_ENV,
                              capture_output=True, check=True, timeout=60).stdout
    return out


def test_values_appear_nowhere(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "plaintext-edge")
    run = uuid.uuid4().hex
    values = {f"{ns}/{name}/{key}": f"PLAINTEXT-{run}-{ns}-{name}-{key}".encode()
              for ns, name, key in [("ops", "db", "password"), ("ops", "db", "user"),
                                    ("ops", "api", "token"), ("web", "tls", "key")]}
    values["ops/bin/blob"] = b"\x00\x01BINARY\xfe\xff" + bytes.fromhex(run) * 2
    scopes = {"ops/api": "namespace-wide", "web/tls": "cluster-wide"}
    for place, value in values.items():
        ns, name, key = place.split("/")
        query = f"?scope={scopes.get(f'{ns}/{name}', 'strict')}"
        r = root_api.put(secret_url(cluster.uuid, ns, name, key) + query, data=value)
        assert r.status_code == 204, r.text
    # refused and dry-run seals carry values too
    refused = {"refused-scope": f"REFUSED-{run}-scope".encode(),
               "refused-query": f"REFUSED-{run}-query".encode(),
               "dryrun": f"DRYRUN-{run}-value".encode()}
    assert root_api.put(secret_url(cluster.uuid, "ops", "api", "other") + "?scope=strict",
                        data=refused["refused-scope"]).status_code == 409
    assert root_api.put(secret_url(cluster.uuid, "ops", "db", "x") + "?scope=nope",
                        data=refused["refused-query"]).status_code == 400
    assert root_api.put(secret_url(cluster.uuid, "ops", "db", "y") + "?dryrun",
                        data=refused["dryrun"]).status_code == 204
    everything = values | refused

    # a re-seal moves every value through the escrow; then one key is removed
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    swap_certificate(escrow_stack, cluster, new_key)
    approve(root_api, cluster, new_key)
    wait_resealed(root_api, cluster.uuid, new_key)
    assert root_api.delete(secret_url(cluster.uuid, "ops", "db", "user")).status_code == 204
    unsealed = {}
    for doc in secret_files(escrow_stack, cluster.uuid).values():
        for key, value in unseal_file(new_key, doc).items():
            unsealed[f"{doc['metadata']['namespace']}/{doc['metadata']['name']}/{key}"] = value
    assert unsealed == {k: v for k, v in values.items() if k != "ops/db/user"}  # really there
    assert len(rows(escrow_stack, cluster.uuid)) == 4

    db = database(escrow_stack)
    for path in (db, db.with_name(db.name + "-wal")):
        assert path.exists(), path
        assert leaks(path.read_bytes(), everything) == [], path
    places = sorted(p for p in escrow_stack.root.rglob("*") if p.is_file()
                    and p.name != "escrow.key")
    assert {db, *escrow_stack.root.glob("*.log")} <= set(places)
    for path in places:  # every file of the stack: the three logs, databases, repos
        assert leaks(path.read_bytes(), everything) == [], path
    logs = b"".join(p.read_bytes() for p in escrow_stack.root.glob("*.log"))
    assert b"sealed ops/db key password" in logs  # the logs do talk about the seals
    assert fingerprint(new_key).encode() in logs  # ... and the re-seal
    objects = git_objects(escrow_stack.repos)
    assert b"SealedSecret" in objects
    assert leaks(objects, everything) == []

    metrics = Api(escrow_stack.manager.url).get("/metrics")
    assert metrics.status_code == 200
    assert leaks(metrics.content, everything) == []
    for answer in (str(listing(root_api, cluster.uuid)), str(cm_status(root_api, cluster.uuid)),
                   root_api.get(f"/v1/cluster/{cluster.uuid}/secret?unused=true").text):
        assert leaks(answer.encode(), everything) == []
