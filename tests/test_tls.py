"""HTTPS for the services: the local CA of ``up --tls``, ``--tls-cert/--tls-key`` checked at
start and reloaded on change, and ``FPLUS_CA_FILE`` for clients."""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from fplus.serving.http.local_ca import ensure_certificates
from harness.servers import free_port


def _served_certificate(port: int, ca: Path) -> x509.Certificate:
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def _sans(cert: x509.Certificate) -> list[str]:
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(getattr(name, "value", name)) for name in names]


def test_local_ca_is_kept_and_the_server_certificate_follows_the_hosts(tmp_path: Path) -> None:
    first = ensure_certificates(tmp_path / "tls", ["10.0.0.5", "127.0.0.1", "localhost"])
    ca_pem, key_pem = first.ca.read_bytes(), first.key.read_bytes()
    again = ensure_certificates(tmp_path / "tls", ["10.0.0.5", "127.0.0.1", "localhost"])
    assert again == first and first.key.read_bytes() == key_pem  # nothing to renew
    moved = ensure_certificates(tmp_path / "tls", ["edge-host.lan", "127.0.0.1"])
    assert moved.ca.read_bytes() == ca_pem  # edges keep trusting the same CA
    cert = x509.load_pem_x509_certificate(moved.cert.read_bytes())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
    assert _sans(cert) == ["edge-host.lan", "127.0.0.1"]
    assert moved.key.read_bytes() != key_pem
    for private in ("ca.key", "server.key"):
        assert (tmp_path / "tls" / private).stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "tls").stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == [
        "ca.crt", "ca.key", "server.crt", "server.key"]  # no temporary files left


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[int, Path, Path]]:
    """A Config Store serving HTTPS from a copy of a local CA's pair: (port, ca, tls dir)."""
    made = ensure_certificates(tmp_path / "ca", ["127.0.0.1"])
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(made.cert, served / "tls.crt")
    shutil.copy(made.key, served / "tls.key")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fplus.config_store.cli", "serve",
         "--data-dir", str(tmp_path / "cs"),
         "--port", str(port), "--tls-cert", str(served / "tls.crt"),
         "--tls-key", str(served / "tls.key")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            _served_certificate(port, made.ca)
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.1)
    try:
        yield port, made.ca, served
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def _until(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not reloaded in time"
        time.sleep(0.2)


def test_a_renewed_certificate_is_served_without_a_restart(
        tmp_path: Path, store: tuple[int, Path, Path]) -> None:
    port, ca, served = store
    before = _served_certificate(port, ca)
    renewed = ensure_certificates(tmp_path / "ca", ["127.0.0.1", "renewed.example"])
    # a broken renewal (half-written key) keeps the previous pair in use
    (served / "tls.key").write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n")
    time.sleep(1.5)
    assert _served_certificate(port, ca).serial_number == before.serial_number
    shutil.copy(renewed.cert, served / "tls.crt")
    shutil.copy(renewed.key, served / "tls.key")
    _until(lambda: _served_certificate(port, ca).serial_number != before.serial_number)
    assert "renewed.example" in _sans(_served_certificate(port, ca))


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    made = ensure_certificates(tmp_path / "ca", ["127.0.0.1"])
    return made.cert, made.key


@pytest.mark.parametrize("case", ["missing-cert", "unreadable-key", "mismatched", "cert-only",
                                  "not-pem"])
def test_an_unusable_pair_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    cert, key = _pair(tmp_path)
    other = ensure_certificates(tmp_path / "other", ["127.0.0.1"]).key
    junk = tmp_path / "junk.pem"
    junk.write_text("hello\n")
    args, named = {
        "missing-cert": (["--tls-cert", str(tmp_path / "nope.crt"), "--tls-key", str(key)],
                         "nope.crt"),
        "unreadable-key": (["--tls-cert", str(cert), "--tls-key", str(tmp_path)], str(tmp_path)),
        "mismatched": (["--tls-cert", str(cert), "--tls-key", str(other)], str(other)),
        "cert-only": (["--tls-cert", str(cert)], "--tls-key"),
        "not-pem": (["--tls-cert", str(junk), "--tls-key", str(key)], "junk.pem"),
    }[case]
    done = subprocess.run([sys.executable, "-m", "fplus.config_store.cli", "serve", "--data-dir",
                           str(tmp_path / "cs"), "--port", str(free_port()), *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("config-store: ") and named in line
    assert not (tmp_path / "cs").exists()  # nothing written


def test_an_unusable_ca_bundle_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate\n")
    for bundle, says in ((junk, "holds no PEM certificate"), (tmp_path / "gone.pem", "gone.pem")):
        done = subprocess.run(
            [sys.executable, "-m", "fplus.git_server.cli", "seed",
             "--data-dir", str(tmp_path / "g"),
             "--config-store", "https://127.0.0.1:1"],
            env={"PATH": "/usr/bin:/bin", "FPLUS_CA_FILE": str(bundle),
                 "FPLUS_USER": "admin", "FPLUS_PASSWORD": "x"},
            capture_output=True, text=True, timeout=60)
        assert done.returncode == 1
        [line] = done.stderr.strip().splitlines()
        assert line.startswith("git-server: FPLUS_CA_FILE ") and says in line
