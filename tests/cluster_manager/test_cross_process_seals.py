"""Seals committed by two processes to one repo (as ``cluster-manager serve --processes 2``
does, or two replicas): real processes, a real bare repo, checked with the real git CLI.

Each process seals a key into one SealedSecret file with the read-modify-write edit the
secret service uses, through its own :class:`~fplus.git.repo.RepoWriter` (its own group
commit). The writers take turns (:mod:`fplus.git.bare.turns`), and the branch moves only by
compare-and-swap: a process that built its commit on a head another writer has since moved
(one that did not wait for its turn) loses the swap and rebuilds on the new head, so no
seal is lost and the history stays linear.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from fplus.cluster_manager import sealing
from fplus.git.repo import ChangeSet, RepoWriter
from harness.gitcli import bare, fsck_clean

NAMESPACE, NAME = "app", "shared"
PATH = f"edo/secrets/{NAMESPACE}/{NAME}.yaml"
SEALER = textwrap.dedent("""
    import json, sys, threading, time
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path
    from cryptography.hazmat.primitives import serialization
    from fplus.cluster_manager import sealing
    from fplus.cluster_manager.services.secrets.documents import SecretDocuments
    from fplus.git.repo import ChangeSet, RepoWriter

    repo, pem, me, count, threads, hold, start_at, turn_timeout = sys.argv[1:9]
    public = serialization.load_pem_public_key(Path(pem).read_bytes())
    documents = SecretDocuments()
    writer = RepoWriter(Path(repo))
    writer.turns.timeout = float(turn_timeout)
    attempts = []
    publish = writer._publish

    def held_publish(built):
        # "hold": after building its first commit, wait until told to publish it
        if hold != "-" and not attempts:
            Path(hold, "built").write_text(built.parent)
            while not Path(hold, "go").exists():
                time.sleep(0.01)
        attempts.append(built.parent)
        return publish(built)

    writer._publish = held_publish

    def seal(n):
        key = f"{me}-{n:03d}"
        ciphertext = sealing.encrypt_value(public, key.encode(), "strict", "app", "shared")

        def edit(old):
            doc = sealing.merge_key(documents.parse(old), "app", "shared", key, ciphertext,
                                    "strict")
            return documents.render(doc)

        result = writer.apply(ChangeSet(edits={"edo/secrets/app/shared.yaml": edit}), key)
        return {"key": key, "commit": result.commit}

    while time.time() < float(start_at):
        time.sleep(0.001)
    with ThreadPoolExecutor(int(threads)) as pool:
        sealed = list(pool.map(seal, range(int(count))))
    print(json.dumps({"sealed": sealed, "attempts": len(attempts),
                      "waited": writer.turns.waited}))
""")


@pytest.fixture
def public_pem(tmp_path: Path) -> tuple[rsa.RSAPrivateKey, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "cert.pem"
    pem.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, pem


def _sealer(repo: Path, pem: Path, me: str, count: int = 1, threads: int = 1,
            hold: Path | None = None, start_at: float = 0.0,
            turn_timeout: float = 30.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SEALER, str(repo), str(pem), me, str(count), str(threads),
         str(hold) if hold is not None else "-", str(start_at), str(turn_timeout)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _report(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)


def _doc(repo: Path) -> dict:
    return yaml.safe_load(bare(repo, "show", f"main:{PATH}"))


def _linear_history(repo: Path, base: str) -> list[str]:
    """The commits after ``base``, oldest first; fails on a merge."""
    lines = bare(repo, "rev-list", "--parents", "--reverse", f"{base}..main").splitlines()
    assert all(len(line.split()) == 2 for line in lines), "a merge in the history"
    return [line.split()[0] for line in lines]


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_lost_swap_is_rebuilt_on_the_other_process_seal(
        tmp_path: Path, public_pem: tuple[rsa.RSAPrivateKey, Path]) -> None:
    """A builds its commit on the head and holds its turn; B waits for the turn, gives up
    after its timeout and commits without it; A's compare-and-swap then fails and A rebuilds
    on B's commit: both keys are in the file, A's commit is B's child."""
    key, pem = public_pem
    repo = tmp_path / "r.git"
    base = RepoWriter(repo).apply(ChangeSet(writes={"README.md": "r\n"}), "base").commit
    hold = tmp_path / "hold"
    hold.mkdir()
    a = _sealer(repo, pem, "a", hold=hold)
    _wait_for(hold / "built")
    assert (hold / "built").read_text() == base  # A built on the base, not yet swapped
    b = _report(_sealer(repo, pem, "b", turn_timeout=0.3))
    (hold / "go").touch()
    a_done = _report(a)

    assert b["waited"] == 1, "B should have found A's turn taken"
    assert a_done["attempts"] == 2, "A's first swap should have lost to B's commit"
    [b_commit] = [s["commit"] for s in b["sealed"]]
    [a_commit] = [s["commit"] for s in a_done["sealed"]]
    assert _linear_history(repo, base) == [b_commit, a_commit]
    assert bare(repo, "rev-parse", "main").strip() == a_commit
    doc = _doc(repo)
    assert sorted(doc["spec"]["encryptedData"]) == ["a-000", "b-000"]
    for k in ("a-000", "b-000"):
        assert sealing.decrypt_value(key, doc["spec"]["encryptedData"][k], "strict",
                                     NAMESPACE, NAME) == k.encode()
    fsck_clean(repo)


def test_two_processes_sealing_at_once_lose_no_seal(
        tmp_path: Path, public_pem: tuple[rsa.RSAPrivateKey, Path]) -> None:
    """Two processes of 4 threads each seal 40 keys into one file at the same moment: every
    key is in the file, every reported commit is in the linear history, and the history
    holds nothing else."""
    key, pem = public_pem
    repo = tmp_path / "r.git"
    base = RepoWriter(repo).apply(ChangeSet(writes={"README.md": "r\n"}), "base").commit
    start_at = time.time() + 2  # both start together, after their imports
    procs = [_sealer(repo, pem, me, count=40, threads=4, start_at=start_at)
             for me in ("p", "q")]
    reports = [_report(p) for p in procs]

    sealed = [s for r in reports for s in r["sealed"]]
    history = _linear_history(repo, base)
    assert {s["commit"] for s in sealed} == set(history)
    doc = _doc(repo)
    assert sorted(doc["spec"]["encryptedData"]) == sorted(s["key"] for s in sealed)
    assert len(sealed) == 80
    for s in sealed[::7]:
        assert sealing.decrypt_value(key, doc["spec"]["encryptedData"][s["key"]], "strict",
                                     NAMESPACE, NAME) == s["key"].encode()
    # taking turns, neither ever built on a head the other then moved: no swap was lost
    assert sum(r["attempts"] for r in reports) == len(history)
    fsck_clean(repo)
