"""``cluster-manager escrow init|rotate`` and ``serve --secret-escrow``; certificates that
cannot be sealed to re-seal nothing."""

from __future__ import annotations

import json
import shutil
import stat
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from fplus.cluster_manager.escrow import Envelope, keyring, place, unwrap
from harness.servers import Api, free_port, run_command, taken_port
from harness.stack import Stack
from tests.cluster_manager.escrow.conftest import (
    INTERVAL,
    approve,
    bootstrap,
    cm_status,
    database,
    fingerprint,
    head,
    keyfile_of,
    layout,
    new_key,
    rows,
    seal_all,
    sealed_entries,
    secret_files,
    start,
    swap_certificate,
    wait_resealed,
)
from tests.cluster_manager.escrow.unseal import unseal_file

CLI = "fplus.cluster_manager.cli"


def cli(*args: str | Path) -> tuple[int, str, str]:
    done = run_command(CLI, *map(str, args), timeout=30)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def rotating_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own: its Cluster Manager is stopped and started again."""
    running = start(tmp_path_factory.mktemp("escrow-rotate"), escrow=True)
    yield running
    running.stop()


def test_init_makes_an_owner_only_key_file_and_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "new" / "escrow.key"
    code, out, err = cli("escrow", "init", path)
    assert code == 0, err
    assert str(path) in out and len(out.strip().splitlines()) == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ring = keyring.load(path)
    assert list(ring.keys) == [ring.current] and len(ring.keys[ring.current]) == 32
    before = path.read_bytes()
    code, out, err = cli("escrow", "init", path)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "exists" in err and str(path) in err
    assert path.read_bytes() == before


def bad_files(tmp_path: Path) -> list[tuple[Path, str]]:
    good = tmp_path / "good.key"
    keyring.save(good, keyring.generate(), replace=False)
    loose = tmp_path / "loose.key"
    shutil.copy(good, loose)
    loose.chmod(0o644)
    short = tmp_path / "short.key"
    short.write_text(json.dumps({"version": 1, "current": "k", "keys": {"k": "AAAA"}}))
    short.chmod(0o600)
    text = tmp_path / "text.key"
    text.write_text("hello")
    text.chmod(0o600)
    return [(loose, "chmod 600"), (short, "256 bits"), (text, "escrow init"),
            (tmp_path / "missing.key", "No such file")]


def test_serve_with_an_unusable_key_file_stops_with_one_line(tmp_path: Path) -> None:
    with taken_port() as closed:
        pass  # a port nothing listens on: the Config Store must not be needed to refuse
    for path, words in bad_files(tmp_path):
        port = free_port()
        started = time.monotonic()
        code, out, err = cli("serve", "--data-dir", tmp_path / "cm", "--host", "127.0.0.1",
                             "--port", str(port), "--config-store",
                             f"http://127.0.0.1:{closed}", "--secret-escrow", path)
        assert code != 0, (path, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (path, err)
        assert str(path) in lines[0] and words in lines[0], lines
        assert "listening" not in out and time.monotonic() - started < 20


def test_rotate_rewraps_and_a_later_swap_still_reseals(rotating_stack: Stack) -> None:
    stack = rotating_stack
    api = Api(stack.manager.url, stack.admin.auth)
    cluster = bootstrap(stack, "rotate-edge")
    values = seal_all(stack, cluster.uuid, layout(6, several_every=3))
    path = keyfile_of(stack.root)
    first = keyring.load(path).current
    before = rows(stack, cluster.uuid)
    assert {r[2] for r in before.values()} == {first}

    stack.manager.stop()  # replicas load the key file at start (README: restart them)
    code, out, err = cli("escrow", "rotate", path, "--data-dir", stack.root / "cm")
    assert code == 0, err
    ring = keyring.load(path)
    assert ring.current != first and list(ring.keys) == [ring.current]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"{len(values)} data keys re-wrapped" in out and "1 old key" in out
    after = rows(stack, cluster.uuid)
    assert set(after) == set(before)
    for where, (scope, fp, key_id, wrapped, ciphertext) in after.items():
        assert key_id == ring.current and wrapped != before[where][3]
        assert (scope, fp, ciphertext) == (before[where][0], before[where][1],
                                          before[where][4])
    code, out, err = cli("escrow", "rotate", path, "--data-dir", stack.root / "cm")
    assert code == 0 and f"{len(values)} data keys re-wrapped" in out  # and once more
    ring = keyring.load(path)
    stack.manager.start()

    key = new_key()
    swap_certificate(stack, cluster, key)
    approve(api, cluster, key)  # a changed key is pinned once approved
    wait_resealed(api, cluster.uuid, key)
    found = {}
    for doc in secret_files(stack, cluster.uuid).values():
        for k, value in unseal_file(key, doc).items():
            found[(doc["metadata"]["namespace"], doc["metadata"]["name"], k)] = value
    assert found == values
    assert {r[2] for r in rows(stack, cluster.uuid).values()} == {ring.current}


def test_rotate_against_the_wrong_database_keeps_the_rows_usable(rotating_stack: Stack,
                                                                tmp_path: Path) -> None:
    cluster = bootstrap(rotating_stack, "wrong-db-edge")
    values = seal_all(rotating_stack, cluster.uuid, layout(1, several_every=1), tag=b"typo")
    copy = tmp_path / "escrow.key"  # a copy: the stack's own file stays as it is
    shutil.copy(keyfile_of(rotating_stack.root), copy)
    code, _, err = cli("escrow", "rotate", copy, "--data-dir", tmp_path / "typo")
    ring = keyring.load(copy)
    if code == 0:  # a rotation that succeeds must leave every real row usable
        for (ns, name, key), (_, _, key_id, wrapped, ciphertext) in rows(
                rotating_stack, cluster.uuid).items():
            assert unwrap(ring, Envelope(key_id, wrapped, ciphertext),
                          place(cluster.uuid, ns, name, key)) == values[(ns, name, key)]
    else:
        assert len(err.strip().splitlines()) == 1, err


def test_unusable_certificates_reseal_nothing(escrow_stack: Stack, root_api: Api) -> None:
    cluster = bootstrap(escrow_stack, "bad-cert-edge")
    old = cluster.key
    values = seal_all(escrow_stack, cluster.uuid, layout(3, several_every=2), tag=b"cert")
    before = head(escrow_stack, cluster.uuid)
    past = datetime.now(UTC) - timedelta(days=400)
    for key, cert, words in [
            (ec.generate_private_key(ec.SECP256R1()), {}, "EC"),
            (ed25519.Ed25519PrivateKey.generate(), {}, "RSA"),
            (new_key(), {"not_before": past, "not_after": past + timedelta(days=30)},
             "expired")]:
        swap_certificate(escrow_stack, cluster, key, **cert)
        time.sleep(5 * INTERVAL)
        secrets = cm_status(root_api, cluster.uuid)["secrets"]
        assert words in secrets.get("error", ""), secrets
        assert secrets["error"].startswith("no re-seal")
        assert head(escrow_stack, cluster.uuid) == before
        assert {e["certFingerprint"] for e in sealed_entries(root_api, cluster.uuid).values()} \
            == {fingerprint(old)}
    good = new_key()
    swap_certificate(escrow_stack, cluster, good)  # a usable one again, once approved
    approve(root_api, cluster, good)
    assert "error" not in wait_resealed(root_api, cluster.uuid, good)
    assert head(escrow_stack, cluster.uuid) != before
    found = {(d["metadata"]["namespace"], d["metadata"]["name"], k): v
             for d in secret_files(escrow_stack, cluster.uuid).values()
             for k, v in unseal_file(good, d).items()}
    assert found == values


def test_escrowed_rows_open_only_with_the_stack_key(escrow_stack: Stack) -> None:
    """The rows the Cluster Manager wrote open with its key file at their own place."""
    cluster = bootstrap(escrow_stack, "rows-edge")
    values = seal_all(escrow_stack, cluster.uuid, layout(2, several_every=1), tag=b"rows")
    ring = keyring.load(keyfile_of(escrow_stack.root))
    for (ns, name, key), (_, _, key_id, wrapped, ciphertext) in rows(
            escrow_stack, cluster.uuid).items():
        sealed = Envelope(key_id, wrapped, ciphertext)
        assert unwrap(ring, sealed, place(cluster.uuid, ns, name, key)) == values[(ns, name, key)]
    assert database(escrow_stack).stat().st_mode & 0o077 == 0
