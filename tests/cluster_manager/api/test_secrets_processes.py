"""``cluster-manager serve --processes 2``: two worker processes on one port seal into one
repo at once (each its own group commit, the branch moved by compare-and-swap), and one of
them reconciles."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager import sealing
from harness.certs import make_cert
from harness.gitcli import bare, fsck_clean
from harness.servers import Api, ThreadSessions
from harness.stack import Stack, start_stack, wait_for
from tests.cluster_manager.api.conftest import commission, report_edge

SECRETS, KEYS = 4, 160


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(tmp_path_factory.mktemp("two-processes"),
                          manager_extra=("--processes", "2"))
    yield running
    running.stop()


def _ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _workers(stack: Stack) -> list[int]:
    """The Cluster Manager's worker processes (children of its gunicorn master)."""
    assert stack.manager.proc is not None
    master = stack.manager.proc.pid
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            found.append(int(stat.parent.name))
    return sorted(found)


def test_two_processes_seal_into_one_repo_and_lose_nothing(stack: Stack) -> None:
    # the stack is up once one worker answers; gunicorn may fork the second just after
    workers: list[int] = wait_for(lambda: [w for w in [_workers(stack)] if len(w) == 2],
                                  what="two worker processes")[0]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cluster = commission(stack, "two-processes")  # reconciled: one worker leads
    report_edge(stack, cluster, kubeseal_cert=make_cert(key))
    repo = stack.repos / f"{cluster}.git"
    base = bare(repo, "rev-parse", "main").strip()
    busy = {pid: _ticks(pid) for pid in workers}
    sessions = ThreadSessions(stack.manager.url)

    def put(i: int) -> int:
        url = f"/v1/cluster/{cluster}/secret/app/s-{i % SECRETS}/k-{i:03d}"
        return sessions.api.put(url, data=f"v{i}".encode()).status_code

    try:
        with ThreadPoolExecutor(16) as pool:
            assert set(pool.map(put, range(KEYS))) == {204}
    finally:
        sessions.close()

    assert all(_ticks(pid) > busy[pid] for pid in workers), "a worker served no request"
    lines = bare(repo, "rev-list", "--parents", f"{base}..main").splitlines()
    assert lines and all(len(line.split()) == 2 for line in lines), "not a linear history"
    found = {}
    for s in range(SECRETS):
        doc = yaml.safe_load(bare(repo, "show", f"main:edo/secrets/app/s-{s}.yaml"))
        for k, ciphertext in doc["spec"]["encryptedData"].items():
            found[k] = sealing.decrypt_value(key, ciphertext, "strict", "app", f"s-{s}")
    assert found == {f"k-{i:03d}": f"v{i}".encode() for i in range(KEYS)}
    fsck_clean(repo)


def test_one_process_leads(stack: Stack) -> None:
    """Election off (the data dir's own SQLite file): slot 0's worker always leads, the
    other serves as a standby, never both."""
    seen: dict[str, str] = {}
    for _ in range(40):
        with Api(stack.manager.url) as api:
            body = api.get("/healthz", headers={"Connection": "close"}).json()
        seen[body["identity"]] = body["role"]
    assert list(seen.values()).count("leader") <= 1, seen
    leaders = [i for i, role in seen.items() if role == "leader"]
    standbys = [i for i, role in seen.items() if role == "standby"]
    assert all(s.startswith(f"{leaders[0]}-") for s in standbys) if leaders else standbys
