"""Stacks with secret escrow on or off, bootstrapped clusters, and what the escrow tests share.

Every service is a real subprocess on 127.0.0.1 in a temp dir (``harness.servers``); the
Cluster Manager gets ``--reseal-interval 0.5`` and, with escrow on, ``--secret-escrow`` with
a key file made for the stack.
"""

from __future__ import annotations

import base64
import hashlib
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager.escrow import keyring
from harness.certs import make_cert
from harness.gitcli import bare
from harness.servers import Api, ServiceProcess, ThreadSessions, cluster_manager_process
from harness.servers import git_server_process as git_process
from harness.stack import Stack, wait_for
from tests.cluster_manager.api.conftest import Cluster, commission, report_edge

INTERVAL = 0.5
"""--reseal-interval of every Cluster Manager started here."""
Place = tuple[str, str, str]
"""(namespace, name, key) of one sealed key."""


def start(root: Path, *, escrow: bool, log_level: str = "INFO") -> Stack:
    """Config Store, Git server and a Cluster Manager with escrow on (key file
    ``root/escrow.key``) or off; whatever started is stopped if a later one fails."""
    args = ["--reseal-interval", str(INTERVAL)]
    if escrow:
        keyring.save(keyfile_of(root), keyring.generate(), replace=False)
        args += ["--secret-escrow", str(keyfile_of(root))]
    started: list[ServiceProcess] = []
    try:
        store = ServiceProcess(root / "cs", log_level=log_level)
        started.append(store.start())
        git = git_process(root / "git", store.url)
        started.append(git.start())
        manager = cluster_manager_process(root / "cm", store.url, git.url,
                                          root / "git" / "repos", *args)
        manager.log_level = log_level
        started.append(manager.start())
    except BaseException:
        for process in reversed(started):
            process.stop()
        raise
    return Stack(root, store, git, manager)


def keyfile_of(root: Path) -> Path:
    return root / "escrow.key"


def database(stack: Stack) -> Path:
    """The Cluster Manager's SQLite file (its default in its data dir)."""
    return stack.root / "cm" / "bootstrap-tokens.sqlite"


def rows(stack: Stack, cluster: str) -> dict[Place, tuple[Any, ...]]:
    """``cm_sealed_keys`` of ``cluster``, read straight from the file:
    (namespace, name, key) → (scope, fingerprint, key_id, wrapped_key, ciphertext)."""
    with sqlite3.connect(database(stack), timeout=10) as db:
        found = db.execute("SELECT namespace, name, secret_key, scope, fingerprint, key_id, "
                           "wrapped_key, ciphertext FROM cm_sealed_keys WHERE cluster=?",
                           (cluster,)).fetchall()
    return {(r[0], r[1], r[2]): r[3:] for r in found}


@pytest.fixture(scope="session")
def escrow_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One stack with escrow on for the package (DEBUG logs: the no-plaintext test reads
    them); each test uses clusters of its own. Session scope: under pytest-xdist a worker may
    leave the package and come back, and would start it again."""
    running = start(tmp_path_factory.mktemp("escrow-on"), escrow=True, log_level="DEBUG")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def root_api(escrow_stack: Stack) -> Api:
    return Api(escrow_stack.manager.url, escrow_stack.admin.auth)


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def bootstrap(stack: Stack, name: str) -> Cluster:
    """A ready cluster whose edge reported a certificate for a new RSA key."""
    cluster = commission(stack, name)
    key = new_key()
    report_edge(stack, cluster, kubeseal_cert=make_cert(key))
    return Cluster(cluster, name, key)


def swap_certificate(stack: Stack, cluster: Cluster, key: Any, **cert: Any) -> None:
    """The edge now reports a certificate for ``key`` (as after new hardware)."""
    report_edge(stack, cluster.uuid, kubeseal_cert=make_cert(key, **cert))
    if isinstance(key, rsa.RSAPrivateKey):
        cluster.key = key


def approve(api: Api, cluster: Cluster, key: Any) -> None:
    """An operator approves ``key``, the new key the edge reports (it is pinned then)."""
    r = api.post(f"/v1/cluster/{cluster.uuid}/sealing-key/approve",
                 json={"fingerprint": fingerprint(key)})
    assert r.status_code == 200, r.text
    assert r.json()["sealingKey"]["fingerprint"] == fingerprint(key)


def fingerprint(key: Any) -> str:
    """``SHA256:<unpadded base64>`` of the public key's SSH wire form, computed here."""
    ssh = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                        serialization.PublicFormat.OpenSSH)
    digest = hashlib.sha256(base64.b64decode(ssh.split()[1])).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def layout(secrets: int, several_every: int, prefix: str = "s") -> list[tuple[str, str, str,
                                                                              list[str]]]:
    """``(namespace, name, scope, keys)`` of ``secrets`` secrets over two namespaces and
    the three scopes; every ``several_every``-th has three keys, the others one."""
    scopes = ("strict", "namespace-wide", "cluster-wide")
    return [(("team-a", "team-b")[i % 2], f"{prefix}{i:02d}", scopes[i % 3],
             ["user", "password", "ca.crt"] if i % several_every == 0 else ["token"])
            for i in range(secrets)]


def secret_url(cluster: str, ns: str, name: str, key: str) -> str:
    return f"/v1/cluster/{cluster}/secret/{ns}/{name}/{key}"


def seal_all(stack: Stack, cluster: str, secrets: list[tuple[str, str, str, list[str]]],
             tag: bytes = b"") -> dict[Place, bytes]:
    """PUT a distinct value for every key (eight at a time); the values by place."""
    values = {(ns, name, key): b"v\x00\xff-" + tag + f"{cluster[:8]}-{ns}/{name}/{key}".encode()
              for ns, name, _, keys in secrets for key in keys}
    scopes = {(ns, name): scope for ns, name, scope, _ in secrets}
    sessions = ThreadSessions(stack.manager.url)

    def put(place: Place) -> int:
        url = secret_url(cluster, *place) + f"?scope={scopes[place[:2]]}"
        return sessions.api.put(url, data=values[place]).status_code

    try:
        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(put, values)) == {204}
    finally:
        sessions.close()
    return values


def repo(stack: Stack, cluster: str) -> Path:
    return stack.repos / f"{cluster}.git"


def head(stack: Stack, cluster: str) -> str:
    return bare(repo(stack, cluster), "rev-parse", "main").strip()


def secret_files(stack: Stack, cluster: str, ref: str = "main") -> dict[str, dict]:
    """Every ``edo/secrets`` file at ``ref``, parsed."""
    paths = bare(repo(stack, cluster), "ls-tree", "-r", "--name-only", ref,
                 "edo/secrets").split()
    return {p: yaml.safe_load(bare(repo(stack, cluster), "show", f"{ref}:{p}")) for p in paths}


def cm_status(api: Api, cluster: str) -> dict[str, Any]:
    r = api.get(f"/v1/cluster/{cluster}/status")
    assert r.status_code == 200, r.text
    return r.json()


def listing(api: Api, cluster: str, query: str = "") -> list[dict[str, Any]]:
    r = api.get(f"/v1/cluster/{cluster}/secret{query}")
    assert r.status_code == 200, r.text
    return r.json()


def sealed_entries(api: Api, cluster: str) -> dict[Place, dict[str, Any]]:
    """The listing's ``sealed`` entries by (namespace, name, key)."""
    return {(s["namespace"], s["name"], e["key"]): e
            for s in listing(api, cluster) for e in s["sealed"]}


def wait_resealed(api: Api, cluster: str, key: Any, timeout: float = 60) -> dict[str, Any]:
    """Wait until the status says every escrowed key is sealed to ``key``; its ``secrets``."""
    want = fingerprint(key)

    def done() -> dict[str, Any] | None:
        secrets = cm_status(api, cluster).get("secrets") or {}
        return secrets if secrets.get("sealedTo") == want and secrets.get("pending") == 0 \
            else None
    return wait_for(done, timeout=timeout, what=f"re-seal of {cluster} to {want}")
