"""The sealing certificate: only an RSA certificate of 2,048 bits or more inside its validity
period is accepted."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cryptography", reason="fplus.cluster_manager.sealing needs `cryptography`")

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from fplus.cluster_manager.sealing import (
    CertificateError,
    SealingError,
    load_certificate,
    public_key_fingerprint,
)
from fplus.cluster_manager.sealing.cert import MIN_KEY_BITS, NOT_BEFORE_LEEWAY
from harness.certs import NOW, make_cert, weak_rsa_key


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def test_valid_rsa_certificate_gives_its_public_key(rsa_key: rsa.RSAPrivateKey) -> None:
    pem = make_cert(rsa_key)
    for text in (pem, pem.encode(), bytearray(pem.encode())):
        key = load_certificate(text)
        assert isinstance(key, rsa.RSAPublicKey)
        assert key.public_numbers() == rsa_key.public_key().public_numbers()


def test_other_pem_blocks_and_crlf_are_tolerated(rsa_key: rsa.RSAPrivateKey) -> None:
    key_pem = rsa_key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption()).decode()
    bundle = "Bag Attributes: none\n" + key_pem + make_cert(rsa_key).replace("\n", "\r\n")
    assert load_certificate(bundle).public_numbers() == rsa_key.public_key().public_numbers()


def test_only_the_first_certificate_counts(rsa_key: rsa.RSAPrivateKey) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_pem = make_cert(ec.generate_private_key(ec.SECP256R1()))
    chain = make_cert(rsa_key) + make_cert(other) + ec_pem
    assert load_certificate(chain).public_numbers() == rsa_key.public_key().public_numbers()
    with pytest.raises(CertificateError, match="EC"):
        load_certificate(ec_pem + make_cert(rsa_key))


def _expired(key: Any) -> str:
    return make_cert(key, NOW - timedelta(days=400), NOW - timedelta(days=1))


def _future(key: Any) -> str:
    return make_cert(key, NOW + timedelta(days=1))


BAD: list[tuple[str, Callable[[rsa.RSAPrivateKey], Any], list[str]]] = [
    ("expired", _expired, ["expired on", "current sealed-secrets certificate"]),
    ("not yet valid", _future, ["not valid yet", "valid from"]),
    ("EC key", lambda _: make_cert(ec.generate_private_key(ec.SECP256R1())),
     ["EC (secp256r1) key", "must have an RSA key"]),
    ("Ed25519 key", lambda _: make_cert(ed25519.Ed25519PrivateKey.generate()),
     ["Ed25519 key", "RSA"]),
    ("garbage", lambda _: "hello, I am not a certificate", ["not a PEM certificate"]),
    ("empty", lambda _: "", ["empty"]),
    ("blank", lambda _: b"  \n", ["empty"]),
    ("private key, no cert", lambda k: k.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()), ["not a PEM certificate"]),
    ("corrupt body", lambda _: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
     ["not a valid PEM X.509 certificate"]),
    ("truncated", lambda k: make_cert(k)[:300], ["not a valid PEM X.509 certificate"]),
    ("non-ASCII text", lambda _: "-----BEGIN CERTIFICATE-----\nä\n", ["non-ASCII"]),
    ("not text", lambda _: 42, ["must be PEM text"]),
    ("None", lambda _: None, ["must be PEM text"]),
]


@pytest.mark.parametrize(("case", "make", "words"), BAD, ids=[c[0] for c in BAD])
def test_unusable_certificates_are_refused_with_a_reason(
        rsa_key: rsa.RSAPrivateKey, case: str, make: Callable[[rsa.RSAPrivateKey], Any],
        words: list[str]) -> None:
    with pytest.raises(CertificateError) as caught:
        load_certificate(make(rsa_key))
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert "BEGIN" not in message.replace("-----BEGIN CERTIFICATE-----", "")  # no material
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, SealingError)


@pytest.mark.parametrize("bits", [512, 1024, 2047])
def test_rsa_keys_under_2048_bits_are_refused(bits: int) -> None:
    small = weak_rsa_key(bits)
    with pytest.raises(CertificateError, match=f"a {bits}-bit RSA key; at least 2048 bits"):
        load_certificate(make_cert(small))
    assert MIN_KEY_BITS == 2048
    assert load_certificate(make_cert(small), min_bits=bits).key_size == bits  # the setting


def test_validity_is_checked_at_now(rsa_key: rsa.RSAPrivateKey) -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    pem = make_cert(rsa_key, start, start + timedelta(days=30))
    with pytest.raises(CertificateError, match="not valid yet"):
        load_certificate(pem)  # today is before 2030
    assert load_certificate(pem, now=start + timedelta(days=1))
    assert load_certificate(pem, now=datetime(2030, 1, 2))  # naive means UTC
    assert load_certificate(pem, now=start + timedelta(days=30))  # the last second still counts
    with pytest.raises(CertificateError, match="expired on 2030-01-31T00:00:00Z"):
        load_certificate(pem, now=start + timedelta(days=30, seconds=1))


def test_small_clock_skew_is_tolerated_for_not_before(rsa_key: rsa.RSAPrivateKey) -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    pem = make_cert(rsa_key, start)
    assert load_certificate(pem, now=start - NOT_BEFORE_LEEWAY)
    with pytest.raises(CertificateError, match="not valid yet"):
        load_certificate(pem, now=start - NOT_BEFORE_LEEWAY - timedelta(seconds=1))


def test_openssl_generated_certificate_loads(tmp_path: Path) -> None:
    key, cert = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "3650", "-subj", "/CN=sealed-secret"],
                   check=True, capture_output=True)
    assert load_certificate(cert.read_text()).key_size == 2048


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
def test_fingerprint_matches_ssh_keygen(rsa_key: rsa.RSAPrivateKey, tmp_path: Path) -> None:
    public = rsa_key.public_key()
    path = tmp_path / "key.pub"
    path.write_bytes(public.public_bytes(serialization.Encoding.OpenSSH,
                                         serialization.PublicFormat.OpenSSH))
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(path)], check=True,
                         capture_output=True, text=True).stdout
    assert out.split()[1] == public_key_fingerprint(public)
